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
from ..render import plural
from ..tree import rev_or_current
from ..turns import turn_count
from .admin import pack_in_background
from .common import Context, err, short
from .import_progress import ImportProgress

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


class ImportFormat(str, Enum):
    """``gs import --from`` values (``auto``: detected from the content)."""

    auto = "auto"
    gs = "gs"
    messages = "messages"
    geekagent = "geekagent"
    chatgpt = "chatgpt"


def _read_file(file: str) -> tuple[str, bytes]:
    if file == "-":
        return "stdin", sys.stdin.buffer.read()
    try:
        return Path(file).name or file, Path(file).read_bytes()
    except FileNotFoundError:
        raise transfer.TransferError(file, "file not found") from None
    except IsADirectoryError:
        raise transfer.TransferError(file, "it is a directory, not a file") from None
    except OSError as exc:
        raise transfer.TransferError(file, exc.strerror or str(exc)) from None


_SAID = {"new": "imported {sid} ({turns}) from {what}; open it with: gs chat {sid}",
         "grew": "{sid}: {turns} new, from {what}",
         "fork": "{sid}: a branch of {what} ({turns} of its own)"}


@app.command("import")
def import_(
    ctx: typer.Context,
    files: Annotated[list[str], typer.Argument(help="The files to import ('-' reads stdin).", metavar="FILE")],
    as_id: Annotated[str | None, typer.Option("--as", help="Id for the imported session (one-session files only).",
                                              metavar="ID")] = None,
    fmt: Annotated[ImportFormat, typer.Option(
        "--from", metavar="FORMAT",
        help="What the files are: auto (detect from the content), gs, messages, geekagent or chatgpt.",
    )] = ImportFormat.auto,
    keep_paths: Annotated[bool, typer.Option("--keep-paths", help="Keep local paths (the working directory) in the "
                                             "headers of imported conversations.")] = False,
) -> None:
    """Import sessions from files; the format is detected from the content.

    Reads gs's own jsonl and json exports (kept event for event), a chat-completions
    messages array (or an object with "messages"), GeekAgent's .geekagent/sessions.json
    (every non-empty session keeps its id) and ChatGPT's data export (conversations.json,
    or the export .zip: each turn a commit dated when it was said, every edited or
    regenerated branch a fork). Each file is checked whole before anything of it is
    written; a taken id is never overwritten. Importing a conversation again adds only
    what is new (nothing, new turns, or new branches as forks). Prints the id of each
    session written on stdout; the exit status is 1 when any file failed.

    Examples:
        gs import .geekagent/sessions.json
        gs import work.jsonl --as work-copy
        gs import ~/Downloads/chatgpt-export.zip
        gs import - < chat.json
    """
    c: Context = ctx.obj
    header_extra = {"cwd": os.getcwd(), "generator": f"gitsessions {__version__}"}
    failed = sessions = turns = skipped = 0
    progress = ctx.with_resource(ImportProgress(len(files), c.output))  # a bar on a terminal
    index = transfer.SourceIndex()  # the sessions holding conversations, read once for all the files
    for file in files:
        progress.next_file()
        try:
            source, data = _read_file(file)
            plan = transfer.read_import(data, source, fmt=fmt.value)
            transfer.check_plan(plan, as_id)
            with c.store() as store:
                result = transfer.write_import(store, plan, as_id=as_id, header_extra=header_extra,
                                               redactor=c.redactor(), warnings=c.warnings, keep_paths=keep_paths,
                                               progress=progress.conversations, index=index)
        except transfer.TransferError as exc:
            if len(files) == 1:
                raise
            err(f"gs: {exc}")
            failed += 1
            continue
        before = sessions
        for note in plan.notes:
            err(f"note: {note}")
        for sid, commit, item in result.imported:
            n = turn_count(item.events)
            sessions, turns = sessions + 1, turns + n
            err(f"imported {sid} ({plural(n, 'turn')}, commit {short(commit)}) from {source}; "
                f"open it with: gs chat {sid}")
            for note in item.notes:
                err(f"  note: {note}")
            print(sid)
        for conv, outcomes in result.conversations:
            what = f"{conv.tool} conversation {conv.source_id}"
            for sid, how, n in outcomes:
                if how != "same":
                    sessions, turns = sessions + 1, turns + n
                    err(_SAID[how].format(sid=sid, turns=plural(n, "turn"), what=what))
                    print(sid)
            if any(how != "same" for _, how, _ in outcomes):
                for note in conv.notes:
                    err(f"  note: {note}")
        if result.conversations and sessions == before and len(files) == 1:  # of many, the summary says it once
            err(f"nothing new in {source}")
        skipped += len(plan.skipped) + len(result.clashes)
        for skip in plan.skipped:
            err(f"skipped {skip}")
        for sid, why in result.clashes:
            err(f"gs: not imported {sid}: {why}")
        if result.clashes:
            failed += 1
    if sessions:
        with c.store() as store:
            pack_in_background(store)  # an import writes a pack per session: merged before lookups slow down
    if len(files) > 1 or failed or sessions != 1:
        written = (f"{plural(sessions, 'session')} written, {plural(turns, 'turn')}" if sessions or len(files) == 1
                   else "nothing new")
        err(f"{plural(len(files), 'file')}{f' ({failed} failed)' if failed else ''}, {written}, {skipped} skipped")
    if failed:
        raise typer.Exit(1)
