"""Commands that read sessions without talking to a model: ``list``, ``log``, ``show``.

They import neither the model client nor the terminal UI, so they start fast.
"""

from __future__ import annotations

import sys
from enum import Enum
from typing import Annotated

import typer

from .. import render
from ..session import try_recover
from .common import Context, err, short

app = typer.Typer()


@app.command("list")
def list_(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array, stable keys.")] = False,
) -> None:
    """List sessions: id, title, turns, messages, last saved, tip commit.

    Example: gs list --json
    """
    c: Context = ctx.obj
    with c.store() as store:
        for sid in store.journaled():
            try_recover(store, sid)
        rows = [render.session_row(info) for info in store.list_sessions()]
    rows.sort(key=lambda r: r["saved"] or "", reverse=True)
    if as_json:
        print(render.dumps(rows))
        return
    if not rows:
        err("no sessions yet; start one with: gs chat")
        return
    width = max(len(r["id"]) for r in rows)
    print(f"{'SESSION':<{width}}  {'TURNS':>5}  {'MSGS':>5}  {'SAVED':<16}  COMMIT   TITLE")
    for r in rows:
        saved = r["saved"][:16].replace("T", " ") if r["saved"] else "-"
        title = r["title"] if not r["error"] else f"[unreadable: {r['error']}]"
        print(f"{r['id']:<{width}}  {r['turns']:>5}  {r['messages']:>5}  {saved:<16}  "
              f"{short(r['commit'])}  {title[:60]}")


@app.command()
def log(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="Session id.")],
    n: Annotated[int | None, typer.Option("-n", "--max-count", help="Show at most N commits.")] = None,
    oneline: Annotated[bool, typer.Option("--oneline", help="One line per commit.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="JSON array, newest first.")] = False,
) -> None:
    """Show a session's commits newest first: commit, time, turn, subject.

    Example: gs log work -n 5 --oneline
    """
    c: Context = ctx.obj
    with c.store() as store:
        try_recover(store, session)
        commits = store.log(session, limit=n)
    rows = [render.commit_row(info) for info in commits]
    if as_json:
        print(render.dumps(rows))
        return
    for info, r in zip(commits, rows, strict=True):
        if oneline:
            print(f"{short(info.commit)} {r['subject']}")
            continue
        print(f"commit {info.commit}")
        print(f"Date:   {r['time']}")
        if r["model"]:
            print(f"Model:  {r['model']}")
        print(f"\n    {r['subject']}\n")


class ShowFormat(str, Enum):
    text = "text"
    json = "json"
    jsonl = "jsonl"


@app.command()
def show(
    ctx: typer.Context,
    session: Annotated[str, typer.Argument(help="Session id.")],
    fmt: Annotated[ShowFormat, typer.Option("--format", "-f", help="text, json or jsonl.")] = ShowFormat.text,
) -> None:
    """Show a session's transcript at its tip.

    json: an object with id, commit, header, events and messages (the derived
    chat-completions messages); jsonl: session.jsonl exactly as stored.

    Example: gs show work --format json
    """
    c: Context = ctx.obj
    with c.store() as store:
        try_recover(store, session)
        snap = store.load(session)
    if fmt is ShowFormat.jsonl:
        sys.stdout.buffer.write(snap.raw)
        sys.stdout.flush()
    elif fmt is ShowFormat.json:
        print(render.dumps(render.show_object(snap)))
    else:
        sys.stdout.write(render.transcript_text(snap.events))
