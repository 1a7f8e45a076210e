"""Writing a conversation another tool kept into sessions: a commit per turn, again and again.

A conversation (:class:`ImportedConversation`) is a list of branches, each a list of
chunks: the events before the first prompt, then one list per turn. The first branch is
the session (named by :func:`~gitsessions.ids.imported_session_id`), the others forks at
the turn where they leave it. Each chunk is one commit whose author date is when it was
said; the first commit holds the header (the source tool and conversation id).

Importing is incremental and idempotent: the sessions already holding this
conversation (their header's ``source``) are read back, and each branch is matched
against them turn by turn:

- a branch they hold already (or that a session continued in gs holds) writes nothing;
- a branch that extends a session's whole line is appended to it (a fast-forward);
- any other branch becomes a fork at the last turn it shares with the session closest to
  it: the old line is never rewritten.

Titles are left out of the matching (a session's renames since are passed over). A title
changed in the tool is saved as ``gs title`` saves one, on the session of the active branch,
when it is not the one the imports before saw (a title given in gs stays until then).
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from dataclasses import dataclass
from typing import Any

from ..errors import ConcurrentUpdate, CorruptSession, HookRefused, SessionExists, SessionLocked, TransferError
from ..ids import CommitId, SessionId, fork_name, imported_fork_id, imported_session_id, taken_by
from ..log.commits import CommitMessage, Lineage, commit_message
from ..log.events import Event, make_event
from ..log.transcript import summary_moved
from ..log.turns import turn_count
from ..secrets.redact import Redactor
from ..store import SessionStore
from .readers.conversation import ImportedConversation

#: What happened to one branch: ``new`` (a new session), ``grew`` (turns appended),
#: ``fork`` (a new branch at its fork point), ``same`` (nothing new), ``archived`` (an archived
#: session holds it, or the start of it: nothing written, ``gs restore`` brings it back);
#: ``title`` (after the others: the session was given the title the tool has now).
Outcome = tuple[str, str, int]
#: One commit to write: its events, message and author date (epoch s).
Planned = tuple[list[Event], CommitMessage, "int | None"]


@dataclass
class _Line:
    """A session holding this conversation: its events and the commit after each count of them."""

    session_id: str
    events: list[Event]
    at: dict[int, CommitId]
    tip: CommitId
    lineage: Lineage | None
    claimed: bool = False
    titled: str | None = None  # the title its imports saw last (its own renames in gs are not theirs)
    source: dict | None = None  # its header's: the conversation its first commit imported


def _key(ev: Event) -> tuple[Any, ...]:
    return (ev.type, None if ev.type == "session/title" else ev.data, ev.ignorable)


def _aligned(flat: list[Event], held: list[Event]) -> dict[int, int]:
    """Map the length of each start of ``flat`` that ``held`` holds to how many of ``held``'s events hold it.

    A title ``held`` has where ``flat`` has none (a rename since: ``gs title``, an import's)
    is passed over and counted with the start before it, so a renamed session goes on growing.
    """
    out, i, j = {}, 0, 0
    while True:
        while j < len(held) and held[j].type == "session/title" and (i == len(flat) or flat[i].type != held[j].type):
            j += 1
        out[i] = j
        if i == len(flat) or j == len(held) or _key(flat[i]) != _key(held[j]):
            return out
        i, j = i + 1, j + 1


def _said(chunk: list[Event]) -> int:
    """When a commit's turn was said (its prompt), epoch s; what comes before the prompt does not date it.

    A tool's context for a turn (Codex's) or a compaction before it opens the turn's commit.
    """
    return next((ev.time for ev in chunk if ev.type == "turn/start"), chunk[0].time) // 1000


class SourceIndex:
    """Which live sessions may hold a conversation: read once per import, not once per conversation.

    A session is found by the hash its name ends with (the name an import gave it) or by the
    ``Imported-From`` trailer of its tip (``<tool> <id>``: a session renamed since keeps it),
    one pass over the refs and one commit read per session; the sessions an import writes
    are added as it goes. A session continued in gs *and* renamed is found by neither.
    """

    _DIGEST = re.compile(r".*-([0-9a-f]{8})(?:-[0-9a-f]{6}(?:-\d+)?)?")

    def __init__(self) -> None:
        self.by_digest: dict[str, set[str]] = {}
        self.by_source: dict[str, set[str]] = {}
        #: The archived sessions (``gs rm``) by the same two keys: they hold what they held.
        self.archived: tuple[dict[str, set[str]], dict[str, set[str]]] = ({}, {})
        self.read = False

    def read_from(self, store: SessionStore) -> SourceIndex:
        """Read the store's sessions, the first time only (the command line keeps one index for all its files)."""
        if self.read:
            return self
        self.read = True
        for sid, tip in store.tips().items():
            self.add(sid)
            try:
                source = store.commit_info(tip).message.fields.imported_from
            except store.unreadable:
                continue
            if source:
                self.by_source.setdefault(source, set()).add(sid)
        for name in store.archived_ids():
            if (kept := store.archive_ref(name)) is None:
                continue
            try:
                source = store.commit_info(kept).message.fields.imported_from
            except store.unreadable:
                continue
            self.add(name, source, archived=True)
        return self

    def add(self, sid: str, source: str | None = None, *, archived: bool = False) -> None:
        """Count ``sid`` in (a session just written, from ``source`` when given; an archived one)."""
        by_digest, by_source = self.archived if archived else (self.by_digest, self.by_source)
        if (m := self._DIGEST.fullmatch(sid)) is not None:
            by_digest.setdefault(m.group(1), set()).add(sid)
        if source:
            by_source.setdefault(source, set()).add(sid)

    def candidates(self, base: str, source: str, *, archived: bool = False) -> list[str]:
        """The sessions that may hold the conversation whose id is ``base`` and trailer ``source``, sorted."""
        by_digest, by_source = self.archived if archived else (self.by_digest, self.by_source)
        return sorted(by_digest.get(base.rsplit("-", 1)[-1], set()) | by_source.get(source, set()))


def _lines(store: SessionStore, source: dict, base: str, index: SourceIndex, archived: bool = False,
           headed: bool = True, heads: list[dict | None] | None = None) -> list[_Line]:
    """Every live (or archived) session whose header says it holds ``source``, among the index's candidates.

    ``heads``: the headers' sources that say so too (a fork of another conversation's session
    has that session's header); ``headed=False``: whatever its header.
    """
    out = []
    for sid in index.candidates(base, f"{source['tool']} {source['id']}", archived=archived):
        tip = store.archive_ref(sid) if archived else store.tip(sid)
        if tip is None:  # moved or removed since the index was read
            continue
        try:
            snap = store.load(sid, tip)
        except CorruptSession:  # a damaged session is no line to build on
            continue
        except store.unreadable:
            continue
        if headed and snap.header.get("source") not in [source, *(heads or [])]:
            continue
        at: dict[int, CommitId] = {}
        count, titled = 0, None
        infos = store.log(sid, tip)
        for info in reversed(infos):  # oldest first: a commit without Events holds its parent's count
            events, before = info.message.fields.events, count
            count = events[1] + 1 if events else count
            at[count] = info.commit
            if info.message.fields.imported_from:  # an import's commit: the title it saw
                titled = next((str(e.data.get("title")) for e in reversed(snap.events[before:count])
                               if e.type == "session/title"), titled)
        lineage = infos[0].message.fields.forked_from if infos else None
        out.append(_Line(sid, list(snap.events), at, snap.commit, lineage, titled=titled,
                         source=snap.header.get("source")))
    return out


class _Writer:
    """Writes the branches of one conversation (the caller redacted them)."""

    def __init__(self, store: SessionStore, conv: ImportedConversation, header: dict, index: SourceIndex,
                 redactor: Redactor):
        self.store, self.conv, self.header, self.index, self.redactor = store, conv, header, index, redactor
        self.source = {"tool": conv.tool, "id": conv.source_id}
        self.base: str = imported_session_id(conv.tool, conv.source_id, conv.title)
        self.parents: list[_Line] = []  # the sessions of the conversations it was forked from: forked, never grown
        for other in dict.fromkeys([*([conv.forked_from] if conv.forked_from else []), *conv.family]):
            # Whatever their header: a fork's sessions began as forks of its origin's, whose header they keep.
            self.parents += _lines(store, {"tool": conv.tool, "id": other}, imported_session_id(conv.tool, other),
                                   index, headed=False)
        theirs = {ln.session_id for ln in self.parents}
        heads = [ln.source for ln in self.parents]  # its own sessions began as forks of theirs, with their header
        self.lines = [ln for ln in _lines(store, self.source, self.base, index, heads=heads)
                      if ln.session_id not in theirs]
        self.removed = _lines(store, self.source, self.base, index, archived=True, heads=heads)  # gs rm: not again
        self.subject_source = f"{conv.tool} {conv.source_id}"
        #: The title the tool gives it now: its first commit's (a sub-agent's is not its conversation's title).
        self.title = next((str(ev.data.get("title")) for ev in (conv.branches[0][1][0] if conv.branches else [])
                           if ev.type == "session/title"), "")
        named = [ln.session_id for ln in self.lines if re.fullmatch(rf".*-{self.base[-8:]}", ln.session_id)]
        if named:
            self.base = named[0]  # the name an earlier import gave (the title may have changed since)

    def _free(self, sid: str) -> SessionId:
        return SessionId(sid) if taken_by(self.store, sid) is None else fork_name(self.store, sid)

    def _commit(self, line: _Line, chunks: list[list[Event]], start: int,
                first: Planned | None = None, header: dict | None = None) -> None:
        """Append ``chunks[start:]`` to ``line``, dated when each began (after ``first``, made with ``header``).

        Their seq goes on from the line's (which may hold renames the conversation has not), and
        the seqs a compaction names move with the events they name.
        The commits go to the store at once (:meth:`~gitsessions.store.SessionStore.append_many`:
        one pack and one ref move in git), the ref moved only once they are durable.
        """
        so_far = list(first[0] if first is not None else line.events)  # commit_message derives what each adds
        base = sum(len(c) for c in chunks[:start])
        offset = len(so_far) - base
        if offset:  # a seq a compaction names moves with its event: one held already, or one written now
            held = _aligned([ev for c in chunks[:start] for ev in c], so_far)

            def at(seq: int) -> int:
                return held.get(seq, seq) if seq < base else seq + offset
        planned: list[Planned] = [first] if first is not None else []
        ends = [len(so_far)] if first is not None else []
        for chunk in chunks[start:]:
            if offset:
                chunk = [summary_moved(dataclasses.replace(ev, seq=ev.seq + offset), at) for ev in chunk]
            done = len(so_far)
            so_far += chunk
            planned.append((chunk, commit_message(line.session_id, so_far, done, lineage=line.lineage,
                                                  source=self.subject_source), _said(chunk)))
            ends.append(len(so_far))
        shas = self.store.append_many(line.session_id, planned, expected_tip=None if first else line.tip,
                                      header=header, current=False)  # an import leaves HEAD where it is
        line.at.update(zip(ends, shas, strict=True))
        line.tip = shas[-1] if shas else line.tip
        line.events, line.claimed = so_far, True

    def retitle(self, sid: str) -> Outcome | None:
        """Give ``sid`` (the active branch's session) the tool's title if it changed, dated at its last event."""
        line = next(ln for ln in [*self.lines, *self.parents] if ln.session_id == sid)
        title = self.title
        if line in self.parents or not title or line.titled in (None, title):
            return None  # a line of the conversation it was forked from is that one's
        ev = make_event(len(line.events), "session/title", {"title": title}, time_ms=max(e.time for e in line.events))
        message = commit_message(sid, [*line.events, ev], len(line.events), lineage=line.lineage,
                                 source=self.subject_source)
        line.tip = self.store.append(sid, [ev], message, expected_tip=line.tip, author_time=ev.time // 1000)
        line.events, line.titled = [*line.events, ev], title
        line.at[len(line.events)] = line.tip
        return (sid, "title", 0)

    def _spawner(self) -> Lineage | None:
        """Where the conversation that started this one stood when it did (see ``spawned``, ``spawned_call``)."""
        if self.conv.spawned is None:
            return None
        parent, at = self.conv.spawned
        base = imported_session_id(self.conv.tool, parent)
        lines = _lines(self.store, {"tool": self.conv.tool, "id": parent}, base, self.index, headed=False)
        line = min(lines, key=lambda ln: len(ln.session_id), default=None)  # the session, not a fork of it
        if line is None:
            return None
        call = self.conv.spawned_call
        made = next((i + 1 for i, ev in enumerate(line.events) if call is not None and ev.type == "tool/call"
                     and ev.data.get("id") == call), None)  # the call's run, in the commit of its turn
        said = made or sum(1 for ev in line.events if ev.time <= at)  # the events said by then
        count = min((n for n in line.at if n >= max(said, 1)), default=max(line.at))  # the commit holding that turn
        return Lineage(SessionId(line.session_id), line.at[count])

    def _new(self, sid: str, chunks: list[list[Event]]) -> _Line:
        header = self.redactor.header(sid, created=self.conv.created, **self.header)
        first = chunks[0]
        lineage = self._spawner()
        message = commit_message(sid, first, 0, kind="import", source=self.subject_source, lineage=lineage)
        line = _Line(sid, [], {}, CommitId(""), lineage, titled=self.title)
        self._commit(line, chunks, 1, first=(first, message, self.conv.created // 1000), header=header)
        return line

    def branch(self, key: str, chunks: list[list[Event]], first: bool) -> Outcome:
        """Write one branch where it belongs; return ``(session, what, turns added)``."""
        flat = [ev for chunk in chunks for ev in chunk]
        ends = list(itertools.accumulate(len(c) for c in chunks))
        best: tuple[int, bool, _Line] | None = None
        for line in [*self.lines, *self.parents]:
            held = _aligned(flat, line.events)
            shared = max(held)
            if shared >= len(flat):  # held already (perhaps continued in gs since)
                line.claimed = line.claimed or len(line.events) == held[len(flat)]
                return (line.session_id, "same", 0)
            k = max((j + 1 for j, end in enumerate(ends) if end <= shared and held[end] in line.at), default=0)
            ff = k > 0 and len(line.events) == held[ends[k - 1]] and not line.claimed and line not in self.parents
            if k and (best is None or (k, ff) > best[:2]):
                best = (k, ff, line)

        for gone in self.removed:  # a branch an archived session holds, or continues, is left to gs restore
            held = _aligned(flat, gone.events)
            if max(held) == len(flat) or held[max(held)] == len(gone.events):
                return (gone.session_id, "archived", 0)

        def turns(start: int) -> int:
            return turn_count([ev for chunk in chunks[start:] for ev in chunk])

        if best is None:
            line = self._new(self._free(self.base if first and not self.lines else imported_fork_id(self.base, key)),
                             chunks)
            self.lines.append(line)
            self.index.add(line.session_id, self.subject_source)
            return (line.session_id, "new", turns(1))
        k, ff, line = best
        if ff:
            self._commit(line, chunks, k)
            return (line.session_id, "grew", turns(k))
        upto = _aligned(flat, line.events)[ends[k - 1]]  # the line's events at the fork point
        point = line.at[upto]
        own = first and not self.lines  # a forked conversation's own first line keeps its own name
        sid = self._free(self.base if own else imported_fork_id(self.base, key))
        lineage = Lineage(SessionId(line.session_id), point)
        message = commit_message(sid, line.events[:upto], kind="fork", lineage=lineage,
                                 why=f"a branch in {self.conv.tool}")
        tip = self.store.branch_from(sid, point, message, author_time=_said(chunks[k]),  # when it began
                                     current=False)
        inherited = {end: c for end, c in line.at.items() if end <= upto}
        fork = _Line(sid, line.events[:upto], inherited, tip, lineage, titled=line.titled)
        fork.at[upto] = tip
        self._commit(fork, chunks, k)
        self.lines.append(fork)
        self.index.add(sid, self.subject_source)
        return (sid, "fork", turns(k))


def write_conversation(store: SessionStore, conv: ImportedConversation, redactor: Redactor, *,
                       header_extra: dict[str, Any], index: SourceIndex | None = None) -> list[Outcome]:
    """Write one conversation's branches, incrementally (see the module's rules).

    The current session stays as it was: ``gs chat -c`` goes on with what the user was
    doing, not with whatever conversation an import (from cron, ``--watch``) wrote last.

    ``conv`` comes redacted (:func:`~.write.write_import` is the door the file's text enters
    by), so the id (from the title) and every commit message are made of redacted text; the
    header is built by ``redactor`` (:meth:`~gitsessions.secrets.redact.Redactor.header`), its
    fields from this machine (a file's path) redacted there.

    Args:
        store: the session store.
        conv: from a reader (:mod:`.chatgpt`), redacted.
        redactor: the import's redactor (the header's).
        header_extra: fields of the header (``generator``; ``source_file`` only when paths are kept).
        index: the sessions that may hold it, read once for a whole import (None: read here).

    Returns:
        ``(session, what, turns added)`` per branch, ``what`` one of ``new``, ``grew``,
        ``fork``, ``same``.

    Raises:
        TransferError: a session of this conversation is being written by another process,
            or moved while this import wrote it.
        HookRefused: a commit hook refused (what was written before stays, and is found
            again by the next import).
    """
    header = {"imported_from": conv.tool, "source": {"tool": conv.tool, "id": conv.source_id}, **header_extra}
    writer = _Writer(store, conv, header, (index if index is not None else SourceIndex()).read_from(store),
                     redactor)
    locks = []
    try:
        for line_sid in dict.fromkeys([writer.base, *(ln.session_id for ln in writer.lines)]):
            lock = store.lock(line_sid)
            if not lock.try_acquire():
                raise TransferError(f"{conv.tool} conversation {conv.source_id}",
                                    SessionLocked.said(lock.writing() or line_sid, lock.holder()),
                                    "run the import again when it is done")
            locks.append(lock)
        outcomes = [writer.branch(key, chunks, i == 0) for i, (key, chunks) in enumerate(conv.branches)]
        titled = writer.retitle(outcomes[0][0]) if outcomes and outcomes[0][1] != "archived" else None
        return outcomes + [titled] if titled else outcomes
    except (ConcurrentUpdate, SessionExists) as exc:
        raise TransferError(f"{conv.tool} conversation {conv.source_id}", str(exc),
                            "run the import again: what was written is found again") from None
    except HookRefused as exc:
        raise HookRefused(exc.hook, exc.path, exc.status, exc.output, action="import") from None
    finally:
        for lock in locks:
            lock.release()
