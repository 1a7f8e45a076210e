"""The chat on a real terminal: line editing, and the keys that act while a reply is on its way.

prompt_toolkit reads each line in raw mode, where Ctrl+C, Ctrl+Z and text typed ahead are
plain keys; between prompts the terminal is in its usual mode, where the kernel turns Ctrl+C
and Ctrl+Z into signals. Left alone, three things go wrong at that seam (issue 9, item 12):

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
from collections.abc import AsyncGenerator, Callable, Iterable, Iterator, Sequence
from typing import Any

from prompt_toolkit.history import History
from prompt_toolkit.input.typeahead import get_typeahead, store_typeahead
from prompt_toolkit.input.vt100_parser import Vt100Parser
from prompt_toolkit.key_binding import KeyPress
from prompt_toolkit.keys import Keys


class ReplyKeys:
    """Ctrl+C between prompts: it cancels the request in flight or the one about to be sent.

    While a reply streams (``armed``) Ctrl+C raises :class:`KeyboardInterrupt` there, which
    :func:`gitsessions.chat.loop.run_turn` turns into a cancelled reply. A Ctrl+C that comes
    before the request is sent (with the Enter that ended the line, or while a tool runs) is
    kept and raised when the next request of that turn would start; one that comes while a
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

    def guard(self, provider: Any) -> _Guarded:
        """Wrap ``provider`` so that each request it streams can be cancelled by Ctrl+C."""
        return _Guarded(provider, self)

    def stream(self, provider: Any, messages: list[dict[str, Any]],
               tools: list[dict[str, Any]] | None) -> Iterator[Any]:
        """Stream one request of ``provider``; a Ctrl+C kept for it, or pressed now, cancels it.

        Raises:
            KeyboardInterrupt: Ctrl+C (the loop records the reply as cancelled).
        """
        self._armed = True
        try:
            if self.pending:
                self.pending = False
                raise KeyboardInterrupt
            yield from provider.stream(messages, tools)
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

    def stream(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> Iterator[Any]:
        """Stream as the wrapped provider does (see :meth:`ReplyKeys.stream`)."""
        return self._keys.stream(self._provider, messages, tools)


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


class SessionFirstHistory(History):
    """Up and Down at the prompt: this session's prompts first, newest first, then every chat's lines.

    Read anew at each prompt, so after ``/open`` the arrows walk the session opened. A text
    met twice is one step.

    Args:
        lines: the history of earlier lines of every chat; what is sent is appended there.
        prompts: this session's prompts, oldest first.
    """

    def __init__(self, lines: History, prompts: Callable[[], Sequence[str]]):
        super().__init__()
        self.lines = lines
        self.prompts = prompts

    async def load(self) -> AsyncGenerator[str, None]:
        """Yield this session's prompts, then the other lines, newest first (as prompt_toolkit asks)."""
        seen: set[str] = set()
        merged: list[str] = []
        for text in reversed(self.prompts()):
            if text not in seen:
                seen.add(text)
                merged.append(text)
        async for text in self.lines.load():
            if text not in seen:
                seen.add(text)
                merged.append(text)
        self._loaded_strings = merged  # what get_strings() gives (Alt+. and the like)
        for text in merged:
            yield text

    def append_string(self, string: str) -> None:
        """Add a line sent at the prompt (kept by ``lines``)."""
        self._loaded_strings.insert(0, string)
        self.lines.append_string(string)

    def load_history_strings(self) -> Iterable[str]:
        """The lines of ``lines`` (:meth:`load` is what prompt_toolkit reads)."""
        return self.lines.load_history_strings()

    def store_string(self, string: str) -> None:
        """Store ``string`` in ``lines``."""
        self.lines.store_string(string)


def prompt_io(history: Any, clean: Callable[[str], str], safe: Callable[[str], str],
              keys: ReplyKeys, on_shown: Callable[[], object] | None = None, completer: Any = None
              ) -> tuple[Callable[[str], str | None], Callable[[str], None], Callable[[str, str, bool], str | None]]:
    """Return ``(read_line, write, edit)`` for a chat on a terminal (prompt_toolkit with history).

    The prompt's keys are the shell's (:func:`_chat_keys`): Enter sends, Alt+Enter or Esc
    Enter starts a new line (a bracketed paste is inserted as it is: one prompt), Ctrl+C
    clears a half-typed line and on an empty one leaves (:class:`KeyboardInterrupt`), as
    Ctrl+D does; Ctrl+Z suspends.

    ``edit(prompt, text, use_editor)`` is ``/edit``'s: ``text`` prefilled in an input of
    several lines (Enter sends, Alt+Enter or Esc Enter starts a new line, Ctrl+C cancels),
    or in ``$VISUAL``/``$EDITOR`` when asked or when ``text`` is long (:func:`edit_in_editor`).

    Args:
        history: the prompt_toolkit history of earlier lines.
        clean: applied to each line read (text hygiene, see :func:`gitsessions.events.clean_text`).
        safe: applied to each text written (control characters made visible).
        keys: told when each prompt starts and ends (see :class:`ReplyKeys`).
        on_shown: called once, right after the first prompt is drawn (work that can wait
            until the user sees the prompt).
        completer: what Tab completes (a prompt_toolkit completer; None: nothing).
    """
    from prompt_toolkit import PromptSession

    # enable_suspend: Ctrl+Z at the prompt stops the process (the shell's fg resumes it).
    session: PromptSession[str] = PromptSession(history=history, enable_suspend=True, multiline=True,
                                                key_bindings=_chat_keys(), prompt_continuation=_continuation,
                                                completer=completer, complete_while_typing=False)
    fd = sys.stdin.fileno()
    if on_shown is not None:
        pending = [on_shown]

        def after_render(_app: Any) -> None:
            while pending:
                pending.pop()()

        session.app.after_render += after_render

    def read_line(prompt: str) -> str | None:
        keys.prompt_starts()
        line = session.prompt(prompt)
        keys.prompt_ended(session.input, fd)
        return clean(line)

    def write(text: str) -> None:
        sys.stdout.write(safe(text))
        sys.stdout.flush()

    editor: list[PromptSession[str]] = []  # its own session: prompt() remembers its options

    def edit(prompt: str, text: str, use_editor: bool) -> str | None:
        if use_editor or len(text.splitlines()) > max(LONG_PROMPT_LINES, os.get_terminal_size(fd).lines // 2):
            result = edit_in_editor(text)
            return clean(result) if result is not None else None
        if not editor:
            editor.append(PromptSession(multiline=True, key_bindings=_send_on_enter(), enable_suspend=True,
                                        prompt_continuation=_continuation))
        write("(Enter sends, Alt+Enter starts a new line, Ctrl+C cancels)\n")
        keys.prompt_starts()
        try:
            line = editor[0].prompt(prompt, default=text)
        except (KeyboardInterrupt, EOFError):
            return None
        keys.prompt_ended(editor[0].input, fd)
        return clean(line)

    return read_line, write, edit


#: A prompt of more lines than this (or than half the terminal) is edited in ``$EDITOR``.
LONG_PROMPT_LINES = 8


def _continuation(width: int, _line: int, _soft: int) -> str:
    """What stands before the second and later lines of an input: ``…`` under the prompt's end."""
    return "…".rjust(width - 1) + " "


def _chat_keys() -> Any:
    """Key bindings of the chat's prompt: :func:`_send_on_enter`'s, and Ctrl+C as a shell has it.

    Ctrl+C on a half-typed line clears it (bash, python and Claude Code do); on an empty
    line it leaves the chat, as it always did.
    """
    kb = _send_on_enter()

    @kb.add("c-c")
    def _clear_or_leave(event: Any) -> None:
        if event.current_buffer.text:
            event.current_buffer.reset()
        else:
            event.app.exit(exception=KeyboardInterrupt, style="class:aborting")

    return kb


def _send_on_enter() -> Any:
    """Key bindings of an input of several lines: Enter sends it, Alt+Enter (Esc Enter) breaks the line."""
    from prompt_toolkit.key_binding import KeyBindings

    kb = KeyBindings()

    @kb.add("enter")
    def _send(event: Any) -> None:
        event.current_buffer.validate_and_handle()

    @kb.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    return kb


def edit_in_editor(text: str) -> str | None:
    """Edit ``text`` in ``$VISUAL``, else ``$EDITOR``, else ``vi``; return it (None: left empty).

    Raises:
        GitSessionsError: the editor cannot be run or exits with an error (nothing is sent).
    """
    import shlex
    import subprocess
    import tempfile
    from pathlib import Path

    from ..errors import GitSessionsError

    command = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with tempfile.TemporaryDirectory(prefix="gs-edit-") as folder:
        path = Path(folder) / "prompt.md"
        path.write_text(text + "\n", encoding="utf-8")
        try:
            status = subprocess.call([*shlex.split(command), str(path)])
        except (OSError, ValueError) as exc:
            raise GitSessionsError(f"cannot run the editor {command!r} ({exc}); set $VISUAL or $EDITOR "
                                   "to one, or edit in place with /edit N") from None
        if status != 0:
            raise GitSessionsError(f"the editor {command!r} exited with status {status}: nothing was sent")
        edited = path.read_text(encoding="utf-8", errors="replace").rstrip("\n")
    return edited if edited.strip() else None
