"""The interactive chat: read a line, run a turn or a slash command, repeat.

Input and output are callables of the chat's :class:`ChatEnvironment`, so the real terminal
(prompt_toolkit) and a pipe (one line per prompt) run the same loop. The slash commands are
in :mod:`gitsessions.cli.repl.slash`. What needs a real terminal (editing a prompt in place,
picking from a list) is given by the face as callables; behind a pipe, ``/edit`` takes the
next line as the prompt (a command: runs) and ``/tree`` prints.
"""

from __future__ import annotations

import shutil
import sys
from typing import TYPE_CHECKING, Any

from ...errors import DiskFull, GitSessionsError
from ...store import LockWait, SessionStore
from ...text import REDACTED_NOTE, chat_prompt
from ...writer.opening import open_revision
from ...writer.session import Session
from ..display.stream import PlainReply

if TYPE_CHECKING:
    from .environment import ChatEnvironment


def fork_origin(session: Session) -> str | None:
    """Where a fork came from, said beside the prompt: ``forked from work at 1a2b3c4`` (None: no fork).

    A past revision opened for writing (its branch is made by the first send) says it too.
    """
    source = session.fork_from or session.forked_from
    return None if source is None else f"forked from {source.session_id} at {source.commit[:7]}"


class Repl:
    """The chat REPL over one store and one provider, in one environment.

    The slash commands it runs see it as a :class:`~gitsessions.cli.repl.handle.ChatHandle`.

    Args:
        store: the session store.
        provider: the model (``stream(messages, tools)``, ``model``).
        session_id: the session (or revision) to open first; a new id is created on its
            first save, a past revision is forked first.
        env: what the chat takes from outside: its input and output, the terminal's
            faculties, the settings (see :class:`ChatEnvironment`).
        model: the run's model (``-m``), before the session's ``session/model`` (None: the
            session's, else the provider's); ``/model`` sets the session's and ends it.
        fork_as: continue ``session_id`` in a new fork of this id.
        wait: how long opening ``session_id`` waits for another writer (None: not at all);
            ``/open`` and ``/new`` never wait (the user is at the prompt and can try again).
    """

    def __init__(self, store: SessionStore, provider: Any, session_id: str, env: ChatEnvironment, *,
                 model: str | None = None, fork_as: str | None = None, wait: LockWait | None = None):
        self.store = store
        self.provider = provider
        self.env = env
        self.model = model
        self.session: Session | None = None
        self.visited: list[str] = []
        #: Turns that ended with an API error (a piped chat exits 1 when there were any).
        self.failed_turns = 0
        #: Prompts a full disk kept from being saved, not even journaled: handed back.
        self.handed_back = 0
        #: A reply's secret was replaced in what was saved, and the chat said so (once).
        self.said_redacted = False
        self.open(session_id, create=True, fork_as=fork_as, wait=wait)

    def open(self, rev: str, create: bool, fork_as: str | None = None, wait: LockWait | None = None) -> None:
        """Open revision ``rev`` (created when ``create``; see :func:`open_revision`) and switch to it."""
        env = self.env
        session, note = open_revision(self.store, rev, fork_as=fork_as, new_header=env.new_header if create else None,
                                      redactor=env.redactor, warnings=env.warnings, wait=wait, system=env.system)
        self.switch(session, note)

    def switch(self, session: Session, note: str | None) -> None:
        """Make ``session`` the current one (the one left is closed: what it holds is saved)."""
        if self.session is not None:
            self.session.close()
        if self.env.toolset is not None and self.session is not None and self.session.id != session.id:
            self.env.toolset.forget()
        self.session = session
        session.saves_behind = self.env.save_behind
        if session.id not in self.visited:
            self.visited.append(session.id)
        if note:
            self.env.write(f"({note})\n")
        if session.recovered:
            self.env.write(f"(recovered an interrupted turn of {session.id} from its journal: "
                           f"commit {session.recovered[:7]})\n")
            from .tools import cut_calls  # a crashed turn only

            self.env.write("".join(line + "\n" for line in cut_calls(session.events)))

    def release(self) -> Session | None:
        """Close the current session and hold none until the next :meth:`open` or :meth:`switch`.

        Returns:
            The session closed (None: there was none).
        """
        left, self.session = self.session, None
        if left is not None:
            left.close()
        return left

    def show_recap(self) -> None:
        """Show where the current session's conversation was: its last ``env.recap`` turns."""
        if self.session is None or not self.env.recap or not self.session.events:
            return
        from ..display.recap import plain_lines, recap  # a session with turns only

        entries = recap(self.session.events, self.env.recap)
        if self.env.draw_recap is not None:
            self.env.draw_recap(entries)
        else:
            self.env.write("".join(line + "\n" for line in plain_lines(entries)))

    def prompt_text(self) -> str:
        """The prompt shown before input: ``<session> › ``."""
        return chat_prompt(self.session.id if self.session else "?")

    def run(self, recap: bool = True) -> None:
        """Show the recap, then loop until ``/exit``, end of input, or Ctrl+C/Ctrl+D at the prompt.

        Args:
            recap: show the recap first (False: it was shown as the session opened).
        """
        try:
            if recap:
                self.show_recap()
            while True:
                try:
                    line = self.env.read_line(self.prompt_text())
                except (KeyboardInterrupt, EOFError):
                    self.env.write("\n")
                    break
                if line is None:
                    break
                line = line.strip()
                if not line:
                    continue
                self.saved()  # at Enter (a slash command reads the store): the commit has landed by now, as a rule
                try:
                    if line.startswith("/"):
                        if not self.command(line):
                            break
                    else:
                        self.turn(line)
                except GitSessionsError as exc:
                    self.env.write(f"error: {exc}\n")
                while self.env.warnings:  # e.g. a failed post-commit hook
                    self.env.write(f"warning: {self.env.warnings.pop(0)}\n")
        finally:
            if self.session is not None:
                self.session.close()

    def turn(self, prompt: str) -> None:
        """Send ``prompt`` and show the reply as it streams (``env.reply``); the turn is saved whatever happens."""
        assert self.session is not None
        from ...chat.loop import run_turn
        from ...log.request import offered_tools

        if self.env.compaction is not None:
            note = self.env.compaction.before_turn(self.session, self.provider, prompt, self.window(),
                                               model=self.model or self.session.model)
            if note:
                self.env.write(f"({note})\n")
        tools, _note = offered_tools(getattr(self.provider, "calls_tools", True), None)
        view = self.env.reply() if self.env.reply is not None else PlainReply(self.env.write)
        ask = self.env.permit

        def permit(call: Any) -> str:  # asked below the reply so far
            assert ask is not None
            view.pause()
            return ask(call)

        try:
            try:
                result = run_turn(self.session, self.provider, prompt, max_steps=self.env.max_steps, tools=tools,
                                  toolset=self.env.toolset, permit=permit if ask is not None else None,
                                  model=self.model or self.session.model, options=self.session.options,
                                  on_text=view.text, on_tool=view.tool)
            finally:
                ended_line = view.end()  # whatever happened: the reply shown ends its line
        except DiskFull as exc:  # the chat stays open; a prompt not even journaled is handed back
            back = f"{prompt}\n" if exc.kept in ("prompt", "nothing") else ""
            self.env.write(f"error: {exc}\n" + back)
            self.handed_back += bool(back)
            return
        if not ended_line and result.reason != "completed":
            self.env.write("\n")
        if result.reason == "aborted":
            kept = "; the partial text is kept" if result.text else ""
            self.env.write(f"(reply cancelled{kept})\n")
        elif result.reason == "error":
            self.failed_turns += 1
            self.env.write(f"error: {result.error}\n(the prompt is saved; send another message to go on)\n")
        elif result.reason == "max-steps":
            self.env.write(f"(stopped after {self.env.max_steps} model requests in one turn)\n")
        if result.redacted and not self.said_redacted:
            self.said_redacted = True
            self.env.write(f"({REDACTED_NOTE})\n")
        if self.env.footer:
            from ...log.usage import footer

            # the last column would wrap on some terminals; a scripted chat's output has no width
            width = shutil.get_terminal_size().columns - 1 if sys.stdout.isatty() else None
            self.env.write(footer(self.current_model(), self.session.events, self.window(), width) + "\n")

    @property
    def unsaved(self) -> bool:
        """True when a prompt of this chat is in no commit: handed back, or left in the journal (a full disk)."""
        return bool(self.handed_back) or (self.session is not None and not self.session.all_saved)

    def current_model(self) -> str:
        """The model the next request goes to: the run's (``-m``), else the session's, else the provider's."""
        return self.model or (self.session.model if self.session else None) or self.provider.model

    def window(self) -> int | None:
        """The context window of :meth:`current_model`: the config's, else the server's, else None (unknown)."""
        from ...log.usage import context_window

        model, config = self.current_model(), self.env.config
        known = config.models.get(model) if config is not None else None
        ask = getattr(self.provider, "server_window", None)
        server = ask() if ask is not None and (known is None or known.context is None) else None
        return context_window(config, model, server) if config is not None else server

    def saved(self) -> None:
        """Wait for the commit of a turn made behind the prompt; say so when it failed."""
        try:
            if self.session is not None:
                self.session.wait_saved()
        except GitSessionsError as exc:  # its turn stays pending: the next save takes it again
            self.env.write(f"error: {exc}\n")

    def command(self, line: str) -> bool:
        """Run a slash command (see :mod:`gitsessions.cli.repl.slash`); return False when the REPL should end."""
        from . import slash  # at the first command: a chat's first turn does not wait for it

        return slash.command(self, line)
