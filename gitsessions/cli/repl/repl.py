"""The interactive chat: read a line, run a turn or a slash command, repeat.

Input and output are callables, so the real terminal (prompt_toolkit) and a pipe (one line
per prompt) run the same loop (style.md). The slash commands are in :mod:`gitsessions.cli.repl.slash`.
What needs a real terminal (editing a prompt in place, picking from a list) is given by the
face as callables; behind a pipe, ``/edit`` takes the next line as the prompt (a command:
runs) and ``/tree`` prints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ...config import DEFAULT_MAX_STEPS
from ...errors import DiskFull, GitSessionsError
from ...secrets.redact import NO_REDACTION, Redactor
from ...store import LockWait, SessionStore
from ...text import chat_prompt
from ...writer.opening import open_revision
from ...writer.session import Session
from ..display.stream import PlainReply, ReplyView

if TYPE_CHECKING:  # the turn loop is imported when first used: not before the prompt
    from ...chat.compaction import AutoCompact
    from ...chat.loop import Permit
    from ...chat.tools.toolset import Toolset
    from ...config import Config
    from .tree_lines import Spot

#: ``edit(prompt, text, use_editor)``: the user's edit of ``text`` (None: cancelled).
Edit = Callable[[str, str, bool], "str | None"]
#: ``pick_session()``: the id the user picked (None: cancelled).
PickSession = Callable[[], "str | None"]
#: ``pick_spot(spots, selected)``: the spot picked, starting at index ``selected`` (None: cancelled).
PickSpot = Callable[[Sequence["Spot"], int], "Spot | None"]
#: ``copy(text)``: puts ``text`` on the clipboard, returns the tool's name (raises GitSessionsError).
Copy = Callable[[str], str]
#: ``draw_recap(entries)``: shows a recap (:func:`gitsessions.cli.display.recap.recap`'s entries).
DrawRecap = Callable[[Sequence[tuple[str, str]]], None]


def fork_origin(session: Session) -> str | None:
    """Where a fork came from, said beside the prompt: ``forked from work at 1a2b3c4`` (None: no fork).

    A past revision opened for writing (its branch is made by the first send) says it too.
    """
    source = session.fork_from or session.forked_from
    return None if source is None else f"forked from {source.session_id} at {source.commit[:7]}"


class Repl:
    """The chat REPL over one store and one provider.

    Args:
        store: the session store.
        provider: the model (``stream(messages, tools)``, ``model``).
        session_id: the session (or revision) to open first; a new id is created on its
            first save, a past revision is forked first.
        read_line: ``read_line(prompt) -> str | None``; None at end of input; raises
            ``KeyboardInterrupt`` or ``EOFError`` to leave.
        write: writes text to the user (no newline added).
        new_header: builds the header of a new session from its id.
        system: the system prompt a new session starts with (config ``system:``), its first
            ``session/system`` event; what is sent is what the log says (see :func:`.open_session`).
        max_steps: model requests per turn.
        fork_as: continue ``session_id`` in a new fork of this id.
        redactor: replaces secrets in what enters a session (:data:`NO_REDACTION`: redaction is off).
        warnings: where the services and the store's hook runner put warnings (the CLI's
            list); the REPL shows and empties it after each line.
        wait: how long opening ``session_id`` waits for another writer (None: not at all);
            ``/open`` and ``/new`` never wait (the user is at the prompt and can try again).
        edit: lets the user edit a prompt in place (None: ``read_line`` reads its replacement).
        pick_session: the session picker of ``/open`` with no argument (None: a usage line).
        pick_spot: the ``/tree`` picker (None: the tree is printed).
        reply: makes what shows each reply as it streams (None: its text through ``write``).
        copy: the clipboard of ``/copy`` (None: there is none).
        recap: how many earlier turns are shown when a session with turns is opened, at the
            start and by ``/open`` (see :mod:`gitsessions.cli.display.recap`; 0: none).
        draw_recap: shows a recap's entries (None: as plain lines through ``write``).
        model: the run's model (``-m``), before the session's ``session/model`` (None: the
            session's, else the provider's); ``/model`` sets the session's and ends it.
        config: the settings ``/usage`` and the footer read (each model's window and price).
        footer: after each reply, one line: model · context used · session tokens.
        toolset: the opt-in tools offered and their approvals (None: no tools are offered); the
            approvals "for this session" are forgotten when another session is opened.
        permit: asks the user before a write or a command runs (see
            :func:`gitsessions.cli.repl.tools.approver`; None: such a call is denied unless approved).
        compaction: compacts the history before a turn that would fill the model's window
            (None: never; ``/compact`` still does).
        save_behind: each turn is committed while the next line is read (a terminal's chat:
            the prompt comes back without waiting for git); a line sent waits for that commit,
            and its failure is said then. False: before the next line is read, as a script expects.
    """

    def __init__(self, store: SessionStore, provider: Any, session_id: str, *,
                 read_line: Callable[[str], str | None], write: Callable[[str], None],
                 new_header: Callable[[str], dict], system: str | None = None,
                 max_steps: int = DEFAULT_MAX_STEPS, fork_as: str | None = None,
                 redactor: Redactor = NO_REDACTION, warnings: list[str] | None = None,
                 wait: LockWait | None = None, edit: Edit | None = None,
                 pick_session: PickSession | None = None, pick_spot: PickSpot | None = None,
                 reply: Callable[[], ReplyView] | None = None, copy: Copy | None = None, recap: int = 0,
                 draw_recap: DrawRecap | None = None, model: str | None = None,
                 config: Config | None = None, footer: bool = False, compaction: AutoCompact | None = None,
                 toolset: Toolset | None = None, permit: Permit | None = None, save_behind: bool = False):
        self.store = store
        self.model = model
        self.config = config
        self.footer = footer
        self.toolset = toolset
        self.permit = permit
        self.compaction = compaction
        self.reply = reply or (lambda: PlainReply(self.write))
        self.copy = copy
        self.recap = recap
        self.draw_recap = draw_recap
        self.save_behind = save_behind
        self.edit = edit
        self.pick_session = pick_session
        self.pick_spot = pick_spot
        self.warnings = warnings if warnings is not None else []
        self.provider = provider
        self.read_line = read_line
        self.write = write
        self.new_header = new_header
        self.system = system
        self.max_steps = max_steps
        self.redactor = redactor
        self.session: Session | None = None
        self.visited: list[str] = []
        #: Turns that ended with an API error (a piped chat exits 1 when there were any).
        self.failed_turns = 0
        self.open(session_id, create=True, fork_as=fork_as, wait=wait)

    def open(self, rev: str, create: bool, fork_as: str | None = None, wait: LockWait | None = None) -> None:
        """Open revision ``rev`` (created when ``create``; see :func:`open_revision`) and switch to it."""
        session, note = open_revision(self.store, rev, fork_as=fork_as,
                                      new_header=self.new_header if create else None, redactor=self.redactor,
                                      warnings=self.warnings, wait=wait, system=self.system)
        self.switch(session, note)

    def switch(self, session: Session, note: str | None) -> None:
        """Make ``session`` the current one (the one left is closed: what it holds is saved)."""
        if self.session is not None:
            self.session.close()
        if self.toolset is not None and self.session is not None and self.session.id != session.id:
            self.toolset.forget()
        self.session = session
        session.saves_behind = self.save_behind
        if session.id not in self.visited:
            self.visited.append(session.id)
        if note:
            self.write(f"({note})\n")
        if session.recovered:
            self.write(f"(recovered an interrupted turn of {session.id} from its journal: "
                       f"commit {session.recovered[:7]})\n")
            from .tools import cut_calls  # a crashed turn only

            self.write("".join(line + "\n" for line in cut_calls(session.events)))

    def show_recap(self) -> None:
        """Show where the current session's conversation was: its last :attr:`recap` turns."""
        if self.session is None or not self.recap or not self.session.events:
            return
        from ..display.recap import plain_lines, recap  # a session with turns only

        entries = recap(self.session.events, self.recap)
        if self.draw_recap is not None:
            self.draw_recap(entries)
        else:
            self.write("".join(line + "\n" for line in plain_lines(entries)))

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
                    line = self.read_line(self.prompt_text())
                except (KeyboardInterrupt, EOFError):
                    self.write("\n")
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
                    self.write(f"error: {exc}\n")
                while self.warnings:  # e.g. a failed post-commit hook
                    self.write(f"warning: {self.warnings.pop(0)}\n")
        finally:
            if self.session is not None:
                self.session.close()

    def turn(self, prompt: str) -> None:
        """Send ``prompt`` and show the reply as it streams (:attr:`reply`); the turn is saved whatever happens."""
        assert self.session is not None
        from ...chat.loop import run_turn
        from ...log.request import offered_tools

        if self.compaction is not None:
            note = self.compaction.before_turn(self.session, self.provider, prompt, self.window(),
                                               model=self.model or self.session.model)
            if note:
                self.write(f"({note})\n")
        tools, _note = offered_tools(getattr(self.provider, "calls_tools", True), None)
        view = self.reply()
        ask = self.permit

        def permit(call: Any) -> str:  # asked below the reply so far
            assert ask is not None
            view.pause()
            return ask(call)

        try:
            try:
                result = run_turn(self.session, self.provider, prompt, max_steps=self.max_steps, tools=tools,
                                  toolset=self.toolset, permit=permit if ask is not None else None,
                                  model=self.model or self.session.model, options=self.session.options,
                                  on_text=view.text, on_tool=view.tool)
            finally:
                ended_line = view.end()  # whatever happened: the reply shown ends its line
        except DiskFull as exc:  # the chat stays open; a prompt not even journaled is handed back
            back = f"{prompt}\n" if exc.kept in ("prompt", "nothing") else ""
            self.write(f"error: {exc}\n" + back)
            return
        if not ended_line and result.reason != "completed":
            self.write("\n")
        if result.reason == "aborted":
            kept = "; the partial text is kept" if result.text else ""
            self.write(f"(reply cancelled{kept})\n")
        elif result.reason == "error":
            self.failed_turns += 1
            self.write(f"error: {result.error}\n(the prompt is saved; send another message to go on)\n")
        elif result.reason == "max-steps":
            self.write(f"(stopped after {self.max_steps} model requests in one turn)\n")
        if self.footer:
            from ...log.usage import footer

            self.write(footer(self.current_model(), self.session.events, self.window()) + "\n")

    def current_model(self) -> str:
        """The model the next request goes to: the run's (``-m``), else the session's, else the provider's."""
        return self.model or (self.session.model if self.session else None) or self.provider.model

    def window(self) -> int | None:
        """The context window of :meth:`current_model`: the config's, else the server's, else None (unknown)."""
        from ...log.usage import context_window

        model = self.current_model()
        known = self.config.models.get(model) if self.config is not None else None
        ask = getattr(self.provider, "server_window", None)
        server = ask() if ask is not None and (known is None or known.context is None) else None
        return context_window(self.config, model, server) if self.config is not None else server

    def saved(self) -> None:
        """Wait for the commit of a turn made behind the prompt; say so when it failed."""
        try:
            if self.session is not None:
                self.session.wait_saved()
        except GitSessionsError as exc:  # its turn stays pending: the next save takes it again
            self.write(f"error: {exc}\n")

    def command(self, line: str) -> bool:
        """Run a slash command (see :mod:`gitsessions.cli.repl.slash`); return False when the REPL should end."""
        from . import slash  # at the first command: a chat's first turn does not wait for it

        return slash.command(self, line)
