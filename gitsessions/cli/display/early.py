"""The chat's first prompt, drawn before the command line's libraries are imported.

Importing typer, prompt_toolkit and gs's own modules takes longer than the prompt's
budget (<= 250 ms from Enter): ``gs chat [SESSION]`` on a terminal draws its
prompt text first (:func:`hold`), holding the terminal as prompt_toolkit's raw mode does
(no echo, no line editing, no signal keys, no CR to NL), so that keys typed meanwhile wait
in the terminal as plain bytes, Ctrl+C and Ctrl+D among them. :func:`hand_over` gives the
terminal back in its own mode (without flushing its input) and the cursor to the start of
the line, where prompt_toolkit draws the same prompt and reads those keys. Every other way
out gives it back too: a write before the hand-over (a warning, a refusal) first erases
the prompt, then exit or a signal that can be handled restores the mode.

Only the standard library is imported here.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
from typing import Any

from ...places import config_path
from ...text import chat_prompt

#: Signals that end the process and can be handled: the terminal is given back first.
_SIGNALS = ("SIGTERM", "SIGHUP", "SIGQUIT")


class _Held:
    """The terminal held between :func:`hold` and its release: mode, streams, handlers."""

    def __init__(self, fd: int, mode: list[Any], prompt: str, session_id: str):
        self.fd, self.mode, self.prompt, self.session_id = fd, mode, prompt, session_id
        self.streams = (sys.stdout, sys.stderr)
        self.handlers: dict[int, Any] = {}


_held: _Held | None = None

#: xterm's bracketed paste mode on and off: a paste comes between ESC[200~ and ESC[201~.
_PASTE_ON, _PASTE_OFF = b"\x1b[?2004h", b"\x1b[?2004l"


#: The columns the chat's prompt leaves for what is typed: a prompt that would leave fewer is
#: shortened (prompt_toolkit draws nothing of a prompt as wide as the terminal, and a line it
#: wraps goes on under the prompt's end, a column or two a row).
INPUT_ROOM = 8

#: What ends the chat's prompt (:func:`gitsessions.text.chat_prompt`).
_MARK = " › "


def fits(prompt: str, columns: int) -> bool:
    """Whether ``prompt`` leaves :data:`INPUT_ROOM` columns of a terminal ``columns`` wide (one column a character)."""
    return len(prompt) + INPUT_ROOM <= columns


def fitted_prompt(prompt: str, columns: int) -> str:
    """``prompt`` as the chat draws it on a terminal ``columns`` wide: cut when it does not :func:`fits`.

    The session's name is cut (``a-long-na… › ``), down to the mark alone (``› ``).

    Args:
        prompt: the chat's prompt (``<session> › ``).
        columns: the terminal's width.
    """
    if fits(prompt, columns) or not prompt.endswith(_MARK):
        return prompt
    keep = columns - INPUT_ROOM - len(_MARK) - 1
    return prompt[:keep] + "…" + _MARK if keep > 0 else _MARK.lstrip()


def _early_session(argv: list[str], columns: int) -> str | None:
    """The session id of a plain ``gs chat [SESSION]`` whose prompt :func:`fits` uncut, else None.

    Any option (a global one too) may change what comes before the prompt, and a revision
    (``work~1``) is forked under another name: those take the usual way.
    """
    if not argv or argv[0] != "chat" or len(argv) > 2:
        return None
    sid = argv[1] if len(argv) == 2 else os.urandom(4).hex()  # as secrets.token_hex(4), a new session's id
    if sid.startswith("-") or not sid.isascii() or not sid.isprintable() or any(ch in sid for ch in "~^@ "):
        return None
    return sid if fits(chat_prompt(sid), columns) else None


def _pulls_on_open(env: dict[str, str] | os._Environ[str]) -> bool:
    """Whether the config may pull before the prompt (read as text: yaml costs more than the budget).

    A config that only mentions ``on-open`` is taken as pulling: the usual way is always right.
    """
    try:
        with open(config_path(env), encoding="utf-8", errors="replace") as f:
            return "on-open" in f.read()
    except OSError:
        return False


def dumb_terminal(env: dict[str, str] | os._Environ[str]) -> bool:
    """Whether ``$TERM`` names a terminal that cannot move its cursor: prompt_toolkit's rule (``is_dumb_terminal``).

    prompt_toolkit then writes its prompt as plain text and echoes what is typed, so nothing
    is drawn early (it would be written twice) and the chat opens its session before the prompt
    (what the opening writes could not go above a prompt on such a terminal).

    Args:
        env: the environment (``os.environ``).
    """
    return env.get("TERM", "").lower() in ("dumb", "unknown")


def started_as_gs() -> bool:
    """Whether this process was started as ``gs``/``gitsessions`` (its script, or ``python -m gitsessions``)."""
    name = os.path.basename(sys.argv[0]) if sys.argv else ""
    return name in ("gs", "gitsessions") or sys.argv[0].endswith(os.path.join("gitsessions", "__main__.py"))


def hold(argv: list[str] | None = None) -> str | None:
    """Draw the chat's prompt now and hold the terminal, for a plain ``gs chat [SESSION]`` on one.

    Args:
        argv: the command line after the program name (None: ``sys.argv[1:]``).

    Returns:
        The session id drawn (a new one when none was named), else None: nothing was done
        (not a terminal, options, a :func:`dumb_terminal`, a config that pulls on open, or a
        prompt that would be cut: :func:`fitted_prompt`).
    """
    global _held
    if _held is not None or not started_as_gs():
        return None
    try:
        import termios

        fd = sys.stdin.fileno()
        if not (os.isatty(fd) and os.isatty(sys.stdout.fileno())) or dumb_terminal(os.environ):
            return None
        sid = _early_session(list(sys.argv[1:] if argv is None else argv), os.get_terminal_size(fd).columns)
        if sid is None or _pulls_on_open(os.environ):
            return None
        mode = termios.tcgetattr(fd)
    except (AttributeError, ImportError, OSError, ValueError):  # no terminal, no termios (Windows)
        return None
    raw = list(mode)
    raw[0] &= ~(termios.IXON | termios.IXOFF | termios.ICRNL | termios.INLCR | termios.IGNCR)  # as prompt_toolkit's
    raw[3] &= ~(termios.ECHO | termios.ICANON | termios.IEXTEN | termios.ISIG)
    raw[6] = list(mode[6])
    raw[6][termios.VMIN], raw[6][termios.VTIME] = 1, 0
    held = _Held(fd, mode, chat_prompt(sid), sid)
    try:
        termios.tcsetattr(fd, termios.TCSANOW, raw)
    except termios.error:
        return None
    _held = held
    atexit.register(release)
    for name in _SIGNALS:
        number = getattr(signal, name, None)
        if number is not None:
            held.handlers[number] = signal.signal(number, _on_signal)
    sys.stdout, sys.stderr = _Releasing(held.streams[0]), _Releasing(held.streams[1])
    # Bracketed paste on, as prompt_toolkit has it: a paste arrives marked as one (not a turn per line).
    os.write(sys.stdout.fileno(), held.prompt.encode("utf-8") + _PASTE_ON)
    return sid


def held_session() -> str | None:
    """The session id whose prompt is drawn and held (None: none is)."""
    return _held.session_id if _held is not None else None


def typed_ahead() -> bool:
    """Whether keys typed while the prompt is held wait to be read (False when nothing is held)."""
    if _held is None:
        return False
    import select

    try:
        return bool(select.select([_held.fd], [], [], 0)[0])
    except (OSError, ValueError):  # the terminal is gone (hang-up)
        return False


def hand_over(prompt: str) -> None:
    """Give the terminal back for ``prompt`` to be drawn (by prompt_toolkit): call before its first prompt.

    The same prompt is left on the screen, the cursor at the start of its line, where
    prompt_toolkit draws it again; another is erased. Keys typed meanwhile stay to be read.

    Args:
        prompt: the prompt about to be drawn.
    """
    release(keep=_held is not None and prompt == _held.prompt)


def release(keep: bool = False) -> None:
    """Give the terminal back as it was before :func:`hold` (nothing when nothing is held).

    Args:
        keep: leave the prompt's text where it is (else it is erased).
    """
    global _held
    held, _held = _held, None
    if held is None:
        return
    import termios

    sys.stdout, sys.stderr = held.streams
    for number, handler in held.handlers.items():
        signal.signal(number, handler)
    try:
        # Kept: prompt_toolkit takes over, its bracketed paste on already; else it is turned off.
        os.write(held.fd if os.isatty(held.fd) else sys.stdout.fileno(), b"\r" if keep else b"\r\x1b[K" + _PASTE_OFF)
        # TCSANOW, not TCSAFLUSH: what was typed while the prompt was held is the first line.
        termios.tcsetattr(held.fd, termios.TCSANOW, held.mode)
    except (OSError, termios.error):  # the terminal is gone (hang-up)
        pass


def _on_signal(number: int, _frame: Any) -> None:
    handler = _held.handlers.get(number, signal.SIG_DFL) if _held is not None else signal.SIG_DFL
    release()
    if callable(handler):
        handler(number, _frame)
        return
    signal.signal(number, signal.SIG_DFL if handler != signal.SIG_IGN else handler)
    if handler != signal.SIG_IGN:
        os.kill(os.getpid(), number)


class _Releasing:
    """A stream (stdout, stderr) that gives the terminal back before anything is written to it."""

    def __init__(self, stream: Any):
        self._stream = stream

    def write(self, text: str) -> int:
        release()
        return int(self._stream.write(text))

    def writelines(self, lines: Any) -> None:
        release()
        self._stream.writelines(lines)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
