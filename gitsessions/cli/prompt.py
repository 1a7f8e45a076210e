"""The chat's prompt on a real terminal: its keys, its line history, Tab, and ``/edit``'s input.

Enter sends and Alt+Enter (Esc Enter) starts a new line; Ctrl+C clears a half-typed line
and leaves on an empty one, as bash and python do; Up and Down walk this session's prompts
first (:class:`SessionFirstHistory`); Tab completes what :mod:`.complete` knows. The keys
that act while a reply is on its way are :mod:`.terminal`'s.
"""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from prompt_toolkit.history import FileHistory, History, InMemoryHistory

from ..events import clean_text
from ..render import terminal_safe
from ..repl import fork_origin
from ..slash import COMMANDS
from .complete import ChatCompleter
from .terminal import ReplyKeys

if TYPE_CHECKING:
    from ..session import Session
    from ..store import GitStore
    from .common import Context


def terminal_io(c: Context, store: GitStore, on_shown: Callable[[], object],
                session: Callable[[], Session | None]) -> tuple[Any, ...]:
    """The chat's faces on a real terminal: its keys, and a prompt_toolkit prompt with history.

    The line history is ``gs/prompt-history`` in the session repo, redacted as everything
    gs stores (in memory when it cannot be written).

    Args:
        c: the command's context (config, redactor, repo path).
        store: the session store, whose sessions and revisions Tab completes after ``/open``.
        on_shown: called once, when the first prompt has been drawn.
        session: the chat's current session (None before there is one): Up and Down walk
            its prompts first, and the prompt of a fork says where it came from.

    Returns:
        ``(keys, read_line, write, edit)``: the :class:`ReplyKeys`, then :func:`prompt_io`'s.
    """
    redactor = c.redactor()

    class RedactedHistory(FileHistory):
        """Line history on disk, with secrets replaced like everything else gs stores."""

        def store_string(self, string: str) -> None:
            super().store_string(redactor.text(string) if redactor else string)

    history_path = c.repo_path() / "gs" / "prompt-history"
    try:
        history_path.parent.mkdir(parents=True, exist_ok=True)
        history: History = RedactedHistory(str(history_path))
    except OSError:
        history = InMemoryHistory()

    def prompts() -> list[str]:
        now = session()
        return [] if now is None else [str(e.data.get("content", "")) for e in now.events if e.type == "user/message"]

    keys = ReplyKeys()
    return (keys, *prompt_io(SessionFirstHistory(history, prompts), clean_text, terminal_safe, keys,
                             on_shown=on_shown, completer=ChatCompleter(store, COMMANDS),
                             note=lambda: _origin(session())))


def _origin(session: Session | None) -> str | None:
    return None if session is None else fork_origin(session)


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
              keys: ReplyKeys, on_shown: Callable[[], object] | None = None, completer: Any = None,
              note: Callable[[], str | None] | None = None
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
        note: what stands dimmed at the right of the prompt's line (read at each prompt;
            None or "": nothing).
    """
    from prompt_toolkit import PromptSession

    # enable_suspend: Ctrl+Z at the prompt stops the process (the shell's fg resumes it).
    session: PromptSession[str] = PromptSession(history=history, enable_suspend=True, multiline=True,
                                                key_bindings=_chat_keys(), prompt_continuation=_continuation,
                                                completer=completer, complete_while_typing=False,
                                                rprompt=lambda: _note(note))
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


def _note(note: Callable[[], str | None] | None) -> Any:
    """The prompt's right side: ``note``'s text dimmed, a space short of the edge (the last column wraps)."""
    text = note() if note is not None else None
    return [("fg:ansibrightblack", text + " ")] if text else ""


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
    @kb.add("escape", "c-j")  # the same keys typed while a reply streams: the terminal made Enter a line feed
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
