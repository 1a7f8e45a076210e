"""Moving sessions in and out: ``export`` (markdown, html, json, jsonl) and ``import``."""

from __future__ import annotations

import os
import sys
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from .. import __version__, transfer
from ..history import read_revision
from ..tree import rev_or_current
from ..turns import turn_count
from .common import Context, err, short

app = typer.Typer()


class ExportFormat(str, Enum):
    """``gs export --format`` values."""

    markdown = "markdown"
    md = "markdown"  # an alias (-f md), as the .md suffix
    json = "json"
    jsonl = "jsonl"
    html = "html"


_SUFFIXES = {".md": "markdown", ".markdown": "markdown", ".html": "html", ".htm": "html",
             ".json": "json", ".jsonl": "jsonl"}


@app.command()
def export(
    ctx: typer.Context,
    rev: Annotated[str | None, typer.Argument(
        help="What to export: SESSION, SESSION~N, SESSION^, SESSION@COMMIT, SESSION@{N} or SESSION@{DATE} "
        "(default: the current session).", metavar="REV")] = None,
    fmt: Annotated[ExportFormat | None, typer.Option(
        "--format", "-f", metavar="FORMAT", help="markdown (or md) or html to read, json (as gs show --format json) "
        "or jsonl (session.jsonl byte for byte). Default: from the -o suffix, else markdown.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write to FILE instead of stdout.",
                                                metavar="FILE")] = None,
) -> None:
    """Export a session (at any revision) as Markdown, HTML, JSON or JSONL.

    The json and jsonl exports can be read back with 'gs import'.

    Examples:
        gs export work                      # Markdown on stdout
        gs export work --format html -o work.html
        gs export work -f md > work.md
    """
    c: Context = ctx.obj
    if fmt is None:
        fmt = ExportFormat(_SUFFIXES.get(output.suffix.lower(), "markdown") if output else "markdown")
    with c.store() as store:
        rev = rev_or_current(store, rev, "export")
        target = read_revision(store, rev, c.redactor(), c.warnings)  # recovers a turn a crashed gs left in the journal
        snap = store.load(target.session_id, target.commit)
    data = transfer.export_bytes(snap, fmt.value)
    if output is None or str(output) == "-":
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
        return
    try:
        output.write_bytes(data)
    except OSError as exc:
        err(f"gs: cannot write {output}: {exc.strerror or exc}")
        raise typer.Exit(1) from None
    err(f"exported {target.session_id} at {short(target.commit)} as {fmt.value} to {output}")


@app.command("import")
def import_(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(help="The file to import ('-' reads stdin).")],
    as_id: Annotated[str | None, typer.Option("--as", help="Id for the imported session (one-session files only).",
                                              metavar="ID")] = None,
) -> None:
    """Import sessions from a file; the format is detected from its content.

    Reads gs's own jsonl and json exports (kept event for event), a chat-completions
    messages array (or an object with "messages"), and GeekAgent's .geekagent/sessions.json
    (every non-empty session keeps its id). The whole file is checked before anything is
    written; a taken id is never overwritten (it is reported, and the exit status is 1).
    Prints the id of each imported session on stdout.

    Examples:
        gs import .geekagent/sessions.json
        gs import work.jsonl --as work-copy
        gs import - < chat.json
    """
    c: Context = ctx.obj
    if file == "-":
        source, data = "stdin", sys.stdin.buffer.read()
    else:
        source = Path(file).name or file
        try:
            data = Path(file).read_bytes()
        except FileNotFoundError:
            raise transfer.TransferError(file, "file not found") from None
        except IsADirectoryError:
            raise transfer.TransferError(file, "it is a directory, not a file") from None
        except OSError as exc:
            raise transfer.TransferError(file, exc.strerror or str(exc)) from None
    plan = transfer.read_import(data, source)
    transfer.check_plan(plan, as_id)
    header_extra = {"cwd": os.getcwd(), "generator": f"gitsessions {__version__}"}
    with c.store() as store:
        result = transfer.write_import(store, plan, as_id=as_id, header_extra=header_extra,
                                       redactor=c.redactor(), warnings=c.warnings)
    for note in plan.notes:
        err(f"note: {note}")
    for sid, commit, item in result.imported:
        turns = turn_count(item.events)
        err(f"imported {sid} ({turns} turn{'s' if turns != 1 else ''}, commit {short(commit)}) from {source}; "
            f"open it with: gs chat {sid}")
        for note in item.notes:
            err(f"  note: {note}")
        print(sid)
    for skipped in plan.skipped:
        err(f"skipped {skipped}")
    for sid, why in result.clashes:
        err(f"gs: not imported {sid}: {why}")
    if result.clashes:
        raise typer.Exit(1)
