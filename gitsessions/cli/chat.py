"""Commands that talk to a model: ``chat`` (interactive), ``ask`` and ``retry`` (one turn)."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import sys
import threading
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Annotated, Any, NamedTuple

import typer

from .. import __version__
from ..errors import NoCurrentSession, RemoteError
from ..text import chat_prompt
from .common import Context, WaitCommand, WaitOption, collect_cycles, err, short
from .display import early
from .faces import FirstLine, chat_faces, drawn_first, session_picker
from .repl.tools import OneTurnTools, OneTurnYes, approver, terminal_answers, tools_line, toolset_for

if TYPE_CHECKING:
    from prompt_toolkit.completion import Completer

    from ..chat.tools.toolset import Toolset
    from ..later import Later
    from ..store import GitStore
    from ..writer.session import Session
    from .repl.environment import ChatEnvironment
    from .repl.prompt import PromptFaces
    from .repl.repl import Repl
    from .repl.terminal import ReplyKeys

app = typer.Typer()


def _header(c: Context) -> Callable[[str], dict]:
    """How the chat's new sessions begin: where gs runs and which gs, through the context's redactor."""
    return lambda session_id: c.redactor().header(session_id, cwd=os.getcwd(),
                                                  generator=f"gitsessions {__version__}")


def _latest_session(store: GitStore) -> str:
    """The session ``gs chat -c`` continues: the current one (HEAD's), else the one saved last."""
    last = store.current_or_last()
    if last is None:
        raise NoCurrentSession("chat -c", head=store.head_ref(), sessions=bool(store.session_ids()))
    return last


def _pull_on_open(c: Context, store: GitStore) -> None:
    """With ``sync: {pull: on-open}`` in config, pull before a session opens.

    A remote that cannot be reached (or none configured) is one warning line: the session
    opens as this machine has it.
    """
    if c.config.sync_pull != "on-open":
        return
    from .remote import _default, _print_pull, _remotes

    where = _default(c, None)
    try:
        report = _remotes(c, store).pull(where)
    except RemoteError as exc:
        err(f"gs: warning: no pull on open: {exc}; the session opens as it is here")
        return
    _print_pull(report, where)


def _stdin_lines() -> Generator[str, None, None]:
    """Read prompts from a pipe: one line each (ended by LF, CRLF or CR, as Python's universal newlines).

    Raises:
        GitSessionsError: a line that is not UTF-8 text (:func:`.ask_prompt.prompt_text`): the
            prompts before it are saved, it and those after it are not read.
    """
    from .ask_prompt import STDIN_FIX, prompt_text

    # Over sys.stdin's bytes (not fd 0), so that a caller that replaced sys.stdin (an
    # in-process run) is read too.
    offset = 0
    for raw in sys.stdin.buffer:
        lines = _LINE_END.split(prompt_text(raw, "stdin", STDIN_FIX, offset=offset))
        yield from lines[:-1] if lines[-1] == "" else lines
        offset += len(raw)


#: What ends a piped prompt's line.
_LINE_END = re.compile(r"\r\n|\r|\n")


@app.command(cls=WaitCommand)
def chat(
    ctx: typer.Context,
    session: Annotated[str | None, typer.Argument(
        help="Session id (new or existing) or a revision: SESSION~N, SESSION^, SESSION@COMMIT.")] = None,
    fork_as: Annotated[str | None, typer.Option("--fork", help="Continue in a new session NEW forked at SESSION.",
                                                metavar="NEW")] = None,
    cont: Annotated[bool, typer.Option("-c", "--continue", help="Resume the current session (HEAD), else "
                                       "the most recently saved one.")] = False,
    resume: Annotated[bool, typer.Option("-r", "--resume", help="Pick the session to resume from a list "
                                         "(newest first; type to filter by title or prompt).")] = False,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model name for this run "
                                              "(/model NAME saves one in the session).")] = None,
    system: Annotated[str | None, typer.Option("--system", "-s", metavar="TEXT", help=(
        "The system prompt, saved in the session: for its next turns (also /system TEXT)."))] = None,
    raw: Annotated[bool, typer.Option("--raw", help="Replies as the model wrote them, not rendered "
                                      "(also config render: false).")] = False,
    recap: Annotated[int | None, typer.Option("--recap", min=0, metavar="N", show_default=False,
                                              help="Show the last N turns of an earlier conversation on "
                                              "opening it (default: 1 on a terminal, 0 when piped).")] = None,
    tools: Annotated[str | None, typer.Option("--tools", metavar="LIST", show_default=False, help=(
        "Tools the model may use: read, write, shell, time (or all; also config tools:). Reads run inside the "
        "working directory; every write and command asks first."))] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Run every write and command without asking "
                                      "(also config permissions: {allow: [...]}).")] = False,
    wait: WaitOption = 0.0,
) -> None:
    """Chat interactively; every finished turn is a commit on the session's branch.

    With no SESSION a new session gets an 8-hex-digit id. A past revision (work~2) is
    continued in a fork (--fork NEW, else work-1): the original branch never moves. When
    stdin is not a terminal, each input line is one prompt (or slash command), in order.

    Examples:
        gs chat                             # a new session
        gs chat work                        # open 'work' (made if new)
        gs chat -c                          # go on where you stopped
        gs chat -r                          # pick from a list
        gs chat work~2 --fork work-b        # go on from two turns back
        gs chat work --recap 3              # open 'work' showing its last 3 turns
        gs chat --tools read,write          # the model may read files, and edit them when you allow
    """
    from ..later import Later
    from ..provider.connect import connect

    c: Context = ctx.obj
    if sum((cont, resume, session is not None)) > 1:
        raise typer.BadParameter("give one of SESSION, --continue and --resume")
    toolset = toolset_for(c, tools, yes)
    interactive = sys.stdin.isatty()
    if resume and not interactive:
        raise typer.BadParameter("--resume picks from a list on a terminal; name the SESSION instead "
                                 "(gs list shows them) or use --continue")
    path = c.store_path()  # checked here: it may print, and the store may be opened behind the prompt
    stores = Later(lambda: c.open_store(path), name="gs-store")
    with contextlib.ExitStack() as stack:
        # Opened now when what comes before the prompt reads it (the session's name, a pull),
        # else behind the first prompt.
        first = not interactive or resume or cont or c.config.sync_pull == "on-open"
        if first:
            store = stack.enter_context(stores.result())
            _pull_on_open(c, store)
        picked = session_picker(c, store)() if resume else None  # Ctrl+C here: gs exits 130
        if resume and picked is None:
            err("nothing opened (gs chat -r lists the sessions again)")
            return
        sid = picked or (_latest_session(store) if cont else session)
        asked = _Asked(fork_as=fork_as, model=model, system=system, render=c.config.render and not raw,
                       recap=recap, toolset=toolset, wait=wait)
        opening = _Opening()
        faces = _terminal_faces(c, opening, toolset) if interactive else _piped_faces()
        # On a terminal the model client is built while the user types (see BackgroundProvider).
        provider = stack.enter_context(connect(c.config, model=model, notify=err, background=interactive))
        repl = _Start(c, stores, sid, asked, opening, faces, provider, first=first).run(stack)
        _said_at_the_end(c, stores.result(), repl)  # the chat's store, opened by now
    if not interactive and (repl.failed_turns or repl.unsaved):
        raise typer.Exit(1)  # a script learns that some prompts got no reply, or are not saved (as gs ask's)


class _Asked(NamedTuple):
    """What the command line asked of the chat, beyond which session: read as the chat starts."""

    fork_as: str | None
    model: str | None
    system: str | None
    render: bool  # replies and recaps rendered (config ``render:``, not ``--raw``)
    recap: int | None
    toolset: Toolset | None
    wait: float


class _Faces(NamedTuple):
    """How the chat reads and writes: a terminal's prompt, else a pipe's lines."""

    read_line: Callable[[str], str | None]
    write: Callable[[str], None]
    show: Callable[[str], None]  # text as it is (a rendered recap)
    answers: Callable[[str], str | None]  # a tool's question answered
    keys: ReplyKeys | None  # a terminal's Ctrl+C and Ctrl+Z handling (see .repl.terminal)
    prompt: PromptFaces | None  # a terminal's prompt: ``/edit``'s input, ``leave()``
    lines: Generator[str, None, None] | None  # a pipe's lines, closed as the chat ends


class _Opening:
    """The chat while it opens behind its first prompt, as that prompt reads it."""

    def __init__(self) -> None:
        self.ready = threading.Event()  # set when the session is open, or failed to open
        self.shown: list[Callable[[], None]] = []  # run once the first prompt is on the screen
        self.built: Repl | None = None  # the chat once built: the prompt's history reads its session
        self.tab: GitStore | None = None  # the store Tab reads, once open
        self._completers: list[Completer] = []  # what Tab completes: made at the first Tab

    def on_shown(self) -> None:
        """The first prompt is on the screen: start what waited for it."""
        for start in self.shown:
            start()

    def session(self) -> Session | None:
        """The chat's current session (None: not open yet)."""
        return self.built.session if self.built is not None else None

    def completer(self) -> Completer | None:
        """What Tab completes (None: the session failed to open)."""
        self.ready.wait()  # a Tab right after the prompt is drawn: for the little the opening takes
        if self.tab is not None and not self._completers:  # the slash commands are imported here, not before a turn
            from .repl.complete import ChatCompleter
            from .repl.slash import COMMANDS

            self._completers.append(ChatCompleter(self.tab, COMMANDS))
        return self._completers[0] if self._completers else None


def _terminal_faces(c: Context, opening: _Opening, toolset: Toolset | None) -> _Faces:
    """The faces of a chat on a terminal: a prompt drawn before the chat behind it is open."""
    from .repl.prompt import terminal_io

    keys, faces = terminal_io(c, on_shown=opening.on_shown, session=opening.session, completer=opening.completer,
                              opened=opening.ready.wait)
    if toolset is not None:
        toolset.running = keys.cancellable  # Ctrl+C stops a command as it cancels a reply
    return _Faces(faces.read_line, faces.write, faces.show, terminal_answers(keys), keys, faces, None)


def _piped_faces() -> _Faces:
    """The faces of a chat behind a pipe: a line each prompt (and each tool's question), plain text out."""
    lines = _stdin_lines()

    def read_line(_prompt: str) -> str | None:
        return next(lines, None)

    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    return _Faces(read_line, write, write, read_line, None, None, lines)


class _Start:
    """One ``gs chat``'s start: its first prompt, the session opened behind it, the model client built beside it.

    On a terminal the first prompt is drawn before the session is open: the session opens in
    a thread of its own (:meth:`open_chat`) and the model client is built in another, both
    once the prompt is on the screen; what they write is shown above it. Behind a pipe, or
    when the opening must come first, the session opens before the first line is read.

    Args:
        c: the command's context.
        stores: the store, opened once (now, or behind the prompt).
        sid: the session (or revision) to open (None: a new one).
        asked: what the command line asked of the chat.
        opening: what the first prompt reads of the chat as it opens.
        faces: how the chat reads and writes (a terminal's when they have a prompt).
        provider: the model client (on a terminal, built in the background).
        first: the store was opened before the prompt (it is the command's to close).
    """

    def __init__(self, c: Context, stores: Later[GitStore], sid: str | None, asked: _Asked, opening: _Opening,
                 faces: _Faces, provider: Any, *, first: bool):
        self.c, self.stores, self.sid, self.asked = c, stores, sid, asked
        self.opening, self.faces, self.provider, self.first = opening, faces, provider, first
        self.interactive = interactive = faces.prompt is not None
        self.replay = FirstLine(faces.read_line)
        # a new session's id (the one the early prompt shows, if any), checked once the store is open
        self.drawn = None if sid else (early.held_session() or secrets.token_hex(4))
        # A plain name's session is opened behind the first prompt; one opened after a wait, a
        # past revision (forked: its id is known once it is open), or on a dumb terminal (its
        # prompt is plain text, nothing can be written above it) before it.
        self.behind = (interactive and not asked.wait and asked.fork_as is None
                       and not any(ch in (sid or "") for ch in "~^@") and not early.dumb_terminal(os.environ))

    def run(self, stack: contextlib.ExitStack) -> Repl:
        """Draw the first prompt, open the chat (behind it or before), run it until it ends; return it."""
        from ..later import Later

        opening = Later(self.open_chat, name="gs-open")
        self._schedule(opening)
        first_prompt = chat_prompt(self.sid or self.drawn or "")
        early.hand_over(first_prompt if self.behind else "")  # before the mode below is taken as the terminal's own
        keys, lines = self.faces.keys, self.faces.lines
        with keys.installed(sys.stdin.fileno()) if keys else contextlib.nullcontext(), \
                contextlib.closing(lines) if lines is not None else contextlib.nullcontext():
            if self.behind:
                self.replay.read(first_prompt)  # drawn before the session is open; the line waits for it
            repl = opening.result()
            if not self.first:
                stack.enter_context(repl.store)
            self.faces.write("")  # what the opening wrote after the first prompt ended, before what comes next
            repl.run(recap=not self.behind)  # a pipe's reader is closed (sys.stdin detached) here, not when collected
        return repl

    def _schedule(self, opening: Later[Repl]) -> None:
        """Start the model client and the opening: once the first prompt is shown, or the opening now."""
        from ..provider.connect import BackgroundProvider

        provider = self.provider
        if not isinstance(provider, BackgroundProvider):
            collect_cycles()
        build = provider.start if isinstance(provider, BackgroundProvider) else lambda then: None
        # The first request waits for the model client (the SDK: most of the time), so it is
        # built first; the session opens beside it (the store is the request's too).
        # Keys typed ahead (held by the early prompt) would end the first prompt before the session
        # is open, its banner below them: it opens first (beside the client the line waits for).
        ahead = self.behind and early.typed_ahead()
        self.behind = self.behind and not ahead
        if self.behind:
            self.opening.shown.extend((lambda: build(then=self._client_built), opening.start))
        else:
            if ahead:
                build(then=self._client_built)
            opening.result()
            self.opening.shown.append(lambda: build(then=self._client_built))

    def _client_built(self) -> None:
        """In the client's thread, once it is built: what a long chat and its first reply want."""
        collect_cycles()  # a long-lived chat
        from .display.markdown import load_behind
        from .display.stream import renders

        if self.replay.reading and renders(self.c.output, self.asked.render):  # the user is still typing: else
            load_behind()  # it waits for the first token, which draws plain text meanwhile

    def open_chat(self) -> Repl:
        """Open the store and the session, build the chat, greet: in a thread when behind the prompt.

        What it writes behind the prompt is shown above it; a failure ends the prompt, and is
        raised where the chat waits for it.
        """
        from ..ids import new_session_id
        from .repl.repl import Repl

        store = None
        try:
            store = self.stores.result()
            env = self._environment(store)
            keys = self.faces.keys
            self.opening.built = opened = Repl(
                store, keys.guard(self.provider) if keys else self.provider,
                self.sid or new_session_id(store, token_hex=drawn_first(self.drawn)), env,
                model=self.asked.model, fork_as=self.asked.fork_as, wait=self.c.lock_wait(self.asked.wait))
            self._greet(opened)
            if self.interactive:
                self.opening.tab = store
            if self.behind:
                opened.show_recap()
        except BaseException:
            if store is not None and not self.first:
                store.close()
            if self.behind and self.faces.prompt is not None:
                self.faces.prompt.leave()  # the prompt ends; the error is raised where the chat waits for it
            raise
        finally:
            self.opening.ready.set()
        return opened

    def _environment(self, store: GitStore) -> ChatEnvironment:
        """The chat's outside world: these faces, the config's settings, the terminal's faculties."""
        from ..chat.compaction import auto_compaction
        from .display.rendered import recap_drawer
        from .display.stream import rendered_replies
        from .repl.environment import ChatEnvironment

        c, asked, faces, terminal = self.c, self.asked, self.faces, self.interactive
        recap = (1 if terminal else 0) if asked.recap is None else asked.recap
        return ChatEnvironment(
            read_line=self.replay, write=faces.write, new_header=_header(c), system=c.config.system,
            max_steps=c.config.max_steps, redactor=c.redactor(), warnings=c.warnings,
            reply=rendered_replies(c.output, asked.render, behind=True) if terminal else None, recap=recap,
            draw_recap=recap_drawer(c.output, asked.render, faces.show) if terminal else None,
            config=c.config, footer=terminal, compaction=auto_compaction(c.config), toolset=asked.toolset,
            save_behind=terminal, permit=approver(faces.write, faces.answers, c.redactor()) if asked.toolset else None,
            **chat_faces(c, store, faces.prompt.edit if faces.prompt is not None else None))

    def _greet(self, opened: Repl) -> None:
        """The session's ``--system``, then the lines a chat starts with: the banner, which tools are on."""
        write, toolset = self.faces.write, self.asked.toolset
        if self.asked.system is not None and opened.session is not None:
            opened.session.set_system(self.asked.system)
        if self.interactive and opened.session is not None:  # above the first prompt when behind it
            write(f"gs {__version__} · session {opened.session.id} · model {opened.current_model()} · "
                  "/help for commands\n")
        if toolset is not None:  # which tools are on, or that this model can use none
            from ..log.request import offered_tools

            note = offered_tools(self.provider.calls_tools, None, asked=True)[1]
            write(f"({note})\n" if note else tools_line(toolset))


def _said_at_the_end(c: Context, store: GitStore, repl: Repl) -> None:
    """After the chat: pack and push in the background; say where each session visited was saved."""
    from .admin import pack_in_background
    from .remote import push_in_background

    pack_in_background(store)
    push_in_background(c, store)
    saved = [s for s in repl.visited if store.tip(s)]
    for s in saved:
        err(f"session {s} saved at {short(store.tip(s))}; resume with: gs chat {s}")
    if not saved:
        err("nothing was saved (no turns)")


@app.command(cls=WaitCommand)
def ask(
    ctx: typer.Context,
    words: Annotated[list[str] | None, typer.Argument(
        help="The session (or a revision: work~1) and the prompt, as the rules above read them; "
        "PROMPT '-' is stdin alone.", show_default=False, metavar="[SESSION] PROMPT")] = None,
    system: Annotated[str | None, typer.Option("--system", "-s", metavar="TEXT", help=(
        "The system prompt, saved in the session: for this turn and the session's next ones."))] = None,
    attach: Annotated[list[str] | None, typer.Option("--attach", "-a", metavar="FILE", show_default=False, help=(
        "Add FILE's text after the prompt, under its name (text files only; repeatable)."))] = None,
    new: Annotated[bool, typer.Option("--new", help="Start a new session: every word is the prompt.")] = False,
    session_name: Annotated[str | None, typer.Option(
        "--session", "-S", metavar="NAME", help="Send in session NAME, new or existing (or a revision: work~1); "
        "every word is the prompt.")] = None,
    fork_as: Annotated[str | None, typer.Option("--fork", help="Send in a new session NEW forked at SESSION.",
                                                metavar="NEW")] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model name for this run.")] = None,
    raw: Annotated[bool, typer.Option("--raw", help="The reply as the model wrote it, not rendered "
                                      "(also config render: false; never rendered when piped).")] = False,
    tools: OneTurnTools = None,
    yes: OneTurnYes = False,
    wait: WaitOption = 0.0,
) -> None:
    """Send one prompt, print the reply on stdout, save the turn as a commit.

    The words are read as llm reads them: the first is the session when it names an existing
    one (or a revision of one: work~1), the others the prompt; else every word is the prompt,
    in a new session (its id is printed on stderr): gs ask what is a ref. -S NAME names the
    session, new or existing: gs ask -S work "hi" makes work. --new makes every word the
    prompt of a new session.

    Text piped into stdin follows the prompt after a blank line; piped into gs ask SESSION, an
    existing one, it is the prompt. PROMPT - is stdin alone. Trailing newlines are trimmed.
    stdin is read whenever it is not a terminal: in a loop that reads stdin, give </dev/null.

    --attach adds a text file at the end, under its name, as piped text is (a binary one is
    refused). --system is saved in the session: sent with this turn and its next ones.

    Examples:
        gs ask "What is a git ref?"         # a new session; its id on stderr
        gs ask -S work "What is a ref?"     # in session work, made if new
        gs ask work "And a tag?"            # the next turn of work (it exists)
        gs ask work and a tag               # more words: the prompt, as work exists
        gs ask what is a tag                # "what" is no session: all of it, in a new session
        gs ask "explain" < f.py             # as cat f.py | gs ask "explain": the prompt, a blank line, the file
        gs ask work < diff.txt              # what is piped in is the prompt, in work
        gs ask -s "Be terse." -a notes.md work "summarize"
        gs ask --tools read,shell --yes "run the tests and say what fails"
    """
    from ..ids import new_session_id
    from ..writer.opening import open_revision
    from .ask_prompt import ask_input, names_session
    from .one_turn import send_one

    c: Context = ctx.obj
    toolset = toolset_for(c, tools, yes)
    with c.store() as store:
        _pull_on_open(c, store)
        rev, prompt = ask_input(words or (), attach or (), new=new, fork_as=fork_as,
                                names_session=lambda word: names_session(store, word), session=session_name)
        session, note = open_revision(store, rev or new_session_id(store), fork_as=fork_as,
                                      new_header=_header(c), redactor=c.redactor(), warnings=c.warnings,
                                      wait=c.lock_wait(wait), system=c.config.system)
        if note:
            err(note)
        send_one(c, store, session, prompt, model, raw=raw, system=system, toolset=toolset)


@app.command(cls=WaitCommand)
def retry(
    ctx: typer.Context,
    rev: Annotated[str, typer.Argument(
        help="The session whose last turn is tried again, or a revision of it (work~2).", metavar="REV")],
    fork_as: Annotated[str | None, typer.Option("--fork", help="The new attempt's session id (default: REV-N).",
                                                metavar="NEW")] = None,
    model: Annotated[str | None, typer.Option("--model", "-m", help="Model name for this run.")] = None,
    tools: OneTurnTools = None,
    yes: OneTurnYes = False,
    wait: WaitOption = 0.0,
) -> None:
    """Ask the model again for the last turn's prompt of REV, in a new sibling fork.

    The new attempt forks at the save before that turn, so the earlier attempt stays where it
    was; stderr says where both live. The reply is printed on stdout, as gs ask prints it.

    Examples:
        gs retry work                       # the last turn again, in work-1
        gs retry work~1 --fork work-b       # the turn before, as work-b
        gs retry work --tools read,shell --yes
    """
    from ..history.reading import read_revision
    from ..writer.redo import attempt_at, open_attempt, where_both_live
    from .one_turn import send_one

    c: Context = ctx.obj
    toolset = toolset_for(c, tools, yes)
    with c.store() as store:
        _pull_on_open(c, store)
        target = read_revision(store, rev, c.redactor(), c.warnings)
        attempt = attempt_at(store, target)
        session = open_attempt(store, attempt, fork_as=fork_as, redactor=c.redactor(), warnings=c.warnings,
                               wait=c.lock_wait(wait))
        err(where_both_live(attempt, target.session_id, session.id, f"gs chat {target.session_id}",
                            as_turn=session.next_turn))
        send_one(c, store, session, attempt.prompt, model, toolset=toolset)
