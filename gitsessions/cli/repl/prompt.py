"""The chat's prompt on a real terminal: its keys, its line history, Tab, and ``/edit``'s input.

Enter sends and Alt+Enter (Esc Enter) starts a new line; Ctrl+C clears a half-typed line
and leaves on an empty one, as bash and python do; Up and Down walk this session's prompts
first (:class:`SessionFirstHistory`); Tab completes what :mod:`.complete` knows. The keys
that act while a reply is on its way are :mod:`.terminal`'s.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from collections.abc import AsyncGenerator, Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from prompt_toolkit.history import FileHistory, History, InMemoryHistory

from ...log.events import clean_text
from ..display.early import fitted_prompt
from ..display.render import terminal_safe
from .terminal import ReplyKeys

if TYPE_CHECKING:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.completion import Completer

    from ...writer.session import Session
    from ..common import Context


class PromptFaces(NamedTuple):
    """What the chat's prompt gives the chat on a terminal (:func:`prompt_io`)."""

    #: ``read_line(prompt)``: the line typed (raises KeyboardInterrupt or EOFError to leave).
    read_line: Callable[[str], str | None]
    #: ``write(text)``: text for the user, control characters made visible.
    write: Callable[[str], None]
    #: ``edit(prompt, text, use_editor)``: ``/edit``'s input (None: cancelled).
    edit: Callable[[str, str, bool], str | None]
    #: ``show(text)``: text as it is (terminal escapes kept: a rendered recap).
    show: Callable[[str], None]
    #: ``leave()``: ends the prompt on the screen, as Ctrl+D does (from any thread).
    leave: Callable[[], None]


def terminal_io(c: Context, on_shown: Callable[[], object], session: Callable[[], Session | None],
                completer: Callable[[], Completer | None],
                opened: Callable[[], object] = lambda: None) -> tuple[ReplyKeys, PromptFaces]:
    """The chat's faces on a real terminal: its keys, and a prompt_toolkit prompt with history.

    The line history is ``gs/prompt-history`` in the session repo, redacted as everything
    gs stores (in memory when it cannot be written).

    Args:
        c: the command's context (config, redactor, repo path).
        on_shown: called once, when the first prompt has been drawn.
        session: the chat's current session (None before there is one): Up and Down walk
            its prompts first, and the prompt of a fork says where it came from.
        completer: what Tab completes (None: nothing).
        opened: waits until the chat's session is open (or failed to open): the line history
            waits for it, in a thread of its own, before it gives this session's prompts.

    Returns:
        ``(keys, faces)``: the :class:`ReplyKeys`, and :func:`prompt_io`'s faces.
    """
    class RedactedHistory(FileHistory):
        """Line history on disk, with secrets replaced like everything else gs stores."""

        def store_string(self, string: str) -> None:
            redactor = c.redactor()  # built by then (the chat's store is open), not before the prompt
            super().store_string(redactor.text(string))

    history_path = c.repo_path() / "gs" / "prompt-history"
    try:
        history_path.parent.mkdir(parents=True, exist_ok=True)
        history: History = RedactedHistory(str(history_path))
    except OSError:
        history = InMemoryHistory()

    def prompts() -> list[str]:
        opened()
        now = session()
        return [] if now is None else [str(e.data.get("content", "")) for e in now.events if e.type == "user/message"]

    from prompt_toolkit.completion import DynamicCompleter

    keys = ReplyKeys()
    return keys, prompt_io(SessionFirstHistory(history, prompts), clean_text, terminal_safe, keys,
                           on_shown=on_shown, completer=DynamicCompleter(completer),
                           note=lambda: _origin(session()))


def _origin(session: Session | None) -> str | None:
    if session is None:
        return None
    from .repl import fork_origin  # imported by then (the session is open)

    return fork_origin(session)


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
        #: Whether the lines of this prompt are all given (Up and Down wait for them).
        self.loaded = False

    async def load(self) -> AsyncGenerator[str, None]:
        """Yield this session's prompts, then the other lines, newest first (as prompt_toolkit asks)."""
        import asyncio

        self.loaded = False
        seen: set[str] = set()
        merged: list[str] = []
        prompts = await asyncio.get_running_loop().run_in_executor(None, self.prompts)  # may wait for the session
        for text in reversed(prompts):
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
        self.loaded = True

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
              note: Callable[[], str | None] | None = None) -> PromptFaces:
    """Return the faces of a chat on a terminal (prompt_toolkit with history; see :class:`PromptFaces`).

    The prompt's keys are the shell's (:func:`_chat_keys`): Enter sends, Alt+Enter or Esc
    Enter starts a new line (a bracketed paste is inserted as it is: one prompt), Ctrl+C
    clears a half-typed line and on an empty one leaves (:class:`KeyboardInterrupt`), as
    Ctrl+D does; Ctrl+Z suspends.

    ``edit(prompt, text, use_editor)`` is ``/edit``'s: ``text`` prefilled in an input of
    several lines (Enter sends, Alt+Enter or Esc Enter starts a new line, Ctrl+C cancels),
    or in ``$VISUAL``/``$EDITOR`` when asked or when ``text`` is long (:func:`edit_in_editor`).

    ``write``, ``show`` and ``leave`` may be called from another thread (the chat opens its
    session behind its first prompt): what is written while a prompt is up is printed above
    it, in the prompt's own thread (prompt_toolkit's ``run_in_terminal``), else before the
    next prompt or write of this thread.

    Args:
        history: the prompt_toolkit history of earlier lines.
        clean: applied to each line read (text hygiene, see :func:`gitsessions.log.events.clean_text`).
        safe: applied to each text written (control characters made visible).
        keys: told when each prompt starts and ends (see :class:`ReplyKeys`).
        on_shown: called once, right after the first prompt is drawn (work that can wait
            until the user sees the prompt); on a dumb terminal as it is written.
        completer: what Tab completes (a prompt_toolkit completer; None: nothing).
        note: what stands dimmed at the right of the prompt's line (read at each prompt;
            None or "": nothing).
    """
    from prompt_toolkit import PromptSession
    from prompt_toolkit.utils import is_dumb_terminal

    # enable_suspend: Ctrl+Z at the prompt stops the process (the shell's fg resumes it).
    session: PromptSession[str] = PromptSession(history=history, enable_suspend=True, multiline=True,
                                                key_bindings=_chat_keys(lambda: getattr(history, "loaded", True)),
                                                prompt_continuation=_continuation,
                                                completer=completer, complete_while_typing=False,
                                                rprompt=lambda: _note(note, session))
    fd = sys.stdin.fileno()
    pending = [on_shown] if on_shown is not None else []

    def after_render(_app: Any) -> None:
        while pending:
            pending.pop()()

    session.app.after_render += after_render
    screen = _Screen(session)

    def read_line(prompt: str) -> str | None:
        screen.flush()
        keys.prompt_starts()
        if is_dumb_terminal():  # prompt_toolkit writes this prompt as it starts, in an app that renders nothing
            after_render(None)
        try:
            # as wide as the terminal lets it be, at each redraw (a resize)
            line = session.prompt(lambda: fitted_prompt(prompt, session.app.output.get_size().columns))
        finally:
            screen.flush()
        keys.prompt_ended(session.input, fd)
        return clean(line)

    def write(text: str) -> None:
        screen.show(safe(text))

    return PromptFaces(read_line, write, _editor(write, clean, keys, fd), screen.show, screen.leave)


class _Screen:
    """What the chat shows, from any thread: another thread's text goes above the prompt that is up.

    The chat opens its session behind its first prompt, and what that writes is printed
    above the prompt, in the prompt's own thread (prompt_toolkit's ``run_in_terminal``); with
    no prompt up it waits for the next prompt or write of the thread that made this screen.

    Args:
        session: the chat's prompt.
    """

    def __init__(self, session: PromptSession[str]):
        self._session = session
        self._owner = threading.current_thread()
        self._waiting: list[str] = []  # text another thread wrote, printed by the owner

    def flush(self) -> None:
        """Print what other threads wrote meanwhile (in the owner's thread, or the prompt's)."""
        while self._waiting:
            sys.stdout.write(self._waiting.pop(0))
        sys.stdout.flush()

    def show(self, text: str) -> None:
        """Show ``text`` as it is: now in the owner's thread, else above the prompt."""
        if threading.current_thread() is not self._owner:
            self._waiting.append(text)
            self._in_prompt(self._above)
            return
        self.flush()
        sys.stdout.write(text)
        sys.stdout.flush()

    def leave(self) -> None:
        """End the prompt that is up as Ctrl+D does (from any thread)."""
        app = self._session.app

        def end() -> None:
            future = app.future
            if app.is_running and future is not None and not future.done():
                app.exit(exception=EOFError)

        self._in_prompt(end)

    def _in_prompt(self, call: Callable[[], object]) -> None:
        """Run ``call`` in the prompt's thread if a prompt is up (else it is not run)."""
        app = self._session.app
        loop = app.loop
        if loop is not None and app.is_running:
            with contextlib.suppress(RuntimeError):  # the prompt ended and its loop closed meanwhile
                loop.call_soon_threadsafe(call)

    def _above(self) -> None:  # in the prompt's thread
        from prompt_toolkit.application import run_in_terminal
        from prompt_toolkit.application.current import set_app

        app = self._session.app
        if self._waiting and app.is_running:
            with set_app(app):  # (a callback from another thread runs outside the prompt's context)
                run_in_terminal(self.flush)


def _editor(write: Callable[[str], None], clean: Callable[[str], str], keys: ReplyKeys,
            fd: int) -> Callable[[str, str, bool], str | None]:
    """``/edit``'s input (see :func:`prompt_io`): in place in several lines, or in ``$EDITOR`` when long or asked."""
    from prompt_toolkit import PromptSession

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

    return edit


#: A prompt of more lines than this (or than half the terminal) is edited in ``$EDITOR``.
LONG_PROMPT_LINES = 8


def _note(note: Callable[[], str | None] | None, session: Any) -> Any:
    """The prompt's right side: ``note``'s text dimmed, a space short of the edge (the last column wraps).

    Only when it fits beside the prompt and what is typed on its first line, with a gap of
    two columns: else its short form (``forked from work at 1a2b3c4`` -> ``← work@1a2b3c4``),
    else nothing (never a note broken across lines, or drawn over the text).
    """
    text = note() if note is not None else None
    if not text:
        return ""
    try:
        columns = session.app.output.get_size().columns
        typed = session.default_buffer.document.lines[0] if session.default_buffer.text else ""
        used = len(_plain(session.message)) + len(typed)
    except Exception:  # noqa: BLE001 - a prompt not drawn yet: no room is known
        return [("fg:ansibrightblack", text + " ")]
    for form in (text, _short_note(text)):
        if used + 2 + len(form) + 1 <= columns:
            return [("fg:ansibrightblack", form + " ")]
    return ""


def _plain(message: Any) -> str:
    """The text of a prompt message (a string, formatted text, or a callable giving either)."""
    from prompt_toolkit.formatted_text import fragment_list_to_text, to_formatted_text

    return fragment_list_to_text(to_formatted_text(message() if callable(message) else message))


def _short_note(text: str) -> str:
    """A note's short form: ``forked from work at 1a2b3c4`` -> ``← work@1a2b3c4``; another note as it is."""
    m = re.fullmatch(r"forked from (\S+) at (\w+)", text)
    return f"← {m[1]}@{m[2]}" if m else text


def _continuation(width: int, _line: int, _soft: int) -> str:
    """What stands before the second and later lines of an input: ``…`` under the prompt's end."""
    return "…".rjust(width - 1) + " "


def _chat_keys(loaded: Callable[[], bool]) -> Any:
    """Key bindings of the chat's prompt: :func:`_send_on_enter`'s, Tab, and Ctrl+C as a shell has it.

    Tab completes before the next key is read (:func:`.complete.complete_now`). Ctrl+C on a
    half-typed line clears it (bash, python and Claude Code do); on an empty line it leaves
    the chat, as it always did. Up and Down pressed before the line history
    is ``loaded`` (at the first prompt, it waits for the session being opened) wait for it.
    """
    from prompt_toolkit.filters import Condition

    kb = _send_on_enter()

    @kb.add("tab")
    def _complete(event: Any) -> None:
        from .complete import complete_now  # at the first Tab, as the completer

        complete_now(event.current_buffer)

    @kb.add("up", filter=Condition(lambda: not loaded()))
    @kb.add("down", filter=Condition(lambda: not loaded()))
    async def _walk_when_loaded(event: Any) -> None:
        import asyncio

        while not loaded():
            await asyncio.sleep(0.01)
        buffer = event.current_buffer
        (buffer.auto_up if event.key_sequence[0].key == "up" else buffer.auto_down)(count=event.arg)

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

    from ...errors import GitSessionsError

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
