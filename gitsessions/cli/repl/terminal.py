"""The chat on a real terminal: the keys that act while a reply is on its way (the prompt: ``.prompt``).

prompt_toolkit reads each line in raw mode, where Ctrl+C, Ctrl+Z and text typed ahead are
plain keys; between prompts the terminal is in its usual mode, where the kernel turns Ctrl+C
and Ctrl+Z into signals. Left alone, three things go wrong at that seam:

- Ctrl+C pressed together with Enter arrives while prompt_toolkit still reads: it is kept as
  a key for the *next* prompt (which then leaves the chat) and the reply streams on.
- The kernel flushes what was typed ahead when Ctrl+C or Ctrl+Z raises its signal.
- Ctrl+Z at the prompt is a plain key: prompt_toolkit inserts it as text, which is sent.

:class:`ReplyKeys` closes the seam: a Ctrl+C from Enter until the reply ends cancels that
request, typed-ahead text survives (``NOFLSH``), and Ctrl+Z at the prompt suspends the
process like any terminal program.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import termios
from collections.abc import Iterator
from typing import Any

from prompt_toolkit.input.typeahead import get_typeahead, store_typeahead
from prompt_toolkit.input.vt100_parser import Vt100Parser
from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.keys import Keys
from prompt_toolkit.utils import is_dumb_terminal


class ReplyKeys:
    """Ctrl+C between prompts: it cancels the request in flight or the one about to be sent.

    While a reply streams or a tool runs (``armed``: :meth:`cancellable`) Ctrl+C raises
    :class:`KeyboardInterrupt` there, which :func:`gitsessions.chat.loop.run_turn` turns into a
    cancelled reply. A Ctrl+C that comes before the request is sent (with the Enter that ended
    the line) is kept and raised when the next request of that turn would start; one that comes while a
    turn is being saved, or during a slash command, is dropped at the next prompt, so it can
    neither break a save nor cancel a later request.
    """

    def __init__(self) -> None:
        self.pending = False
        self._armed = False

    @contextlib.contextmanager
    def installed(self, fd: int) -> Iterator[ReplyKeys]:
        """Handle Ctrl+C between prompts, and keep typed-ahead text, until the block ends.

        Args:
            fd: the terminal (standard input).
        """
        old_handler = signal.signal(signal.SIGINT, self._on_sigint)
        old_mode = termios.tcgetattr(fd)
        mode = list(old_mode)
        mode[3] |= termios.NOFLSH  # a signal key does not throw away what was typed ahead
        termios.tcsetattr(fd, termios.TCSANOW, mode)
        try:
            yield self
        finally:
            _bracketed_paste(False)
            signal.signal(signal.SIGINT, old_handler)
            with contextlib.suppress(termios.error):  # the terminal may be gone (hang-up)
                termios.tcsetattr(fd, termios.TCSANOW, old_mode)

    def _on_sigint(self, _signum: int, _frame: Any) -> None:
        if self._armed:
            raise KeyboardInterrupt
        self.pending = True

    def prompt_starts(self) -> None:
        """Forget a Ctrl+C that no request took (it came during a save or a command)."""
        self.pending = False

    def prompt_ended(self, input: Any, fd: int) -> None:
        """Take the Ctrl+C keys read with (or right after) the Enter that ended the line.

        prompt_toolkit keeps keys it read past the Enter for the next prompt, and keys that
        came before it left raw mode wait in the terminal as plain bytes. Both are read here:
        a Ctrl+C among them cancels the request this line sends; every other key goes back,
        in order, to the next prompt.

        Args:
            input: the prompt session's prompt_toolkit input.
            fd: the terminal (standard input).
        """
        keys = list(get_typeahead(input))
        parsed: list[KeyPress] = []
        parser = Vt100Parser(parsed.append)
        parser.feed(_read_waiting(fd).decode("utf-8", "replace"))
        parser.flush()
        keys += parsed
        if any(k.key == Keys.ControlC for k in keys):
            self.pending = True
        store_typeahead(input, [k for k in keys if k.key != Keys.ControlC])
        _bracketed_paste(True)  # prompt_toolkit turned it off: a paste during the reply stays one prompt

    def guard(self, provider: Any) -> _Guarded:
        """Wrap ``provider`` so that each request it streams can be cancelled by Ctrl+C."""
        return _Guarded(provider, self)

    def stream(self, provider: Any, messages: list[dict[str, Any]],
               tools: list[dict[str, Any]] | None, **request: Any) -> Iterator[Any]:
        """Stream one request of ``provider``; a Ctrl+C kept for it, or pressed now, cancels it.

        Raises:
            KeyboardInterrupt: Ctrl+C (the loop records the reply as cancelled).
        """
        with self.cancellable():
            yield from provider.stream(messages, tools, **request)

    @contextlib.contextmanager
    def cancellable(self) -> Iterator[None]:
        """Let Ctrl+C, pressed now or kept since the Enter, raise in the block: a request, a tool running.

        Raises:
            KeyboardInterrupt: Ctrl+C (the loop records the reply as cancelled).
        """
        self._armed = True
        try:
            if self.pending:
                self.pending = False
                raise KeyboardInterrupt
            yield
        finally:
            self._armed = False


class _Guarded:
    """A provider whose requests :class:`ReplyKeys` can cancel (see :meth:`ReplyKeys.guard`)."""

    def __init__(self, provider: Any, keys: ReplyKeys):
        self._provider = provider
        self._keys = keys

    @property
    def model(self) -> str:
        """The model name of the wrapped provider."""
        return self._provider.model

    @property
    def calls_tools(self) -> bool:
        """Whether the wrapped provider's model calls tools."""
        return getattr(self._provider, "calls_tools", True)

    def models(self) -> list[str]:
        """The models the server offers (the wrapped provider's ``models()``)."""
        return self._provider.models()

    def server_window(self) -> int | None:
        """The server's context window (the wrapped provider's ``server_window()``)."""
        return self._provider.server_window()

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None,
               **request: Any) -> Iterator[Any]:
        """Stream as the wrapped provider does (see :meth:`ReplyKeys.stream`)."""
        return self._keys.stream(self._provider, messages, tools, **request)


def _bracketed_paste(on: bool) -> None:
    """Ask the terminal to mark pasted text (``ESC [200~ ... ESC [201~``), or to stop.

    Between prompts, a paste of several lines would otherwise reach the next prompt as lines,
    each one sent by its newline; marked, prompt_toolkit reads it as one paste. A dumb
    terminal is not asked (prompt_toolkit does not ask it either): it would show the escape.
    """
    if is_dumb_terminal():
        return
    with contextlib.suppress(OSError, ValueError):  # no terminal left (a hang-up)
        sys.stdout.write("\x1b[?2004h" if on else "\x1b[?2004l")
        sys.stdout.flush()


def _read_waiting(fd: int) -> bytes:
    """Read, without waiting, the bytes the terminal holds for us (in any mode)."""
    old = termios.tcgetattr(fd)
    mode = list(old)
    mode[3] &= ~termios.ICANON  # a part line is readable too
    mode[6] = list(old[6])
    mode[6][termios.VMIN] = 0
    mode[6][termios.VTIME] = 0
    termios.tcsetattr(fd, termios.TCSANOW, mode)
    chunks = []
    try:
        while chunk := os.read(fd, 4096):
            chunks.append(chunk)
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, old)
    return b"".join(chunks)
