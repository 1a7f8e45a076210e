"""Writing an import plan into the store: one commit per session, taken ids never touched.

Another tool's conversations (ChatGPT's) are written a commit per turn, incrementally, by
:func:`~.branches.write_conversation`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

from ..errors import HookRefused, InvalidSessionId, SessionExists, SessionLocked, TransferError
from ..ids import check_new_id, check_session_id, new_session_id, taken_by
from ..log.commits import commit_message
from ..secrets.redact import NO_REDACTION, Redactor
from ..secrets.redact_many import redact_events
from ..store import SessionStore
from ..writer.opening import hold
from .branches import Outcome, SourceIndex, write_conversation
from .read import TOOLS, ImportedSession, ImportPlan
from .readers.conversation import ImportedConversation


@dataclass
class ImportResult:
    """What :func:`write_import` did.

    Attributes:
        imported: ``(id, commit, session)`` per session written.
        clashes: ``(id, reason)`` per session not written because its id is taken.
        conversations: per conversation of another tool, what each of its branches became.
        stopped: why the file's conversations stopped before their end (it changed since
            the check, as it was read again), saying which were imported and which not;
            None when every one was taken.
    """

    imported: list[tuple[str, str, ImportedSession]] = field(default_factory=list)
    clashes: list[tuple[str, str]] = field(default_factory=list)
    conversations: list[tuple[ImportedConversation, list[Outcome]]] = field(default_factory=list)
    stopped: TransferError | None = None


def _clash_text(session_id: str, other: str) -> str:
    if other.startswith("archive/"):
        return f"session {session_id!r} exists as the archived session {other[len('archive/'):]!r} (refs/{other})"
    if other == session_id:
        return f"session {session_id!r} already exists"
    return f"session {session_id!r} would differ only by case from the existing {other!r}"


def _redacted(conv: ImportedConversation, redactor: Redactor) -> ImportedConversation:
    """The conversation with secrets replaced: title, source id (they name the session) and every event."""
    redacted = iter(redact_events(redactor, [ev for _, chunks in conv.branches for chunk in chunks for ev in chunk]))
    branches = [(key, [[next(redacted) for _ in chunk] for chunk in chunks]) for key, chunks in conv.branches]
    spawned = (redactor.text(conv.spawned[0]), conv.spawned[1]) if conv.spawned else None
    forked = None if conv.forked_from is None else redactor.text(conv.forked_from)
    awaits = None if conv.awaits is None else redactor.text(conv.awaits)
    return dataclasses.replace(conv, title=redactor.text(conv.title), source_id=redactor.text(conv.source_id),
                               branches=branches, spawned=spawned, forked_from=forked, awaits=awaits,
                               spawned_call=None if conv.spawned_call is None else redactor.text(conv.spawned_call),
                               family=tuple(redactor.text(other) for other in conv.family))


def _until_stopped(convs: Collection[ImportedConversation], done: ImportResult) -> Iterator[ImportedConversation]:
    """``convs``, until the next cannot be read (a large export changed as it is read again): ``done.stopped``.

    Those given before were made of the bytes the check read, and stay written: the error
    says how many were imported and how many not (never "nothing was written" after a
    write), and to run the import again.
    """
    taken = 0
    try:
        for conv in convs:
            yield conv
            taken += 1
    except TransferError as exc:
        total = len(convs)
        if not taken:
            said = "nothing was written"
        elif taken == total:  # what follows the last one changed
            said = f"its {total} conversations were imported, as said above, as they were before"
        else:
            said = (f"the first {taken} of its {total} conversations were imported, as said above, and the other "
                    f"{total - taken} were not")
        done.stopped = TransferError(exc.source, exc.reason, f"{said}; run the import again")


def redact_plan(plan: ImportPlan, redactor: Redactor) -> ImportPlan:
    """Return ``plan`` with its conversations redacted (what :func:`write_import` does first, done ahead).

    The plan is then written with ``redacted=True``: text is redacted once, at this door.
    """
    return dataclasses.replace(plan, conversations=[_redacted(conv, redactor) for conv in plan.conversations])


def check_plan(plan: ImportPlan, as_id: str | None) -> None:
    """Refuse an ``--as`` that cannot apply to ``plan`` (before anything is written).

    Raises:
        TransferError: ``--as`` with an archive of several sessions, an invalid ``--as``,
            or a plan with nothing to import.
    """
    if as_id is not None and plan.kind in TOOLS:
        raise TransferError(plan.source, f"--as does not apply to {plan.kind} conversations: each one's id comes "
                            "from its own id (the same on every machine); import without --as")
    if plan.kind in TOOLS:
        if not plan.conversations and not plan.skipped:
            raise TransferError(plan.source, "it holds no conversation with a prompt")
        return
    if as_id is not None:
        try:
            check_session_id(as_id)
        except InvalidSessionId as exc:
            raise TransferError(plan.source, str(exc)) from None
        if len(plan.sessions) + len(plan.clashes) > 1:
            raise TransferError(plan.source, f"--as names one session, but the archive holds "
                                f"{len(plan.sessions) + len(plan.clashes)} non-empty sessions; import "
                                "without --as (each keeps its id)")
    if not plan.sessions and not plan.clashes:
        empty = f" (skipped: {', '.join(plan.skipped)})" if plan.skipped else ""
        raise TransferError(plan.source, f"it holds no non-empty session{empty}")


def write_import(store: SessionStore, plan: ImportPlan, *, as_id: str | None = None,
                 header_extra: dict[str, Any] | None = None,
                 redactor: Redactor = NO_REDACTION, warnings: list[str] | None = None,
                 keep_paths: bool = False, progress: Callable[[int, int], None] | None = None,
                 index: SourceIndex | None = None, redacted: bool = False) -> ImportResult:
    """Write the sessions of a validated plan, one commit each (``import: <file>``).

    A session whose id is taken (by a session, also differing only by case, or by an archived
    one) is never touched: for a single-session file that is an error; for an archive the
    session is skipped and reported in :attr:`ImportResult.clashes`, and the others are written.

    The current session (HEAD) stays as it was: an import is no chat of the user's.

    The file's text enters a session here, so this is its door: events, header and source
    name are redacted first, and the commit message is derived from the redacted events;
    another tool's conversations (title, source id, every event) too, before
    :func:`~.branches.write_conversation` writes them a commit per turn.

    Args:
        store: the session store.
        plan: from :func:`read_import`.
        as_id: the id for a single-session file.
        header_extra: fields of headers made here (``cwd``, ``generator``; ``source_file``, the
            file's absolute path, for another tool's conversations with ``keep_paths``).
        redactor: replaces secrets in what is written (:data:`NO_REDACTION`: redaction is off).
        warnings: gets a line per orphaned journal recovered into a new session.
        keep_paths: keep ``source_file`` in the headers of another tool's conversations (local
            paths are left out of what may be shared unless asked for); ``cwd`` never is.
        progress: called with ``(done, total)`` after each of another tool's conversations
            (the command line's progress bar).
        index: the sessions that may hold conversations, kept from the files imported before
            (read from the store once; None: read for this file).
        redacted: the plan's conversations went through :func:`redact_plan` with ``redactor``
            already (read ahead in a worker process).

    Returns:
        What was written and what was skipped (and, when a large export changed as it was
        read again, where that stopped: :attr:`ImportResult.stopped`).

    Raises:
        TransferError: a refused ``--as`` or an empty plan.
        SessionExists: the id of a single-session file is taken.
        SessionLocked: never; a session being written by another process counts as a clash.
    """
    check_plan(plan, as_id)
    if plan.conversations:
        return _write_conversations(store, plan, header_extra=header_extra, redactor=redactor, keep_paths=keep_paths,
                                    progress=progress, index=index, redacted=redacted)
    result = ImportResult(clashes=[(sid, _clash_text(sid, other) + " in the same file")
                                   for sid, other in plan.clashes])
    for item in plan.sessions:
        _write_session(store, plan, item, _session_id(store, plan, item, as_id), result,
                       header_extra=header_extra, redactor=redactor, warnings=warnings)
    return result


def _write_conversations(store: SessionStore, plan: ImportPlan, *, header_extra: dict[str, Any] | None,
                         redactor: Redactor, keep_paths: bool, progress: Callable[[int, int], None] | None,
                         index: SourceIndex | None, redacted: bool) -> ImportResult:
    """Write another tool's conversations, a commit per turn (see :func:`write_import`'s arguments)."""
    # Never gs's own working directory: the commits would depend on where gs ran.
    extra = {k: v for k, v in (header_extra or {}).items() if k != "cwd" and (keep_paths or k != "source_file")}
    done = ImportResult()
    index = (index if index is not None else SourceIndex()).read_from(store)  # once, not per conversation
    for i, conv in enumerate(_until_stopped(plan.conversations, done)):
        if not redacted:
            conv = _redacted(conv, redactor)  # what is said of it is redacted too (its source id)
        try:
            outcomes = write_conversation(store, conv, redactor, header_extra=extra, index=index)
            # What is said of it, not its events: a large export's conversations are not all held at once.
            done.conversations.append((dataclasses.replace(conv, branches=[]), outcomes))
        except TransferError as exc:  # another writer holds one of its sessions: the others go on
            done.clashes.append((f"{conv.tool} conversation {conv.source_id}", exc.reason))
        if progress is not None:
            progress(i + 1, len(plan.conversations))
    return done


def _session_id(store: SessionStore, plan: ImportPlan, item: ImportedSession, as_id: str | None) -> str:
    """The id ``item`` is written under: ``as_id``, else its own, else a new one; checked before its lock.

    Raises:
        TransferError: its own id is not a valid gs id, or the store refuses the new id.
    """
    sid = as_id or item.session_id
    if sid is None:
        sid = new_session_id(store)
    elif as_id is None:
        try:
            check_session_id(sid)
        except InvalidSessionId:
            raise TransferError(plan.source, f"its session id {sid!r} is not a valid gs id; "
                                "give one with --as ID") from None
    try:
        if store.tip(sid) is None:
            check_new_id(store, sid)  # before its lock: no file is named by a secret
    except InvalidSessionId as exc:
        raise TransferError(plan.source, str(exc)) from None
    return sid


def _write_session(store: SessionStore, plan: ImportPlan, item: ImportedSession, sid: str, result: ImportResult, *,
                   header_extra: dict[str, Any] | None, redactor: Redactor, warnings: list[str] | None) -> None:
    """Write ``item`` as session ``sid`` into ``result``'s imported, or its clash into ``result``'s clashes.

    A single-session file raises its clash instead (an archive's other sessions go on).

    Raises:
        TransferError: another writer holds ``sid``, or it is taken (a single-session file).
        SessionExists: it was made between the check and the write (a single-session file).
        HookRefused: a commit hook refused the import.
    """
    single = plan.kind != "geekagent"
    try:  # an orphaned new session of that id is committed first
        held = hold(store, sid, redactor=redactor, warnings=warnings)
    except SessionLocked as exc:
        why = SessionLocked.said(exc.writing or sid, exc.holder)
        if single:
            raise TransferError(plan.source, why) from None
        result.clashes.append((sid, why))
        return
    with held:
        other = taken_by(store, sid)
        if other is not None:
            if single:
                raise TransferError(plan.source, _clash_text(sid, other),
                                    "it was left untouched; import under another id with --as ID")
            result.clashes.append((sid, _clash_text(sid, other) + "; it was left untouched"))
            return
        source, events = plan.source, list(item.events)
        header = (redactor.header(sid, imported_from=source, **(header_extra or {})) if item.header is None
                  else redactor.value(item.header))  # the file's own: as its events, redacted
        source = redactor.text(source)
        events = redact_events(redactor, events)
        message = commit_message(sid, events, kind="import", source=source)
        try:
            commit = store.append_many(sid, [(events, message, None)], expected_tip=None, header=header,
                                       current=False)[0]  # an import leaves HEAD where it is
        except SessionExists as exc:  # created between our check and the write
            if single:
                raise
            result.clashes.append((sid, str(exc)))
            return
        except HookRefused as exc:  # an import keeps no journal: say what the user must redo
            raise HookRefused(exc.hook, exc.path, exc.status, exc.output, action="import") from None
        result.imported.append((sid, commit, item))
