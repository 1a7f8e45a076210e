"""A derived index of the stored messages, so ``gs search`` need not read every log.

A derived cache (rebuilt from git when missing or stale, never needed: the scan answers
without it): an SQLite file under the repo's ``gs/`` folder,
keyed by each session's tip commit. A session whose tip moved is indexed from its new lines
only when the old tip is a first-parent ancestor of the new one and the new log starts with
the bytes indexed (the log is append-only); otherwise from scratch. A session gone from the
refs leaves the index. The text indexed is the stored text, which is already redacted.

Messages are kept in chunks: those one update read (a whole log when it is indexed from
scratch, the new lines otherwise) as one compressed row, and one document of the full-text
index of their folded text. So the index holds a document per update, not per message:
fewer, larger documents (a trigram common to a session's messages is listed once) build
faster and take less room, and a query's candidates are the chunks holding all its trigrams.

It is never the source of truth: the index only narrows which messages to look at, each
candidate is matched again exactly as the scan matches (:func:`gitsessions.text.find_folded`),
and whenever the index cannot be used — a read-only repo with an index that is missing or
stale, a file another writer holds locked, a damaged file, a query too short for its
trigrams — :func:`lookup` returns None and the caller scans git (:mod:`gitsessions.history.search`).
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import zlib
from collections.abc import Callable, Iterable, Iterator
from contextlib import closing
from pathlib import Path

from ..errors import CorruptSession
from ..store import SessionStore
from ..text import find_folded, snippet
from .messages import body_text, names_searched_type, read_messages

#: Bumped when what is stored changes: an index of another version is rebuilt.
VERSION = "5"  # 5: compaction summaries are searched
#: Seconds to wait for another process writing the index before scanning instead.
BUSY_TIMEOUT = 2.0
#: Characters of message text in one chunk, about (a long session is several: bounded memory per insert).
CHUNK_CHARS = 1 << 20
#: A session's key in the index: (name, archived).
Key = tuple[str, bool]
#: A message read from a log: (seq, turn, role, content).
Row = tuple[int, int, str, str]
#: A message found: (seq, turn, role, snippet, the commit that added it when known).
Found = tuple[int, int, str, str, str | None]
#: A session whose log could not be read: (its id, why).
Skipped = tuple[str, CorruptSession]

_SCHEMA = """
create table if not exists meta(key text primary key, value text);
create table if not exists sessions(name text, archived integer, tip text, done integer, digest text,
                                    turn integer, primary key (name, archived));
create table if not exists chunk(id integer primary key, name text, archived integer, n integer, data blob);
create index if not exists chunk_session on chunk(name, archived);
create table if not exists added(name text, archived integer, seq integer, commit_id text,
                                 primary key (name, archived, seq)) without rowid;
create virtual table if not exists fts using fts5(folded, content='', detail='none',
                                                  tokenize='trigram case_sensitive 1');
"""


def lookup(store: SessionStore, path: Path, targets: list[tuple[str, str, bool]], folded_q: str, *,
           complete: frozenset[bool] = frozenset(),
           on_skip: Callable[[str, CorruptSession], None] | None = None
           ) -> dict[Key, list[Found]] | None:
    """Find ``folded_q`` in the messages of ``targets`` through the index at ``path``, updating it first.

    Args:
        store: the session store (the index is brought up to date from it).
        path: the index file (created when missing and the repo can be written).
        targets: ``(session, tip, archived)`` to search: what the refs hold now.
        folded_q: the casefolded query.
        complete: the kinds (False: live, True: archived) of which ``targets`` holds every
            session: one of these the index holds and ``targets`` lacks is gone, and leaves it.
        on_skip: called with the session id and the error for each target whose log cannot
            be read (it is skipped, and tried again next time).

    Returns:
        ``(seq, turn, role, snippet, added)`` per matching message, by target, in log order
        (``added``: the commit that added it, once :func:`remember` was told); None when the
        index cannot answer (the caller scans git instead, with the same results).
    """
    if len(folded_q) < 3:
        return None  # a trigram index cannot narrow a query of one or two characters
    try:
        con = _open(path, targets)
    except (OSError, sqlite3.Error):
        return None
    if con is None:
        return None
    with closing(con):
        try:
            found, skipped = _answer(con, store, targets, complete, folded_q)
        except sqlite3.Error:
            return None  # locked past the timeout, damaged, or read-only and stale: scan instead
    if on_skip is not None:
        for sid, exc in skipped.values():
            on_skip(sid, exc)
    return found


def _open(path: Path, targets: list[tuple[str, str, bool]]) -> sqlite3.Connection | None:
    """Open the index, creating or rebuilding it when the repo can be written; None when it cannot be used."""
    if not path.exists():
        if not targets:
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
    try:
        con = _connect(path)
        if _version(con) == VERSION:
            return con
        con.close()
    except sqlite3.OperationalError:
        raise  # locked by another process (or unreadable): not damage, so the scan answers
    except sqlite3.DatabaseError:
        pass  # not an index (damaged, or another program's file): rebuilt below
    path.unlink(missing_ok=True)
    con = _connect(path)
    con.executescript(_SCHEMA)
    con.execute("insert or replace into meta values ('version', ?)", (VERSION,))
    # 16 MiB of new terms held before each write of the full-text index: fewer, larger segments to merge
    con.execute("insert into fts(fts, rank) values ('hashsize', 16777216)")
    return con


def _connect(path: Path) -> sqlite3.Connection:
    con = sqlite3.connect(path, timeout=BUSY_TIMEOUT, isolation_level=None)
    con.execute("pragma synchronous = normal")  # a cache: losing the last write costs a re-index
    con.execute("pragma cache_size = -32768")  # 32 MiB: fewer merges of the full-text index while it is built
    return con


def _searched(line: str) -> bool:
    """Whether a log line may hold a message search reads (else :func:`read_messages` need not parse it).

    A line without a backslash spells its type as written, so the types are seen in its
    text (:func:`names_searched_type`); one with any escape may spell them otherwise, and is parsed.
    """
    return "\\" in line or names_searched_type(line)


def _version(con: sqlite3.Connection) -> str | None:
    try:
        row = con.execute("select value from meta where key = 'version'").fetchone()
    except sqlite3.OperationalError as exc:
        if "no such table" in str(exc):
            return None
        raise
    return row[0] if row else None


def _stale(con: sqlite3.Connection, targets: list[tuple[str, str, bool]],
           complete: frozenset[bool]) -> tuple[dict, list[Key]]:
    """Return (what the index holds by key, the keys it holds that are gone: see :func:`lookup`)."""
    held = {(name, bool(arch)): (tip, done, digest, turn)
            for name, arch, tip, done, digest, turn in con.execute("select * from sessions")}
    wanted = {(sid, arch) for sid, _tip, arch in targets}
    return held, [k for k in held if k[1] in complete and k not in wanted]


def _fresh(held: dict, gone: list[Key], targets: list[tuple[str, str, bool]]) -> bool:
    return not gone and all(held.get((sid, arch), (None,))[0] == tip for sid, tip, arch in targets)


def _answer(con: sqlite3.Connection, store: SessionStore, targets: list[tuple[str, str, bool]],
            complete: frozenset[bool], folded_q: str) -> tuple[dict[Key, list[Found]], dict[Key, Skipped]]:
    """Update the index to ``targets`` when needed and query it, in one transaction (one consistent state)."""
    con.execute("begin")  # a read snapshot: held while the query runs
    try:
        held, gone = _stale(con, targets, complete)
        skipped: dict[Key, tuple[str, CorruptSession]] = {}
        if not _fresh(held, gone, targets):
            con.execute("commit")
            con.execute("begin immediate")  # one writer at a time
            held, gone = _stale(con, targets, complete)  # another process may have done part of it meanwhile
            skipped = _update(con, store, targets, held, gone)
        found = _query(con, targets, folded_q, skipped)
        con.execute("commit")
    except BaseException:
        if con.in_transaction:
            con.execute("rollback")
        raise
    return found, skipped


def _update(con: sqlite3.Connection, store: SessionStore, targets: list[tuple[str, str, bool]], held: dict,
            gone: list[Key]) -> dict[Key, tuple[str, CorruptSession]]:
    """Bring the index from ``held`` to ``targets``; return the targets whose log could not be read."""
    for key in gone:
        _drop(con, key)
    skipped: dict[Key, tuple[str, CorruptSession]] = {}
    for sid, tip, arch in targets:
        old = held.get((sid, arch))
        if old is not None and old[0] == tip:
            continue
        try:
            _index(con, store, (sid, arch), tip, old)
        except CorruptSession as exc:
            if old is not None:
                _drop(con, (sid, arch))
            skipped[(sid, arch)] = (sid, exc)
    return skipped


def _drop(con: sqlite3.Connection, key: Key) -> None:
    rows = con.execute("select id, data from chunk where name = ? and archived = ?", key).fetchall()
    # A contentless FTS table forgets a row only when given the text it indexed.
    con.executemany("insert into fts(fts, rowid, folded) values ('delete', ?, ?)",
                    ((i, _folded(_unpack(data))) for i, data in rows))
    for table in ("chunk", "added", "sessions"):
        con.execute(f"delete from {table} where name = ? and archived = ?", key)


def _appends_to(store: SessionStore, tip: str, old_tip: str) -> bool:
    """Whether ``old_tip`` is on ``tip``'s first-parent history (the log only grew since)."""
    try:
        return any(info.commit == old_tip for info in store.first_parents(tip))
    except store.unreadable:
        return False


def _index(con: sqlite3.Connection, store: SessionStore, key: Key, tip: str, old: tuple | None) -> None:
    """Index session ``key`` at ``tip``: its new lines when it only grew since ``old``, else all of it.

    Raises:
        CorruptSession: the log at ``tip`` cannot be read.
    """
    raw = store.read_raw(key[0], tip)
    start, turn = 0, 0
    if old is not None:
        _old_tip, done, digest, old_turn = old
        if (done is not None and 0 < done <= len(raw) and hashlib.sha1(raw[:done]).hexdigest() == digest
                and _appends_to(store, tip, _old_tip)):
            start, turn = done, old_turn
            # What a commit added is known again once asked (a new commit may claim old events).
            con.execute("delete from added where name = ? and archived = ?", key)
        else:
            _drop(con, key)
    if start == 0:
        text = body_text(raw)
    else:
        text = raw[start:].decode("utf-8", "replace")  # starts after a newline, so decodes as in the whole
    rows, last_turn = read_messages(text, turn, _searched)
    _insert(con, key, rows)
    # Lines are whole up to the last newline; a log without one at its end is read whole next time.
    done = len(raw) if raw.endswith(b"\n") else None
    con.execute("insert or replace into sessions values (?, ?, ?, ?, ?, ?)",
                (key[0], key[1], tip, done, hashlib.sha1(raw).hexdigest() if done else None, last_turn))


def _insert(con: sqlite3.Connection, key: Key, rows: list[Row]) -> None:
    """Add ``rows`` of session ``key`` as chunks of about :data:`CHUNK_CHARS`: each a compressed row and a document."""
    start = size = 0
    for i, row in enumerate(rows):
        size += len(row[3])
        if size >= CHUNK_CHARS or i == len(rows) - 1:
            part = rows[start:i + 1]
            data = zlib.compress(json.dumps(part, ensure_ascii=False).encode("utf-8", "surrogatepass"), 1)
            cur = con.execute("insert into chunk(name, archived, n, data) values (?, ?, ?, ?)",
                              (*key, len(part), data))
            con.execute("insert into fts(rowid, folded) values (?, ?)", (cur.lastrowid, _folded(part)))
            start, size = i + 1, 0


def _unpack(data: bytes) -> list[Row]:
    return [tuple(r) for r in json.loads(zlib.decompress(data).decode("utf-8", "surrogatepass"))]


def _folded(rows: list[Row]) -> str:
    """The text a chunk's document indexes: its messages' contents, casefolded (one line apart)."""
    return "\n".join(row[3] for row in rows).casefold()


def _query(con: sqlite3.Connection, targets: list[tuple[str, str, bool]], folded_q: str,
           skipped: dict[Key, tuple[str, CorruptSession]]) -> dict[Key, list[Found]]:
    """The messages holding ``folded_q``, by target: the index narrows, :func:`text.find_folded` decides."""
    wanted = {(sid, arch) for sid, _tip, arch in targets} - set(skipped)
    # Every trigram of the query (no positions are kept, which makes the index small): a
    # superset of the messages that hold the query, narrowed by find_folded below.
    grams = dict.fromkeys(folded_q[i:i + 3] for i in range(len(folded_q) - 2))
    phrase = " AND ".join('"' + g.replace('"', '""') + '"' for g in grams)
    found: dict[Key, list[Found]] = {}
    for name, arch, data in _candidates(con, phrase):
        key = (name, bool(arch))
        if key not in wanted:
            continue
        for seq, turn, role, content in _unpack(data):
            if folded_q not in content.casefold():  # casefold is per character: the same test, in C
                continue
            span = find_folded(content, folded_q)
            if span is not None:
                found.setdefault(key, []).append((seq, turn, role, snippet(content, *span), None))
    for key, hits in found.items():
        added = dict(con.execute("select seq, commit_id from added where name = ? and archived = ?", key))
        hits[:] = sorted(((*h[:4], added.get(h[0])) for h in hits), key=lambda h: h[0])
    return found


def _candidates(con: sqlite3.Connection, phrase: str) -> Iterator[tuple]:
    return con.execute("select c.name, c.archived, c.data from fts join chunk c on c.id = fts.rowid "
                       "where fts match ?", (phrase,))


def remember(path: Path, key: Key, tip: str, added: Iterable[tuple[int, str]]) -> None:
    """Note the commit that added each of some messages of session ``key`` at ``tip`` (best effort).

    What :func:`gitsessions.history.search.attribute` found, so the next search of these messages
    reads one commit instead of walking the history; nothing is noted when the session is no
    longer at ``tip`` in the index, or the index is read-only, locked or damaged.

    Args:
        path: the index file.
        key: the session.
        tip: the tip the messages were attributed from.
        added: ``(seq, commit)`` pairs.
    """
    rows = [(key[0], key[1], seq, commit) for seq, commit in added]
    if not rows or not path.exists():
        return
    try:
        with closing(sqlite3.connect(path, timeout=0.1, isolation_level=None)) as con:
            con.execute("begin immediate")
            if con.execute("select 1 from sessions where name = ? and archived = ? and tip = ?",
                           (*key, tip)).fetchone():
                con.executemany("insert or replace into added values (?, ?, ?, ?)", rows)
            con.execute("commit")
    except sqlite3.Error:
        pass  # a cache: the next search walks the history again
