"""The one home of what ``gs`` writes to a terminal: colour, the pager, rich consoles.

git's conventions: colour only when the stream is a terminal, off with
``NO_COLOR`` (no-color.org: set and not empty), ``TERM=dumb`` or ``--no-color``, never in
JSON; long output through a pager (``$GS_PAGER``, else ``$PAGER``, else ``less -FRX``, as
git's ``GIT_PAGER``/``PAGER``/``less`` with ``LESS=FRX``), only when stdout is a terminal,
off with ``--no-pager`` or a pager of ``cat`` or nothing.

Cheap to import: rich is imported by :func:`console` only, on the paths that render
(the chat imports this module before its first prompt).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console

#: The pager when neither ``$GS_PAGER`` nor ``$PAGER`` names one (git's: less, with LESS=FRX).
DEFAULT_PAGER = "less -FRX"

#: SGR parameters of the few styles tables use (git's colours: a commit id is yellow).
_SGR = {"bold": "1", "dim": "2", "italic": "3", "red": "31", "green": "32", "yellow": "33", "blue": "34",
        "magenta": "35", "cyan": "36"}


class Output:
    """How this run writes to the terminal: the global ``--no-color`` and ``--no-pager``.

    (A plain class: a dataclass costs the chat milliseconds before its first prompt.)

    Attributes:
        no_color: ``--no-color`` was given (``NO_COLOR`` is read by :meth:`color`).
        no_pager: ``--no-pager`` was given.
    """

    __slots__ = ("no_color", "no_pager")

    def __init__(self, no_color: bool = False, no_pager: bool = False):
        self.no_color = no_color
        self.no_pager = no_pager

    def color(self, stream: TextIO | None = None) -> bool:
        """True when colour (any escape sequence for style) may be written to ``stream`` (default stdout).

        Only on a terminal (git's ``color.ui=auto``), and not with ``--no-color``, a non-empty
        ``NO_COLOR`` (no-color.org) or a dumb terminal (``TERM=dumb`` or ``unknown``, any case:
        :func:`.early.dumb_terminal`, the rule the prompt follows).
        """
        from .early import dumb_terminal

        stream = sys.stdout if stream is None else stream
        if self.no_color or os.environ.get("NO_COLOR") or dumb_terminal(os.environ):
            return False
        return is_terminal(stream)

    def console(self, stream: TextIO | None = None) -> Console:
        """A rich console writing to ``stream`` (default stdout), styled only when :meth:`color` allows."""
        stream = sys.stdout if stream is None else stream
        return make_console(stream, color=self.color(stream))

    def pager(self) -> list[str] | None:
        """The pager's command line, or None when output is not paged.

        None unless stdout is a terminal; with ``--no-pager``; and when the pager is empty or
        ``cat`` (git's rule). ``$GS_PAGER`` wins over ``$PAGER``, else :data:`DEFAULT_PAGER`.
        """
        if self.no_pager or not is_terminal(sys.stdout):
            return None
        command = os.environ.get("GS_PAGER")
        if command is None:
            command = os.environ.get("PAGER")
        if command is None:
            command = DEFAULT_PAGER
        import shlex  # here: the chat imports this module before its first prompt

        try:
            words = shlex.split(command)
        except ValueError:
            words = command.split()
        if not words or words == ["cat"]:
            return None
        return words

    def paged(self, chunks: Iterable[str]) -> None:
        """Write ``chunks`` (text, each ending in a newline) to stdout, through the pager when it is long.

        Output that fits on the screen is written as it is (the pager is not started, as
        ``less -F`` would quit at once anyway); longer output goes to :meth:`pager` with
        ``LESS=FRX`` and ``LV=-c`` set unless already set (git's defaults). A pager the user
        quits early is no error; one that cannot be started is one warning on stderr and
        the text is written as it is. Ctrl+C while the pager runs is the pager's.

        Args:
            chunks: the text, in pieces (written as they come once the pager runs).
        """
        command = self.pager()
        if command is None:
            _write_all(chunks)
            return
        import shutil

        size = shutil.get_terminal_size()
        head, rest, long = _first_screen(iter(chunks), size.lines - 1, size.columns)
        if not long:
            _write_all(head)
            return
        if shutil.which(command[0]) is None:
            print(f"gs: warning: the pager {command[0]!r} was not found; set GS_PAGER (or --no-pager)",
                  file=sys.stderr, flush=True)
            _write_all(head)
            _write_all(rest)
            return
        _through_pager(command, head, rest)


def is_terminal(stream: TextIO) -> bool:
    """True when ``stream`` is a terminal (False for a closed stream or one with no ``isatty``)."""
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def make_console(stream: TextIO, *, color: bool, width: int | None = None) -> Console:
    """A rich console on ``stream``: terminal escapes only when ``color``; no markup, no guessing.

    Text is never read as rich markup, nor highlighted or given emoji: what a model wrote
    shows as it wrote it (markdown aside).
    """
    from rich.console import Console

    return Console(file=stream, force_terminal=color, no_color=not color, color_system="auto" if color else None,
                   markup=False, highlight=False, emoji=False, width=width, soft_wrap=False)


def _first_screen(chunks: Iterator[str], rows: int, columns: int) -> tuple[list[str], Iterator[str], bool]:
    """Read ``chunks`` until they fill more than ``rows`` screen rows: ``(read, the rest, more than a screen)``."""
    import re

    ansi = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
    head: list[str] = []
    used = 0
    for chunk in chunks:
        head.append(chunk)
        for line in chunk.split("\n")[:-1] if chunk.endswith("\n") else chunk.split("\n"):
            used += 1 + max(0, len(ansi.sub("", line)) - 1) // max(1, columns)
        if used > rows:
            return head, chunks, True
    return head, chunks, False


def _write_all(chunks: Iterable[str]) -> None:
    for chunk in chunks:
        sys.stdout.write(chunk)
    sys.stdout.flush()


def _through_pager(command: list[str], head: list[str], rest: Iterator[str]) -> None:
    """Run ``command`` and write ``head`` then ``rest`` into it; wait for it to end."""
    import contextlib
    import signal
    import subprocess

    env = dict(os.environ)
    env.setdefault("LESS", "FRX")
    env.setdefault("LV", "-c")
    sys.stdout.flush()
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl+C is the pager's (less stops a search)
    try:
        proc = subprocess.Popen(command, stdin=subprocess.PIPE, env=env, encoding="utf-8", errors="replace")
        assert proc.stdin is not None
        try:
            for chunk in head:
                proc.stdin.write(chunk)
            for chunk in rest:
                proc.stdin.write(chunk)
            proc.stdin.close()
        except OSError:  # BrokenPipeError: the user quit the pager before the end, not an error
            with contextlib.suppress(OSError):
                proc.stdin.close()
        proc.wait()
    finally:
        signal.signal(signal.SIGINT, old)


class Rendered(str):
    """Text already terminal-safe and styled (rendered by rich): :func:`styled` writes it as it is."""


def styled(lines: Iterable[str | Sequence[tuple[str, str]]], out: Output, stream: TextIO | None = None
           ) -> Iterator[str]:
    """Yield each of ``lines`` ended by a newline, control characters shown, styled when colour is on.

    The text of every part is made safe first (:func:`gitsessions.cli.display.render.terminal_safe`:
    what a model or a file wrote cannot drive the terminal), then painted: the escapes in
    the output are ours alone.

    Args:
        lines: a line is a string (unstyled), or ``(text, styles)`` parts, ``styles`` space-separated
            names of :data:`_SGR` ("" for none), or :class:`Rendered` text (its newlines its own).
        out: the run's output settings.
        stream: where it goes (default stdout): colour only when it is a terminal.
    """
    from .render import terminal_safe

    color = out.color(stream)
    for line in lines:
        if isinstance(line, Rendered):
            yield line
            continue
        if isinstance(line, str):
            yield terminal_safe(line) + "\n"
            continue
        yield "".join(_sgr(terminal_safe(text), style.split()) if color and style else terminal_safe(text)
                      for text, style in line) + "\n"


def _sgr(text: str, styles: Sequence[str]) -> str:
    return f"\x1b[{';'.join(_SGR[s] for s in styles)}m{text}\x1b[0m"
