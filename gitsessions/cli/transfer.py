"""Moving sessions in and out: ``export`` (markdown, html, json, jsonl) and ``import``."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Collection, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Annotated

import typer

from .. import __version__
from ..errors import SessionLocked, TransferError
from ..history.reading import read_revision
from ..history.tree import rev_or_current
from ..log.turns import turn_count
from ..store.lock import LockWait
from ..text import plural
from ..transfer import ahead, discover, seen
from ..transfer.branches import SourceIndex
from ..transfer.export import export_bytes
from ..transfer.read import TOOLS, ImportPlan, read_import
from ..transfer.write import ImportResult, check_plan, write_import
from .admin import pack_in_background
from .common import Context, collect_cycles, err, short
from .import_progress import ImportProgress
from .watch import watch_files

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
    data = export_bytes(snap, fmt.value)
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
    claude_ai = "claude-ai"
    claude_code = "claude-code"
    codex = "codex"
    llm = "llm"


def _read_file(file: str) -> tuple[str, bytes | None]:
    """The name an import file is called by, and the bytes of stdin or a pipe (a file is read a piece at a time)."""
    if file == "-":
        return "stdin", sys.stdin.buffer.read()
    with suppress(OSError):  # a file that cannot be opened is said by the import
        if not stat.S_ISREG(os.stat(file).st_mode) and not os.path.isdir(file):  # a FIFO, <(...): read once
            return Path(file).name or file, Path(file).read_bytes()
    return Path(file).name or file, None


_SAID = {"new": "imported {sid} ({turns}) from {what}; open it with: gs chat {sid}",
         "grew": "{sid}: {turns} new, from {what}",
         "fork": "{sid}: a branch of {what} ({turns} of its own)",
         "archived": "{what}: archived as {sid}; gs restore {sid} to import into it again",
         "title": "{sid}: titled {title!r}, as {what} is now"}


#: How long an import waits for another one to finish (seconds): longer than a large
#: import takes (1,000 transcripts in < 60 s), bounded so that cron runs do not pile up.
IMPORT_WAIT_S = 300.0


@dataclass
class ImportTally:
    """What an import run did, for its summary line.

    Attributes:
        files: the files tried.
        failed: those that failed (each said as it failed).
        turns: the turns the sessions written gained.
        skipped: what was left out (said as it was).
        wait: how long the run waits for another import to finish, seconds.
        written: the ids of the sessions written, in order.
        sources: what each of them came from, in the same order: the other tool's
            conversation (``claude-code 1639e4d5-...``), or the file of gs's own sessions.
        failures: each failure, said by its file or by the other tool's conversation,
            never by a session of gs's (whose id is made of its first prompt's words): what
            a capture's log keeps.
    """

    files: int = 0
    failed: int = 0
    turns: int = 0
    skipped: int = 0
    wait: float = IMPORT_WAIT_S
    written: list[str] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    #: The sessions holding conversations, read once for every file of the run.
    index: SourceIndex = field(default_factory=SourceIndex)
    progress: ImportProgress | None = None  # the bar on a terminal
    #: Takes the import lock (:func:`_one_import`) for the rest of the run, the first time a
    #: file is written: before the index is read; a file that fails creates no repo.
    stack: ExitStack | None = None
    locked: bool = False
    ahead: ahead.ReadAhead | None = None  # the files read ahead, and those imported whole before
    #: Where each tool keeps its files (a Codex fork's origin is looked for there too).
    folders: dict[str, Path] = field(default_factory=lambda: discover.folders(os.environ, Path.home()))

    @property
    def sessions(self) -> int:
        """How many sessions were written."""
        return len(self.written)

    def wrote(self, session_id: str, turns: int, source: str) -> None:
        """Count a session written with its new turns, and print its id on stdout (what a script reads).

        Args:
            session_id: the session.
            turns: the turns it gained.
            source: what it came from (see :attr:`sources`).
        """
        self.written.append(session_id)
        self.sources.append(source)
        self.turns += turns
        print(session_id, flush=True)

    def hold(self, c: Context) -> None:
        """Hold the import lock from now until the run's end (see :func:`_one_import`)."""
        if self.stack is not None and not self.locked:
            try:
                self.stack.enter_context(_one_import(c, self.wait))
            except TransferError as exc:  # the whole run, not this file: the next would wait again
                err(f"gs: {exc}")
                raise typer.Exit(1) from None
            self.locked = True


def _import_file(c: Context, file: str, fmt: str, tally: ImportTally, *, as_id: str | None, keep_paths: bool,
                 alone: bool, found: bool) -> None:
    """Import one file and say what it gave; a failure is said (the file named as given) and counted."""
    tally.files += 1
    if tally.progress is not None:
        tally.progress.next_file()
    try:
        written = _write_file(c, file, fmt, tally, as_id=as_id, keep_paths=keep_paths, alone=alone, found=found)
    except TransferError as exc:
        if file not in ("-", exc.source) and exc.source == Path(file).name:  # d1/ and d2/ may hold the same name
            exc = TransferError(f"{exc.source} ({file})", exc.reason, exc.hint)
        err(f"gs: {exc}")
        tally.failed += 1  # even alone: the summary follows, and the exit status is 1
        tally.failures.append(str(exc))
        return
    if written is None:
        return
    source, plan, result = written
    before = tally.sessions
    for note in plan.notes:
        err(f"note: {note}")
    _say_sessions(result, source, tally)
    _say_conversations(result, tally)
    if result.conversations and tally.sessions == before and alone and not result.stopped:  # of many: the summary
        err(f"nothing new in {source}")
        for note in dict.fromkeys(note for conv, _ in result.conversations for note in conv.notes):
            err(f"  note: {note}")  # a turn still under way, held for the next import, says why nothing is new
    _say_left_out(plan, result, tally)


def _write_file(c: Context, file: str, fmt: str, tally: ImportTally, *, as_id: str | None, keep_paths: bool,
                alone: bool, found: bool) -> tuple[str, ImportPlan, ImportResult] | None:
    """Read one import file and write what it holds into the store.

    Returns:
        The name the file is called by, what it held and what was written; None when there
        was nothing to write (imported whole before, said when ``alone``; or, ``found`` in a
        tool's folder, a file of titles or snapshots alone).

    Raises:
        TransferError: the file cannot be read, or what it holds cannot be written (``as_id``).
    """
    if file != "-" and os.path.isdir(file) and (src := discover.source(fmt)) and src.in_folder is not None:
        raise TransferError(file, f"it holds no {src.label} {src.what}",  # else it was read as its files
                            f"name the folder {src.label} keeps them in (its projects folder, or one of its folders)")
    header_extra = {"cwd": os.getcwd(), "generator": f"gitsessions {__version__}"}
    if keep_paths and file != "-":  # another tool's conversation: where its file was, not where gs ran
        header_extra["source_file"] = str(Path(file).resolve())
    source, data = _read_file(file)
    key, ready = tally.ahead.take(file, data, header_extra.get("source_file")) if tally.ahead else (None, None)
    # Imported whole before: not read, unless --as names where (checked, and written there, as for a new file).
    if tally.ahead and key and as_id is None and tally.ahead.seen.unchanged(c.store, key):
        if alone:
            err(f"nothing new in {source}")
        return None
    plan = ready or read_import(data, source, fmt=fmt, path=None if file == "-" else Path(file), keep_paths=keep_paths,
                                folders=tally.folders)
    if found and plan.kind in TOOLS and not plan.conversations:
        tally.skipped += 1  # a file of titles or snapshots alone, found in the tool's folder
        return None
    check_plan(plan, as_id)
    if plan.sessions or plan.conversations:  # a file of skipped ones alone writes nothing, creates no repo
        tally.hold(c)
    with c.store() as store:
        result = write_import(store, plan, as_id=as_id, header_extra=header_extra, redactor=c.redactor(),
                              warnings=c.warnings, keep_paths=keep_paths, index=tally.index,
                              redacted=ready is not None,
                              progress=tally.progress.conversations if tally.progress else None)
        if tally.ahead and key:
            tally.ahead.seen.record(store, key, plan, result)
    return source, plan, result


def _say_sessions(result: ImportResult, source: str, tally: ImportTally) -> None:
    """Say each session written whole (its id on stdout), and count it."""
    for sid, commit, item in result.imported:
        n = turn_count(item.events)
        err(f"imported {sid} ({plural(n, 'turn')}, commit {short(commit)}) from {source}; "
            f"open it with: gs chat {sid}")
        for note in item.notes:
            err(f"  note: {note}")
        tally.wrote(sid, n, source)


def _say_conversations(result: ImportResult, tally: ImportTally) -> None:
    """Say what each of another tool's conversations gave (a session written: its id on stdout), and count it."""
    for conv, outcomes in result.conversations:
        what = f"{conv.tool} conversation {conv.source_id}"
        source = f"{conv.tool} {conv.source_id}"
        for sid, how, n in outcomes:
            if how == "archived":  # gs rm'd: not written again
                tally.skipped += 1
                err(_SAID[how].format(sid=sid, what=what))
            elif how == "title":  # renamed in its tool: a session written, unless its turns already said so
                err(_SAID[how].format(sid=sid, title=conv.title.removeprefix("sub-agent: "), what=what))
                if not any(s == sid and h not in ("same", "title") for s, h, _ in outcomes):
                    tally.wrote(sid, 0, source)
            elif how != "same":
                err(_SAID[how].format(sid=sid, turns=plural(n, "turn"), what=what))
                tally.wrote(sid, n, source)
        if any(how not in ("same", "archived") for _, how, _ in outcomes):
            for note in conv.notes:
                err(f"  note: {note}")


def _say_left_out(plan: ImportPlan, result: ImportResult, tally: ImportTally) -> None:
    """Say what was not imported (skipped, a clash, the rest after a stop), and count it."""
    tally.skipped += len(plan.skipped) + len(result.clashes)
    for skip in plan.skipped:
        err(f"skipped {skip}")
    for sid, why in result.clashes:
        err(f"gs: not imported {sid}: {why}")
    if plan.kind in TOOLS:  # each named by its conversation: the reason names its session
        tally.failures += [f"not imported {what}: its session was busy (another gs wrote it) or moved meanwhile"
                           for what, _ in result.clashes]
    elif result.clashes:
        tally.failures.append(f"{plural(len(result.clashes), 'session')} of {plan.source} not imported")
    if result.stopped:  # what was written is said above, and how many were not
        err(f"gs: {result.stopped}")
        tally.failures.append(str(result.stopped))
    tally.failed += bool(result.clashes or result.stopped)


@contextmanager
def _one_import(c: Context, wait: float) -> Iterator[None]:
    """Hold the repo's import lock: imports run one at a time, and each reads what the one before wrote.

    Two imports of the same files at once (cron overlapping ``--watch``) would each find no
    session holding a conversation and both write it (the second as ``-1`` forks).

    Raises:
        TransferError: another import still held it after ``wait`` seconds.
    """
    with c.store() as store:
        lock = store.import_lock()
    if lock is None:
        yield
        return
    try:
        lock.acquire(LockWait(wait, lambda _, holder: err(f"gs: waiting for another import ({holder})")))
    except SessionLocked as exc:
        raise TransferError("now", f"another import ({exc.holder}) still runs after {wait:g} s",
                                     "run the import again when it is done") from None
    try:
        yield
    finally:
        lock.release()


def import_files(c: Context, paths: list[str], fmt: str, *, as_id: str | None = None, keep_paths: bool = False,
                 found: bool = False, listed: Collection[str] = (), alone: bool = False,
                 wait: float = IMPORT_WAIT_S) -> ImportTally:
    """Import ``paths`` one after the other, saying on stderr what each gave (and each session's id on stdout).

    The one run of an import, for ``gs import`` and for a capture: one import at a time in
    the repo (its lock taken for the rest of the run before the first write), the files read
    ahead, those imported whole before passed over, and the packs merged in the background after.

    Args:
        c: the command's context.
        paths: the files ('-' for stdin).
        fmt: the format asked for (``auto`` or one of :data:`~gitsessions.transfer.read.FORMATS`).
        as_id: the id of a one-session file's session.
        keep_paths: record each conversation's file path in its session's header.
        found: the files were found in their tool's folder (a file with no conversation is
            passed over, not refused).
        listed: the files found in a folder named (each counts as found).
        alone: the only file named (its "nothing new" is said).
        wait: how long to wait for another import to finish, seconds.

    Returns:
        What the run did (a file that failed is counted there, not raised).

    Raises:
        typer.Exit: another import still ran after ``wait`` seconds (said on stderr).
    """
    tally = ImportTally(wait=wait)
    with ImportProgress(len(paths), c.output) as tally.progress, ExitStack() as tally.stack:
        # the index of sessions is read under the lock: what an import before wrote
        tally.ahead = tally.stack.enter_context(ahead.ReadAhead(
            paths, fmt, keep_paths, c.redactor(),  # the files seen, whose store is opened once for the run
            tally.stack.enter_context(seen.SeenFiles(c.repo_path() / "gs" / "imported")), folders=tally.folders))
        for file in paths:
            _import_file(c, file, fmt, tally, as_id=as_id, keep_paths=keep_paths, alone=alone,
                         found=found or file in listed)
        if tally.locked:  # what it recorded, under the lock
            tally.ahead.seen.save()
        if tally.sessions:
            with c.store() as store:
                pack_in_background(store)  # an import leaves packs of its lines: merged before lookups slow down
    return tally


def _summary(tally: ImportTally, found: bool) -> None:
    if (found or tally.files > 1) and not tally.sessions and not tally.failed:
        err("nothing new")
    err(f"{plural(tally.files, 'file')}{f' ({tally.failed} failed)' if tally.failed else ''}, "
        f"{plural(tally.sessions, 'session')} written, {plural(tally.turns, 'turn')}, {tally.skipped} skipped")


def _discovered(fmt: str) -> list[str]:
    """The files of the tool ``--from`` names, found where it keeps them; says what was found."""
    src = discover.source(fmt)
    if src is None:
        named = ", ".join(discover.SOURCES)
        raise typer.BadParameter(f"name the FILEs to import (only --from {named} finds its files by itself)")
    where, paths = discover.discover(fmt, os.environ, Path.home())
    if not where.exists():
        raise TransferError(str(where), f"no {src.label} folder here",
                                     f"if {src.label} keeps its files elsewhere, set {src.variable}, or name the files")
    err(f"found {plural(len(paths), f'{src.label} {src.what}')} in {where}")
    return [str(p) for p in paths]


def _named(fmt: str, files: list[str], *, say: bool = True) -> tuple[list[str], set[str]]:
    """The files named, each folder of a format that reads folders (``--from claude-code``) as the files it holds.

    A folder holding none stays, for its import to say so; a folder of another format too
    (the reader says it is no file).

    Returns:
        The files, and those of them found in a folder (read as the tool's folder is: a file
        of titles alone is skipped, no failure).
    """
    out: list[str] = []
    listed: set[str] = set()
    for file in files:
        found = discover.in_folder(fmt, Path(file)) if file != "-" and os.path.isdir(file) else None
        if not found:
            out.append(file)
            continue
        if say:
            src = discover.SOURCES[fmt]
            err(f"found {plural(len(found), f'{src.label} {src.what}')} in {file}")
        out += [str(p) for p in found]
        listed.update(str(p) for p in found)
    return out, listed


@app.command("import")
def import_(
    ctx: typer.Context,
    files: Annotated[list[str] | None, typer.Argument(
        help="The files to import ('-' reads stdin). None with --from claude-code: that tool's own files; "
        "a folder with --from claude-code: the transcripts in it.",
        metavar="FILE")] = None,
    as_id: Annotated[str | None, typer.Option("--as", help="Id for the imported session (one-session files only).",
                                              metavar="ID")] = None,
    fmt: Annotated[ImportFormat, typer.Option(
        "--from", metavar="FORMAT",
        help="What the files are: auto (detect from the content), gs, messages, geekagent, chatgpt, claude-ai, "
        "claude-code, codex or llm.",
    )] = ImportFormat.auto,
    keep_paths: Annotated[bool, typer.Option("--keep-paths", help="Record the path of the file each conversation of "
                                             "another tool came from in its session's header, and keep the "
                                             "local paths a tool wrote into its own text (Codex's context, "
                                             "Claude Code's compaction summaries and notes).")] = False,
    watch: Annotated[bool, typer.Option("--watch", help="Keep importing the files (or the tool's folder) as they "
                                        "change, until Ctrl+C.")] = False,
) -> None:
    """Import sessions from files; the format is detected from the content.

    Reads gs's own jsonl and json exports (kept event for event), a chat-completions
    messages array (or an object with "messages"), GeekAgent's .geekagent/sessions.json
    (every non-empty session keeps its id), ChatGPT's data export (conversations.json,
    or the export .zip: each turn a commit dated when it was said, every edited or
    regenerated branch a fork), Claude Code's transcripts (each rewound branch a fork,
    each sub-agent a session of its own), Claude.ai's export, Codex rollouts and llm's
    logs.db (read-only). With --from claude-code and no FILE, the
    transcripts are found where Claude Code keeps them (CLAUDE_CONFIG_DIR, else
    ~/.claude); a folder named with --from claude-code (such a folder, its projects
    folder or one of its folders) is read likewise. Each file is checked whole before
    anything of it is written; a taken id is never overwritten. Importing a
    conversation again adds only what is new (nothing, new turns, or new branches as
    forks). Prints the id of each session written on stdout; the exit status is 1 when
    any file failed.

    Examples:
        gs import .geekagent/sessions.json
        gs import work.jsonl --as work-copy
        gs import ~/Downloads/chatgpt-export.zip
        gs import --from claude-code
        gs import --from claude-code --watch
        gs import --from claude-code ~/backup/.claude/projects
        gs import - < chat.json
    """
    c: Context = ctx.obj
    collect_cycles()  # an import of many files, or of a large one, frees each conversation's cycles
    found = not files
    paths, listed = (_discovered(fmt.value), set()) if found else _named(fmt.value, list(files or []))
    if watch and "-" in paths:
        raise typer.BadParameter("--watch reads files again as they change; stdin ('-') cannot be")
    # The bar is gone before a watch begins: it is drawn again only for a round with files to import.
    tally = import_files(c, paths, fmt.value, as_id=as_id, keep_paths=keep_paths, found=found, listed=listed,
                         alone=len(paths) == 1 and not (found or listed or watch))
    if len(paths) > 1 or found or tally.failed or tally.sessions != 1:
        _summary(tally, found)
    if watch:
        def again(changed: list[str]) -> None:
            round_tally = ImportTally()  # the index read again: another import may have written since
            try:
                # per round: a watch does not keep cron's imports out, and its bar is this round's
                with ImportProgress(len(changed), c.output) as round_tally.progress, ExitStack() as round_tally.stack:
                    for file in changed:
                        _import_file(c, file, fmt.value, round_tally, as_id=as_id, keep_paths=keep_paths,
                                     alone=False, found=True)
            except TransferError as exc:
                err(f"gs: {exc}")

        if found:
            where = discover.discover(fmt.value, os.environ, Path.home())[0]
            watch_files([where], lambda: [str(p) for p in discover.discover(fmt.value, os.environ,
                                                                                Path.home())[1]], again)
        else:  # a folder named is listed again each round: a new transcript in it counts
            watch_files(sorted({Path(f).resolve() if os.path.isdir(f) else Path(f).resolve().parent
                                for f in files or []}), lambda: _named(fmt.value, list(files or []), say=False)[0],
                        again)
        return  # Ctrl+C ends a watch: what failed was said as it happened
    if tally.failed:
        raise typer.Exit(1)
