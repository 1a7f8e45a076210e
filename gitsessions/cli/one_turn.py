"""One turn sent from the command line, its reply printed as it streams: ``gs ask`` and ``gs retry``."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

import typer

from ..errors import DiskFull, GitSessionsError
from ..render import terminal_safe
from ..store import GitStore
from .admin import pack_in_background
from .common import Context, err, short
from .remote import push_in_background

if TYPE_CHECKING:
    from ..session import Session


def send_one(c: Context, store: GitStore, session: Session, prompt: str, model: str | None, *,
              system: str | None = None) -> None:
    """Send ``prompt`` in the open ``session`` (closed here), print the reply, say what was saved.

    The one turn of ``gs ask`` and ``gs retry``; ``system`` is saved first (:meth:`Session.set_system`).

    Raises:
        GitSessionsError: the model answered with an error (the prompt is saved).
        typer.Exit: 130 when Ctrl+C cancelled the reply, 1 when the turn did not complete.
    """
    from ..chat.connect import connect
    from ..chat.loop import run_turn

    sid = session.id
    shown: list[str] = []
    try:
        if system is not None:
            session.set_system(system)
        with connect(c.config, model=model, notify=err) as provider:
            tty = sys.stdout.isatty()

            def on_text(text: str) -> None:
                shown.append(text)
                sys.stdout.write(terminal_safe(text) if tty else text)
                sys.stdout.flush()

            result = run_turn(session, provider, prompt, system=c.config.system,
                              max_steps=c.config.max_steps, on_text=on_text)
    except DiskFull as exc:
        # the reply shown ends its line; a prompt not even journaled is handed back
        sys.stdout.write(("\n" if shown else "") + (prompt + "\n" if exc.kept in ("prompt", "nothing") else ""))
        raise
    finally:
        session.close()
    pack_in_background(store)
    push_in_background(c, store)
    if result.text:
        sys.stdout.write("\n")
    sys.stdout.flush()
    if result.commit:
        err(f"[{sid} {short(result.commit)}] turn saved ({result.reason})")
    if result.reason == "error":
        raise GitSessionsError(f"{result.error} (the prompt is saved in session {sid})")
    if result.reason == "aborted":
        raise typer.Exit(130)  # Ctrl+C cancelled the reply (the turn is saved, marked)
    if result.reason != "completed":
        raise typer.Exit(1)
