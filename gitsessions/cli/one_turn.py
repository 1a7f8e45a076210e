"""One turn sent from the command line, its reply printed as it streams: ``gs ask`` and ``gs retry``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer

from ..errors import DiskFull, GitSessionsError
from ..store import GitStore
from ..text import REDACTED_NOTE
from .admin import pack_in_background
from .common import Context, err, short
from .display.render import terminal_safe
from .display.stream import PlainReply, rendered_replies
from .remote import push_in_background

if TYPE_CHECKING:
    from ..chat.tools.toolset import Toolset
    from ..writer.session import Session


def send_one(c: Context, store: GitStore, session: Session, prompt: str, model: str | None, *,
             raw: bool = False, system: str | None = None, toolset: Toolset | None = None) -> None:
    """Send ``prompt`` in the open ``session`` (closed here), print the reply, say what was saved.

    The one turn of ``gs ask`` and ``gs retry``. On a terminal the reply is rendered
    (:func:`.stream.rendered_replies`) unless ``raw``; ``system`` is saved in the session
    first (:meth:`Session.set_system`); the history is compacted first when the request would
    fill the model's window (:class:`gitsessions.chat.compaction.AutoCompact`). ``toolset``: the
    opt-in tools offered (no one is asked about a write or a command: only ``--yes`` or the
    config's ``permissions`` let one run).

    A call that needed approval is refused (no one is asked): stderr names it, once per tool.

    Raises:
        GitSessionsError: the model answered with an error (the prompt is saved).
        typer.Exit: 130 when Ctrl+C cancelled the reply, 1 when the turn did not complete or
            a call was refused for want of approval (the turn is saved either way).
    """
    from ..chat.compaction import auto_compaction
    from ..chat.loop import run_turn
    from ..log.request import offered_tools
    from ..log.usage import context_window
    from ..provider.connect import connect

    sid = session.id
    tty = sys.stdout.isatty()

    def write(text: str) -> None:
        sys.stdout.write(terminal_safe(text) if tty else text)
        sys.stdout.flush()

    rendered = rendered_replies(c.output, c.config.render and not raw)
    try:
        if system is not None:
            session.set_system(system)
        with connect(c.config, model=model, notify=err) as provider:
            compaction = auto_compaction(c.config)
            if compaction is not None:  # the window as config names it (the server is not asked here)
                name = model or session.model
                window = context_window(c.config, name or provider.model)
                if note := compaction.before_turn(session, provider, prompt, window, model=name):
                    err(f"({note})")  # stdout is the reply's
            view = rendered() if rendered is not None else PlainReply(write)
            try:
                tools, note = offered_tools(provider.calls_tools, None, asked=toolset is not None)
                if note:
                    err(f"gs: {note}")
                result = run_turn(session, provider, prompt, max_steps=c.config.max_steps, tools=tools,
                                  toolset=toolset, model=model or session.model, options=session.options,
                                  on_text=view.text)
            finally:
                view.end()  # the reply shown ends its line
    except DiskFull as exc:
        if exc.kept in ("prompt", "nothing"):  # a prompt not even journaled is handed back
            sys.stdout.write(prompt + "\n")
        raise
    finally:
        session.close()
    pack_in_background(store)
    push_in_background(c, store)
    sys.stdout.flush()
    if result.commit:
        err(f"[{sid} {short(result.commit)}] turn saved ({result.reason})")
    if result.redacted:
        err(f"({REDACTED_NOTE})")
    for name in dict.fromkeys(result.unapproved):
        err(f"gs: {name} refused: gs ask asks no one; pass --yes or set permissions.allow: [{name}] in the config")
    if result.reason == "error":
        raise GitSessionsError(f"{result.error}; the prompt is saved in session {sid}: gs retry {sid} sends it again")
    if result.reason == "aborted":
        raise typer.Exit(130)  # Ctrl+C cancelled the reply (the turn is saved, marked)
    if result.reason != "completed" or result.unapproved:
        raise typer.Exit(1)  # a call refused for want of approval: the reply may rest on it
