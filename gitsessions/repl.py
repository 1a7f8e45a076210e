"""The interactive chat: read a line, run a turn or a slash command, repeat.

Input and output are callables, so the real terminal (prompt_toolkit) and a pipe (one line
per prompt) run the same loop (style.md). Slash commands follow the seed tutorial:
``/help``, ``/new <id>``, ``/sessions``, ``/open <id>``, ``/save``, ``/exit``; the tree of a
conversation (issue 12) adds ``/retry``, ``/edit [N]`` and ``/tree``. What needs a real
terminal (editing a prompt in place, picking from a list) is given by the face as callables;
behind a pipe, ``/edit`` takes the next line as the prompt (a command: runs) and ``/tree`` prints.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from .cli.stream import PlainReply, ReplyView
from .errors import DiskFull, GitSessionsError, SessionExists
from .forking import open_revision
from .redact import Redactor
from .rules import DEFAULT_MAX_STEPS, new_session_id, taken_by
from .session import Session, fork
from .store import LockWait, Revision, SessionStore

if TYPE_CHECKING:  # the turn loop, /retry and /tree are imported when first used: not before the prompt
    from .redo import Attempt, Spot

HELP = """\
Type a message and press Enter to send it. Ctrl+C cancels a reply (also one not yet begun);
Ctrl+C or Ctrl+D at the prompt leaves; Ctrl+Z suspends (fg resumes). Every finished turn is
saved as a git commit.

  /help          this help
  /new <id>      start a new session and switch to it
  /sessions      list sessions (* marks the current one)
  /open <rev>    switch to a session, or to a past revision (work~2, work@1a2b3c4d):
                 what you send there goes to a new fork; the original never moves
  /open          pick a session from a list, newest first (type to filter)
  /retry         ask again for the last turn's prompt, in a new sibling fork
  /edit [N]      edit turn N's prompt (default: the last) and send it in a fork at turn N-1;
                 /edit N --editor edits it in $EDITOR
  /tree          this session's family: pick a session or a turn and jump there
  /fork <new>    copy the current session (at its tip) into a new session and switch
  /log           the current session's saves, newest first
  /title <text>  set the session title (any Unicode)
  /undo          drop the last turn from what the model sees (the log keeps it)
  /save          save now (turns are saved as they finish; this confirms the tip)
  /exit          leave (also /quit, Ctrl+D)
"""


#: ``edit(prompt, text, use_editor)``: the user's edit of ``text`` (None: cancelled).
Edit = Callable[[str, str, bool], "str | None"]
#: ``pick_session()``: the id the user picked (None: cancelled).
PickSession = Callable[[], "str | None"]
#: ``pick_spot(spots, selected)``: the spot picked, starting at index ``selected`` (None: cancelled).
PickSpot = Callable[[Sequence["Spot"], int], "Spot | None"]


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
        system: optional system prompt.
        max_steps: model requests per turn.
        fork_as: continue ``session_id`` in a new fork of this id.
        redactor: replaces secrets in what enters a session (None: redaction is off).
        warnings: where the services and the store's hook runner put warnings (the CLI's
            list); the REPL shows and empties it after each line.
        wait: how long opening ``session_id`` waits for another writer (None: not at all);
            ``/open`` and ``/new`` never wait (the user is at the prompt and can try again).
        edit: lets the user edit a prompt in place (None: ``read_line`` reads its replacement).
        pick_session: the session picker of ``/open`` with no argument (None: a usage line).
        pick_spot: the ``/tree`` picker (None: the tree is printed).
        reply: makes what shows each reply as it streams (None: its text through ``write``).
    """

    def __init__(self, store: SessionStore, provider: Any, session_id: str, *,
                 read_line: Callable[[str], str | None], write: Callable[[str], None],
                 new_header: Callable[[str], dict], system: str | None = None,
                 max_steps: int = DEFAULT_MAX_STEPS, fork_as: str | None = None,
                 redactor: Redactor | None = None, warnings: list[str] | None = None,
                 wait: LockWait | None = None, edit: Edit | None = None,
                 pick_session: PickSession | None = None, pick_spot: PickSpot | None = None,
                 reply: Callable[[], ReplyView] | None = None):
        self.store = store
        self.reply = reply or (lambda: PlainReply(self.write))
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
        self._open(session_id, create=True, fork_as=fork_as, wait=wait)

    def _open(self, rev: str, create: bool, fork_as: str | None = None, wait: LockWait | None = None) -> None:
        session, note = open_revision(self.store, rev, fork_as=fork_as,
                                      new_header=self.new_header if create else None, redactor=self.redactor,
                                      warnings=self.warnings, wait=wait)
        self._switch(session, note)

    def _switch(self, session: Session, note: str | None) -> None:
        """Make ``session`` the current one (the one left is closed: what it holds is saved)."""
        if self.session is not None:
            self.session.close()
        self.session = session
        if session.id not in self.visited:
            self.visited.append(session.id)
        if note:
            self.write(f"({note})\n")
        if session.recovered:
            self.write(f"(recovered an interrupted turn of {session.id} from its journal: "
                       f"commit {session.recovered[:7]})\n")

    def prompt_text(self) -> str:
        """The prompt shown before input: ``<session> › ``."""
        return f"{self.session.id if self.session else '?'} › "

    def run(self) -> None:
        """Loop until ``/exit``, end of input, or Ctrl+C/Ctrl+D at the prompt."""
        try:
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
        from .chat.loop import run_turn

        view = self.reply()
        try:
            try:
                result = run_turn(self.session, self.provider, prompt, system=self.system,
                                  max_steps=self.max_steps, on_text=view.text, on_tool=view.tool)
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

    def command(self, line: str) -> bool:
        """Run a slash command; return False when the REPL should end."""
        name, _, arg = line.partition(" ")
        arg = arg.strip()
        if name in ("/exit", "/quit"):
            return False
        if name == "/help":
            self.write(HELP)
        elif name == "/new":
            sid = arg or new_session_id(self.store)
            other = taken_by(self.store, sid)
            if other is not None:  # named as it is (a case clash: the real id), never what was typed
                step = "choose another id" if other.startswith("archive/") else f"use /open {other}"
                self.write(f"error: {SessionExists(sid, other, step)}\n")
            else:
                self._open(sid, create=True)
                self.write(f"(new session {sid})\n")
        elif name == "/open":
            picked = self.pick_session() if not arg and self.pick_session is not None else arg
            if not arg and self.pick_session is None:
                self.write("usage: /open <id>\n")
            elif not picked:
                self.write("(nothing opened)\n")
            else:
                self._go(picked)
        elif name == "/retry":
            self.retry(arg)
        elif name == "/edit":
            return self.edit_turn(arg)
        elif name == "/tree":
            if arg:
                self.write("usage: /tree (it shows this session's family)\n")
            else:
                self.tree()
        elif name == "/sessions":
            self.sessions()
        elif name == "/fork":
            assert self.session is not None
            if not arg:
                self.write("usage: /fork <new id>\n")
            elif self.session.tip is None:
                self.write("error: nothing to fork yet: the session has no saved turns\n")
            else:
                source = self.session.id
                fork(self.store, self.store.resolve(source), arg)
                self._open(arg, create=False)
                self.write(f"(forked {source} into {arg}; now in {arg})\n")
        elif name == "/log":
            assert self.session is not None
            if self.session.tip is None:
                self.write("(no saves yet)\n")
            for info in self.store.log(self.session.id, start=self.session.tip, limit=20) if self.session.tip else []:
                self.write(f"{info.commit[:7]} {info.message.subject}\n")
        elif name == "/title":
            assert self.session is not None
            if not arg:
                self.write("usage: /title <text>\n")
            else:
                self.session.set_title(arg)
                self.write(f"(title: {' '.join(arg.split())})\n")
        elif name == "/undo":
            assert self.session is not None
            turn = self.session.undo()
            self.write(f"(turn {turn} dropped from what the model sees; the log keeps it)\n")
        elif name == "/save":
            assert self.session is not None
            commit = self.session.save() or self.session.tip
            if commit:
                self.write(f"(saved: {self.session.id} at {commit[:7]})\n")
            else:
                self.write("(nothing to save yet: the session has no turns)\n")
        else:
            self.write(f"unknown command {name}; /help lists the commands\n")
        return True

    def _go(self, rev: str) -> None:
        """Switch to ``rev`` (``/open``, the pickers, ``/tree``); the current session is already open."""
        assert self.session is not None
        if self.session.fork_from is None and (rev == self.session.id or self._is_our_tip(rev)):
            self.write(f"(already in {self.session.id})\n")  # opening it again would find its lock taken: by us
            return
        self._open(rev, create=False)
        self.write(f"(opened {self.session.id}: {len(self.session.messages())} messages)\n")

    def _is_our_tip(self, rev: str) -> bool:
        """True when ``rev`` (``work~0``, ``work@{0}``) names the current session's tip."""
        assert self.session is not None
        try:
            at = self.store.resolve(rev)
        except GitSessionsError:
            return False  # opening it says what is wrong
        return at.session_id == self.session.id and at.commit == self.session.tip

    def _standing(self) -> Revision | None:
        """The revision the current session stands at (None: nothing saved yet)."""
        assert self.session is not None
        if self.session.fork_from is not None:
            return self.session.fork_from  # a past revision, not yet written to
        return self.store.resolve(self.session.id) if self.session.tip else None

    def _attempt(self, turn: int | None, verb: str) -> tuple[Attempt, str] | None:
        at = self._standing()
        if at is None:
            self.write(f"error: nothing to {verb} yet: the session has no saved turns\n")
            return None
        from .redo import attempt_at
        return attempt_at(self.store, at, turn, name=self.session.id if self.session else None), at.session_id

    def _send_attempt(self, attempt: Attempt, old: str, prompt: str, edited: bool = False, label: str = "") -> None:
        """Open the new attempt's fork, say where both attempts live (after ``label``), send ``prompt`` there."""
        from .redo import open_attempt, where_both_live

        assert self.session is not None
        past = self.session.fork_from
        if past is None:
            session = open_attempt(self.store, attempt, redactor=self.redactor, warnings=self.warnings)
        else:  # a past revision not yet written to holds the fork name the attempt takes: let it go
            unwritten, self.session = self.session, None
            unwritten.close()
            try:
                session = open_attempt(self.store, attempt, redactor=self.redactor, warnings=self.warnings)
            except BaseException:
                self._open(f"{past.session_id}@{past.commit}", create=False, fork_as=unwritten.id)
                raise
        self._switch(session, None)
        line = where_both_live(attempt, old, session.id, f"/open {old}", edited, session.next_turn)
        self.write(f"({label}{line})\n")
        self.turn(prompt)

    def retry(self, arg: str) -> None:
        """``/retry``: the last turn's prompt again, in a sibling fork at the turn's parent commit."""
        if arg:
            self.write("usage: /retry (it tries the last turn again; /edit N changes an earlier one)\n")
            return
        found = self._attempt(None, "try again")
        if found is not None:
            self._send_attempt(found[0], found[1], found[0].prompt)

    def edit_turn(self, arg: str) -> bool:
        """``/edit [N] [--editor]``: edit turn N's prompt; sending it forks at turn N-1.

        Returns:
            False when the REPL should end (a ``/exit`` read in place of the new prompt).
        """
        words = arg.split()
        use_editor = "--editor" in words
        rest = [w for w in words if w != "--editor"]
        if len(rest) > 1 or (rest and not rest[0].isdigit()):
            self.write("usage: /edit [N] [--editor]  (N: a turn number, default the last)\n")
            return True
        found = self._attempt(int(rest[0]) if rest else None, "edit")
        if found is None:
            return True
        attempt, old = found
        label = f"edit turn {attempt.turn} › "
        if self.edit is not None:
            text = self.edit(label, attempt.prompt, use_editor)
        else:
            self.write(f"(turn {attempt.turn} was: {attempt.prompt}; the next line replaces it)\n")
            text = self.read_line(label)
            if text is not None and text.strip().startswith("/"):  # a command, as the prompt reads it
                self.write(f"(edit cancelled: {text.split()[0]} is a command; nothing was sent)\n")
                return self.command(text.strip())
        if text is None or not text.strip():
            self.write("(edit cancelled: nothing was sent)\n")
            return True
        if text.strip() == attempt.prompt.strip():  # nothing changed: the same prompt again, said so
            self._send_attempt(attempt, old, attempt.prompt, label="unchanged: ")
        else:
            self._send_attempt(attempt, old, text, edited=True)
        return True

    def tree(self) -> None:
        """``/tree``: the current session's family; the spot picked is opened (a past turn read-only)."""
        at = self._standing()
        if at is None:
            self.write("(no saves yet: the tree starts with the first turn)\n")
            return
        from .redo import tree_spots
        from .tree import family
        spots = tree_spots(self.store, family(self.store, at.session_id))
        want = None if at.is_tip else at.commit  # a tip is its session's line
        here = next((i for i, s in enumerate(spots) if s.session_id == at.session_id and s.commit == want), 0)
        if self.pick_spot is None:
            self.write("".join(f"{'>' if i == here else ' '} {s.label}\n" for i, s in enumerate(spots)))
            return
        spot = self.pick_spot(spots, here)
        if spot is None:
            return
        if spot.archived:
            self.write(f"error: {spot.session_id} is archived; gs restore {spot.session_id} brings it back\n")
        elif spot.commit is None or spot.commit == self.store.tip(spot.session_id):
            self._go(spot.session_id)
        else:
            self._go(f"{spot.session_id}@{spot.commit[:12]}")  # its note says where a send goes

    def sessions(self) -> None:
        """Print session ids with message counts; ``*`` marks the current one."""
        assert self.session is not None
        rows: dict[str, str] = {info.session_id: info.message.trailers.get("Messages", "0")
                for info in self.store.list_sessions()}
        rows.setdefault(self.session.id, str(len(self.session.messages())))
        for sid in sorted(rows):
            mark = "*" if sid == self.session.id else " "
            self.write(f"{mark} {sid}  {rows[sid]} messages\n")

