"""A reply on the screen while it streams: as plain text, or as markdown rendered with rich.

Rendered, a reply is cut into markdown's top-level blocks (a paragraph,
a list, a table, a fenced code block). A block is printed once, rendered, when the next
block has begun on a line of its own, and never redrawn: the screen only grows, so nothing
flickers and nothing scrolled away is lost. The block still being written is drawn in a
small live region under them (its last screen-full when taller), redrawn as text comes and
replaced by the block itself when it is done. Only what is shown is rendered: the text
stored is the model's, exactly (the loop journals it before it reaches here).

Tool calls and their results are one dimmed line each. Until the first token, the live
region holds a dim ``…``.

rich (and pygments, for code) is imported by :class:`RenderedReply` only: the chat builds
one for its first reply, after its first prompt is drawn. rich's markdown (~0.15 s to
import) is loaded behind the chat (:mod:`.markdown`): the chat's replies are drawn as
plain text until it is, so the first token waits for nothing but the model.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from ...text import clip, fold
from .markdown import loading, markdown, parser
from .render import terminal_safe

if TYPE_CHECKING:
    from rich.console import Console, ConsoleOptions, RenderResult

    from .output import Output

#: Longest tool argument / result shown on a tool's line, characters.
TOOL_CHARS = 120
#: Shortest time between two redraws of the block being written, seconds: rendering it for
#: every token would fall behind a fast model (a 50-line code block streamed in 4-character
#: chunks took 7 s of highlighting); its text is kept, and printed whole when the block is
#: done. A redraw that took long waits REDRAW_FACTOR times as long before the next (at most
#: REDRAW_MAX_S, and not after the first, which loads rich and pygments), so drawing stays a
#: small share of the time however large the block grows.
REDRAW_S = 0.05
REDRAW_FACTOR = 4
REDRAW_MAX_S = 0.5
#: The block being written is parsed again (O(its size)) once it gained this share of the
#: lines it had (and at least one): a long list or table costs linear time in all, and its
#: end is seen within an eighth of its length.
PARSE_SHARE = 8
#: What text must not hold to look the same plain as rendered: markdown's syntax, a line's
#: start that may open a block, a newline (a soft break: rendered as a space).
_MARKUP = re.compile(r"[\n\\`*_\[\]#>|~<&!]|^[\s\-+=\d]")
#: A fenced code block's opening line (CommonMark: up to 3 spaces, 3+ backticks or tildes).
_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})[^\n]*\n")


class ReplyView:
    """What shows one turn's reply as it streams (:meth:`gitsessions.cli.repl.repl.Repl.turn`).

    (A plain base class, not a ``typing.Protocol``: that costs the chat time before its prompt.)
    """

    def text(self, chunk: str) -> None:
        """Show the next piece of the reply's text."""
        raise NotImplementedError

    def tool(self, name: str, arguments: str, result: str, is_error: bool) -> None:
        """Show a tool call that ran and its result."""
        raise NotImplementedError

    def end(self) -> bool:
        """Finish the reply; True when it left a line of its own (the next text starts a line)."""
        raise NotImplementedError

    def pause(self) -> None:
        """Show what there is and leave the screen below it free: a question is asked there (a tool's approval).

        The reply goes on after it (more text, a tool's line) as if nothing came between.
        """


def tool_line(name: str, arguments: str, result: str, is_error: bool, limit: int | None = None) -> str:
    """``⚙ name(args) → result`` (``✗`` for an error), each part on one line and clipped to ``limit``."""
    def cut(text: str) -> str:
        return text if limit is None else clip(fold(text), limit)
    return f"{'✗' if is_error else '⚙'} {name}({cut(arguments)}) → {cut(result)}"


class PlainReply(ReplyView):
    """The reply written as it comes, through ``write`` (a pipe, ``--raw``, ``render: false``, no colour)."""

    def __init__(self, write: Callable[[str], None]):
        self._write = write
        self._started = False

    def text(self, chunk: str) -> None:
        """Write ``chunk`` as it is (``write`` makes it terminal-safe)."""
        self._started = True
        self._write(chunk)

    def tool(self, name: str, arguments: str, result: str, is_error: bool) -> None:
        """Write the tool's line, after the text before it ends its line."""
        self.end()
        self._write(tool_line(name, arguments, result, is_error) + "\n")

    def pause(self) -> None:
        """End the text's line (the question starts a line of its own)."""
        self.end()

    def end(self) -> bool:
        """End the text's line; True when there was text."""
        if self._started:
            self._write("\n")
            self._started = False
            return True
        return False


def blocks(text: str) -> tuple[list[str], int]:
    """Cut ``text`` into the markdown blocks that are done, and where the rest begins.

    A top-level block is done when a later one has begun on a complete line: a line still
    being written may yet change what it is (``2`` may become ``2. item``, continuing a
    list). Fenced code, lists and tables are one block each, blank lines inside and all.

    Returns:
        ``(done, offset)``: the done blocks' source text, each without its blank lines
        around it, and the offset in ``text`` of what is not done yet.
    """
    end = text.rfind("\n") + 1
    if not end:
        return [], 0
    lines = text[:end].splitlines(keepends=True)
    starts = [t.map for t in parser().parse(text[:end]) if t.level == 0 and t.nesting >= 0 and t.map]
    if len(starts) < 2:
        return [], 0
    done = ["".join(lines[a:b]).strip("\n") for a, b in starts[:-1]]
    return done, sum(len(line) for line in lines[: starts[-1][0]])


_NOTHING = ""  # an empty live region


class RenderedReply(ReplyView):
    """The reply rendered as markdown while it streams, on a rich console (see the module's docstring).

    Args:
        console: a console on the terminal (:meth:`gitsessions.cli.display.output.Output.console`).
        behind: while rich's markdown loads in a background thread (started by the first
            text if it was not), text that looks the same plain as rendered (:data:`_MARKUP`)
            is drawn plain and no block is printed: the first token is drawn at once, and
            markdown's syntax never shows (False: the first text loads it in place).
    """

    def __init__(self, console: Console, behind: bool = False):
        from rich.live import Live
        from rich.text import Text

        self._console = console
        self._text = ""  # this message's text not printed yet, terminal-safe
        self._printed = False  # a block of this message is on the screen
        self._shown = False  # anything of the reply is
        self._next_draw = 0.0  # time.monotonic() after which the block being written is drawn again
        self._scanned = 0  # of a code fence being written: how far its lines were looked at...
        self._closed = False  # ...and whether its closing fence came
        self._lines = self._new_lines = 0  # lines of the block being written; those since it was parsed
        self._live = Live(Text("…", style="dim"), console=console, auto_refresh=False, transient=True,
                          redirect_stdout=False, redirect_stderr=False, vertical_overflow="visible")
        self._live.start(refresh=True)
        self._paused = False
        self._behind = behind

    def pause(self) -> None:
        """Print what text there is and take the live region away (see :meth:`ReplyView.pause`)."""
        with _synchronized(self._console):
            self._live.update(_NOTHING, refresh=True)
            self._flush()
            self._live.stop()
        self._printed, self._paused = False, True

    def _resume(self) -> None:
        if self._paused:
            self._paused = False
            self._live.start(refresh=True)

    def text(self, chunk: str) -> None:
        """Add ``chunk``: print the blocks it completes, redraw the one being written (see REDRAW_S).

        A block can only be done once a line ends, so the text is parsed again only then, and
        only once enough lines came (PARSE_SHARE); an open code fence only at its closing fence.
        """
        self._resume()
        self._text += terminal_safe(chunk)
        done: list[str] = []
        ended = chunk.count("\n")
        self._lines, self._new_lines = self._lines + ended, self._new_lines + ended
        plain = self._behind and loading() and not _MARKUP.search(self._text)
        if ended and not plain and self._new_lines >= max(1, self._lines // PARSE_SHARE) \
                and not self._in_open_fence():
            done, offset = blocks(self._text)
            self._new_lines = 0
            if offset:
                self._text, self._scanned, self._closed = self._text[offset:], 0, False
                self._lines = self._text.count("\n")
        now = time.monotonic()
        if not done and now < self._next_draw:
            return
        with _synchronized(self._console):
            rows = max(1, self._console.size.height - 1)
            tail = (_plain_end(self._text, rows) if plain else
                    _Block(_visible_end(self._text, rows), bool(done) or self._printed, rows)) \
                if self._text.strip() else _NOTHING
            self._live.update(tail, refresh=True)  # (rich draws what it last refreshed under what is printed)
            self._print(*done)  # above the live region, in the same synchronized write
        took = time.monotonic() - now if self._next_draw else 0.0
        self._next_draw = now + min(REDRAW_MAX_S, max(REDRAW_S, REDRAW_FACTOR * took))

    def _in_open_fence(self) -> bool:
        """True while the block being written is a code fence not closed yet.

        No line but its closing fence can end it, so parsing it again for every line (O(size)
        each: quadratic in a long code block) is skipped; only its new lines are looked at.
        """
        opened = None if self._closed else _FENCE.match(self._text)
        if not opened:
            return False
        marker = opened.group(1)
        start, end = max(self._scanned, opened.end()), self._text.rfind("\n") + 1
        self._scanned = max(self._scanned, end)
        closing = re.compile(rf"^ {{0,3}}{re.escape(marker[0])}{{{len(marker)},}}[ \t]*$", re.M)
        self._closed = closing.search(self._text, start, end) is not None  # then parsed as any block
        return not self._closed

    def tool(self, name: str, arguments: str, result: str, is_error: bool) -> None:
        """Print what text there is, then the tool's line, dimmed (red for an error)."""
        from rich.text import Text

        line = terminal_safe(tool_line(name, arguments, result, is_error, TOOL_CHARS))
        self._resume()
        with _synchronized(self._console):
            self._live.update(Text("…", style="dim"), refresh=True)  # the model is asked again
            self._flush()
            self._console.print(Text(line, style="red dim" if is_error else "dim"), overflow="ellipsis",
                                no_wrap=True)
        self._printed = False  # the next text is a new message
        self._shown = True

    def end(self) -> bool:
        """Print the rest of the text and close the live region; True when anything was shown."""
        with _synchronized(self._console):
            self._live.update(_NOTHING, refresh=True)  # the block being written goes, printed whole in one write
            self._flush()
            self._live.stop()
        return self._shown

    def _flush(self) -> None:
        if self._text.strip():
            self._print(self._text)
        self._text = ""

    def _print(self, *done: str) -> None:
        if not done:
            return
        shown = [_Block(block, gap=self._printed or i > 0) for i, block in enumerate(done)]
        self._console.print(*shown)
        self._printed = self._shown = True


@contextlib.contextmanager
def _synchronized(console: Console) -> Iterator[None]:
    """Let the terminal show what the block writes at once (DEC private mode 2026, ignored where unknown).

    An erase and the redraw after it never reach the screen apart: nothing flickers.
    """
    if not console.is_terminal:
        yield
        return
    console.file.write("\x1b[?2026h")
    try:
        yield
    finally:
        console.file.write("\x1b[?2026l")
        console.file.flush()


def _plain_end(text: str, rows: int) -> Any:
    """The last ``rows`` lines of a block being written, as plain text (rich's markdown still loading)."""
    from rich.text import Text

    return Text("\n".join(text.strip("\n").split("\n")[-rows:]))


def _visible_end(text: str, rows: int) -> str:
    """The end of a block being written that fills ``rows`` screen rows (what the live region shows).

    Rendering a long block whole for every redraw costs O(size) (pygments, for code); its end
    is rendered instead, with a code fence's opening line kept for the language.
    """
    lines = text.split("\n")
    if len(lines) <= 2 * rows:
        return text
    opened = _FENCE.match(text)
    return "\n".join(([lines[0]] if opened else []) + lines[-rows:])


class _Block:
    """A markdown block rendered without blank lines around it, after one blank line when ``gap``.

    rich puts one blank line between the blocks of a document, but a list, a table or a quote
    rendered alone starts with one of its own: trimmed, blocks printed one by one read as the
    whole document would. ``last``: only the block's last rows (the live region must fit on
    the screen).
    """

    def __init__(self, text: str, gap: bool, last: int | None = None):
        self.text = text
        self.gap = gap
        self.last = last

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        from rich.segment import Segment

        lines = [_rstrip(line) for line in console.render_lines(markdown(self.text.strip("\n")), options, pad=False)]
        while lines and not "".join(seg.text for seg in lines[0]):
            lines.pop(0)
        while lines and not "".join(seg.text for seg in lines[-1]):
            lines.pop()
        if self.gap:
            lines.insert(0, [])
        for line in lines[-self.last:] if self.last else lines:
            yield from line
            yield Segment.line()


def _rstrip(line: list[Any]) -> list[Any]:
    """``line`` without the spaces rich pads it with (none that paint a background): copied text has none."""
    from rich.segment import Segment

    line = list(line)
    while line and not line[-1].control and not (line[-1].style and line[-1].style.bgcolor):
        text = line[-1].text.rstrip(" ")
        if text:
            line[-1] = Segment(text, line[-1].style)
            break
        line.pop()
    return line


def renders(out: Output, render: bool) -> bool:
    """True when the chat renders what the model wrote as markdown (its replies, the recap).

    When ``render`` (config ``render:``, not ``--raw``) and colour is on for stdout (a
    terminal; no ``NO_COLOR``, ``--no-color``, ``TERM=dumb``).
    """
    return render and out.color()


def rendered_replies(out: Output, render: bool, behind: bool = False) -> Callable[[], ReplyView] | None:
    """What shows each reply of a chat on this terminal: rendered markdown (:func:`renders`), or None for plain text.

    rich is imported by the first reply, not here; with ``behind``, rich's markdown is
    loaded behind the replies (see :class:`RenderedReply`).
    """
    if not renders(out, render):
        return None
    consoles: list[Console] = []

    def reply() -> ReplyView:
        if not consoles:
            consoles.append(out.console())
        return RenderedReply(consoles[0], behind=behind)

    return reply
