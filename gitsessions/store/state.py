"""The sidecar state of a session repo: everything under ``<repo>/gs/`` that is not git.

Journals of turns in progress, writer locks, the verified-tips cache, the list-row cache and
the pack-state counter.
None of it is history: git objects and refs are; this is either a turn not yet committed (the
journal), a claim (a lock) or a cache rebuilt from git when missing.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from dulwich.repo import Repo

from ..ids import check_session_id
from ..log.commits import CommitMessage
from .faults import optional_write, os_faults
from .journal import Journal
from .listing import Row, RowCache, Stamp, trusted
from .lock import SessionLock
from .pack import AUTO_BYTES, AUTO_PACKS, AUTO_SAVES, RepackResult, repack
from .privacy import new_file_mode
from .thinpack import pack_loose
from .writers import NEW, held, hold_new


class PackState:
    """Counts saves since the last repack, across processes, in ``<repo>/gs/pack-state``.

    One line per save (the blob's size in bytes) appended with ``O_APPEND``; a repack empties it.
    """

    def __init__(self, repo_path: str | os.PathLike):
        self.path = Path(repo_path) / "gs" / "pack-state"
        self.lock_path = Path(repo_path) / "gs" / "repack.lock"  # not in locks/: a session may be named repack

    def record_save(self, blob_bytes: int) -> None:
        """Note one save of a blob of ``blob_bytes`` bytes (dropped when the disk is full: a hint only)."""
        optional_write(lambda: _append_line(self.path, b"%d\n" % blob_bytes))

    def due(self) -> bool:
        """True when AUTO_SAVES saves or AUTO_BYTES loose bytes piled up since the last repack, or AUTO_PACKS packs."""
        try:
            lines = self.path.read_bytes().split()
        except FileNotFoundError:
            lines = []
        saves_due = len(lines) >= AUTO_SAVES or sum(int(x) for x in lines if x.isdigit()) >= AUTO_BYTES
        return saves_due or self.packs() >= AUTO_PACKS

    def packs(self) -> int:
        """Return how many packs the repo has."""
        try:
            with os.scandir(self.path.parent.parent / "objects" / "pack") as entries:
                return sum(e.name.endswith(".pack") for e in entries)
        except FileNotFoundError:
            return 0

    def repack(self, repo: Repo, incremental: bool = False) -> RepackResult | None:
        """Repack unless another process is repacking (then return None at once).

        Args:
            repo: the open repository.
            incremental: only move the loose objects into a new pack (:func:`.thinpack.pack_loose`),
                unless AUTO_PACKS packs piled up: then, as otherwise, merge everything into one.

        Raises:
            DiskFull, RepoReadOnly: the repo cannot be written (see :mod:`.faults`).
        """
        with os_faults(self.path.parent.parent):
            return self._repack(repo, incremental and self.packs() < AUTO_PACKS)

    def _repack(self, repo: Repo, incremental: bool) -> RepackResult | None:
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                return None
            # Saves recorded from here on are not covered by this repack only if their
            # objects are written after the loose scan; they stay loose and count next time.
            try:
                os.truncate(self.path, 0)
            except FileNotFoundError:
                pass
            return pack_loose(repo) if incremental else repack(repo)
        finally:
            os.close(fd)


@dataclass(frozen=True)
class LeftMove:
    """A ref move whose process died before it ended it (:meth:`RepoState.left_moves`).

    Attributes:
        record: its record (remove it once the move is completed or taken back).
        src: the ref moved.
        dst: where to.
        commit: the commit it held.
        message: the reflog line of the new ref.
    """

    record: Path
    src: bytes
    dst: bytes
    commit: str
    message: bytes


class ListRows(RowCache):
    """What ``gs list`` shows of each tip commit, in ``<repo>/gs/rows`` (a derived cache).

    Keyed by commit id, so never stale for a commit (a commit never changes), only
    incomplete: ``list_sessions`` adds the rows it had to read from git (counted from the
    log when the trailers could not be trusted) and a save adds its new tip's; a warm list
    then reads the refs and this one file instead of a commit object per session. A commit
    missing here is read from git as before, so a tip written behind gs's back is checked
    (:mod:`.listing`).

    One line per commit, ``["<commit>", <time>, "<subject>", {trailers}]`` (ASCII JSON),
    appended with one ``O_APPEND`` write; a line that does not parse (a write a full disk
    cut short) is skipped. When stale lines (commits no longer a tip) outnumber the live
    rows, the file is replaced atomically by the live rows. Every write is optional.

    Args:
        repo_path: the session repository directory.
    """

    #: Lines beyond twice the live rows, at most, before the file is rewritten.
    SLACK_LINES = 256

    def __init__(self, repo_path: str | os.PathLike):
        self.path = Path(repo_path) / "gs" / "rows"
        #: Lines the last :meth:`read` found (stale and repeated ones too).
        self.lines = 0

    def read(self) -> dict[str, Row]:
        """Return the cached rows by commit (empty when the file is missing or unreadable)."""
        try:
            lines = self.path.read_bytes().splitlines()
        except OSError:
            lines = []
        self.lines = len(lines)
        try:  # one parse for the whole file; line by line only when a line is damaged
            items = json.loads(b"[" + b",".join(lines) + b"]")
        except ValueError:
            items = [item for line in lines if (item := _json(line)) is not None]
        return {it[0]: (it[1], CommitMessage(it[2], it[3])) for it in items if _is_row(it)}

    def stamps(self) -> dict[str, Stamp]:
        """Return each cached row's commit time and whether an import wrote it, by commit, from the starts of lines.

        Far cheaper than :meth:`read` (``gs chat -c`` among 10,000 sessions): no line is
        parsed. A line gs wrote starts ``["<commit>", <time>, "`` (:func:`_row_line`); a write
        cut short loses the end of its line, never those fields, so a start of that shape
        holds its commit's time. A commit given two times is left out (read from git). An
        import's commit has the key ``"Imported-From": "`` (a quote in a string is escaped:
        nothing else reads so) on its line after one ``["`` only (a line cut short, with the
        next row appended to it, has two: the key is that row's). A line cut short may have
        lost the key: :func:`.listing.saved_last` checks the commit it picks.
        """
        try:
            data = b"\n" + self.path.read_bytes()
        except OSError:
            return {}
        found: dict[bytes, bytes] = {}
        torn = set()
        for commit, time in _ROW_START.findall(data):  # a search for the literal: no split
            if found.setdefault(commit, time) != time:
                torn.add(commit)
        imported = set()
        at = data.find(_IMPORTED)
        while at >= 0:  # as many steps as imports' rows
            start = data.rfind(b"\n", 0, at)
            if data.count(b'["', start, at) == 1 and (row := _ROW_START.match(data, start)) is not None:
                imported.add(row.group(1))
            at = data.find(_IMPORTED, at + 1)
        return {commit.decode("ascii"): (int(time), commit in imported) for commit, time in found.items()
                if commit not in torn}

    def add(self, rows: Mapping[str, Row]) -> None:
        """Append ``rows`` (one ``O_APPEND`` write; dropped when the repo refuses it)."""
        if rows:
            data = b"".join(_row_line(c, r) for c, r in rows.items())
            optional_write(lambda: _append_line(self.path, data))

    def update(self, rows: Mapping[str, Row], known: Mapping[str, Row], live: Iterable[str]) -> None:
        """Add ``rows``, or rewrite the file with the live rows alone when stale lines piled up.

        Args:
            rows: rows just read from git.
            known: the rows :meth:`read` returned.
            live: every current tip (rows of other commits may go).
        """
        keep = {c: r for c in live if (r := rows.get(c) or known.get(c)) is not None}
        if self.lines + len(rows) <= 2 * len(keep) + self.SLACK_LINES:
            self.add(rows)
        else:
            optional_write(lambda: _replace(self.path, b"".join(_row_line(c, r) for c, r in keep.items())))
            self.lines = len(keep)


#: The refs a move of a session moves (:meth:`RepoState.moving`), and the commit it holds.
_MOVED = re.compile(rb"\Arefs/(heads|archive)/[^/\x00-\x20]+\Z")
_COMMIT = re.compile(r"\A[0-9a-f]{40}\Z")
#: The start of a line :func:`_row_line` writes, after the end of the one before: the commit and its time.
_ROW_START = re.compile(rb'\n\["([0-9a-f]{40})", (-?[0-9]+), "')
#: The key of a row's ``Imported-From`` trailer as :func:`_row_line` writes it (an import's commit).
_IMPORTED = b'"Imported-From": "'


def _row_line(commit: str, row: Row) -> bytes:
    return json.dumps([commit, row[0], row[1].subject, row[1].trailers]).encode("ascii") + b"\n"


def _json(line: bytes) -> object:
    try:
        return json.loads(line)
    except ValueError:
        return None


def _is_row(item: object) -> bool:
    """True when ``item`` has the shape :func:`_row_line` writes."""
    return (type(item) is list and len(item) == 4 and type(item[0]) is str and len(item[0]) == 40
            and type(item[1]) is int and type(item[2]) is str and type(item[3]) is dict
            and _strings(item[3].values()))


def _strings(values: Iterable[object]) -> bool:
    try:
        "".join(values)  # type: ignore[arg-type] # the check itself: a value that is no str fails
    except TypeError:
        return False
    return True


class RepoState:
    """The files under ``<repo>/gs/``: journals, locks, verified and received tips, list rows, pack state.

    Args:
        repo_path: the session repository directory.
    """

    def __init__(self, repo_path: str | os.PathLike):
        self.repo_path = Path(repo_path)
        self.root = self.repo_path / "gs"
        self.pack = PackState(self.repo_path)
        self.rows = ListRows(self.repo_path)

    # -- journals and locks ----------------------------------------------------------------

    def journal(self, session_id: str) -> Journal:
        """Return the write-ahead journal of ``session_id`` (``<repo>/gs/journal/<id>.jsonl``)."""
        return Journal(self.root / "journal" / f"{check_session_id(session_id)}.jsonl", repo=self.repo_path)

    def journaled(self) -> list[str]:
        """Return the ids of sessions that have a journal (a turn in progress, or orphaned)."""
        folder = self.root / "journal"
        try:
            return sorted(p.name[: -len(".jsonl")] for p in folder.iterdir() if p.name.endswith(".jsonl"))
        except FileNotFoundError:
            return []

    def lock(self, session_id: str) -> SessionLock:
        """Return the (not yet taken) writer lock of ``session_id`` (``<repo>/gs/locks/<folded id>.lock``).

        Keyed by the case-folded id: ids that differ only by case are one session,
        so two writers creating ``caseR1`` and ``caser1`` at once must not both win.
        """
        return _RepoLock(self.root / "locks" / f"{check_session_id(session_id).casefold()}.lock", session_id,
                         self.repo_path)

    def import_lock(self) -> SessionLock:
        """Return the (not yet taken) lock one ``gs import`` holds while it writes (``<repo>/gs/import.lock``).

        Beside ``locks/``, whose file names are session ids (a session may be named import).
        """
        return _RepoLock(self.root / "import.lock", "import", self.repo_path)

    # -- ref moves under way -----------------------------------------------------------------
    # A rename, an archive, a restore moves a ref in steps (the new name made, the reflog
    # carried over, the old name removed); each is recorded for as long as it runs, held by
    # its process (:mod:`.writers`), so that the next gs finds one its process left half done.

    @contextlib.contextmanager
    def moving(self, src: bytes, dst: bytes, commit: str, message: bytes) -> Iterator[None]:
        """Record the move of ref ``src`` to ``dst`` (at ``commit``, reflog ``message``) while the block runs.

        The record (``<repo>/gs/moves/<name>.json``) is fsynced before the move begins and
        removed when it ends, done or refused; only a process killed meanwhile leaves it.

        Raises:
            RepoReadOnly, DiskFull: the record cannot be written (then nothing is moved).
        """
        record = {"src": src.decode("utf-8"), "dst": dst.decode("utf-8"), "commit": commit,
                  "message": message.decode("utf-8", "surrogateescape")}
        folder = self.root / "moves"
        name = f"{os.getpid()}-{os.urandom(4).hex()}.json"
        with os_faults(self.repo_path):
            fd = hold_new(folder, name, json.dumps(record).encode("utf-8"), durable=True)
        try:
            yield
        finally:
            with contextlib.suppress(OSError):
                (folder / name).unlink()
            os.close(fd)

    def left_moves(self) -> list[LeftMove]:
        """Return the moves whose process died before it ended them (oldest first; unreadable records dropped)."""
        try:
            entries = sorted(os.scandir(self.root / "moves"), key=lambda e: e.name)
        except (FileNotFoundError, NotADirectoryError):
            return []
        left = []
        for entry in entries:
            if entry.name.startswith(NEW) or held(entry.path):
                continue
            try:
                record = json.loads(Path(entry.path).read_bytes())
                move = LeftMove(Path(entry.path), record["src"].encode(), record["dst"].encode(),
                                record["commit"], record["message"].encode("utf-8", "surrogateescape"))
                if not (_MOVED.match(move.src) and _MOVED.match(move.dst) and _COMMIT.match(move.commit)):
                    raise ValueError("not a move gs makes")
                left.append(move)
            except FileNotFoundError:
                continue  # ended meanwhile
            except (OSError, ValueError, KeyError, TypeError, AttributeError):
                optional_write(Path(entry.path).unlink)  # not one gs wrote whole: nothing to go on
        return left

    # -- verified tips ---------------------------------------------------------------------
    # Tips known to hold a valid log: every save the store makes, and every successful
    # load. ``list_sessions`` parses only tips missing here, so listing stays O(sessions)
    # in small object reads while a session damaged behind gs's back is still flagged.

    @property
    def verified_path(self) -> Path:
        """The verified-tips file, one commit id a line."""
        return self.root / "verified"

    def verified(self) -> set[str]:
        """Return the commit ids known to hold a valid log (empty when the file is missing)."""
        return _read_ids(self.verified_path)

    def mark_verified(self, commit: str, made: tuple[int, bytes] | None = None) -> None:
        """Record that ``commit`` holds a valid log (one ``O_APPEND`` write, safe across processes).

        A cache: on a read-only or full repo the line is not
        written and the tip is checked again next time; reading never fails over it.

        Args:
            commit: the commit id.
            made: ``(commit time, message)`` of a commit this store just wrote: its list row
                is kept too, when the message has the trailers ``gs list`` shows.
        """
        optional_write(lambda: _append_line(self.verified_path, commit.encode("ascii") + b"\n"))
        if made is not None and trusted(message := CommitMessage.decode(made[1])):
            self.rows.add({commit: (made[0], message)})

    # -- received tips -----------------------------------------------------------------------
    # Tips that arrived from a remote by clone: written by gs on another machine, so
    # ``list_sessions`` takes their counts from their trailers instead of parsing every log
    # of a fresh clone on the first ``gs list``; the log is checked when a session is opened.

    @property
    def received_path(self) -> Path:
        """The received-tips file, one commit id a line."""
        return self.root / "received"

    def received(self) -> set[str]:
        """Return the commit ids that arrived from a remote (empty when the file is missing)."""
        return _read_ids(self.received_path)

    def mark_received(self, commits: Iterable[str]) -> None:
        """Record that ``commits`` arrived from a remote (one ``O_APPEND`` write; a cache, as verified tips)."""
        lines = b"".join(c.encode("ascii") + b"\n" for c in commits)
        if lines:
            optional_write(lambda: _append_line(self.received_path, lines))

    def compact_verified(self, tips: Iterable[str | None]) -> None:
        """Keep only ``tips`` in the verified- and received-tips files (they gain lines); skipped when refused."""
        current = {t for t in tips if t}
        for path in (self.verified_path, self.received_path):
            ids = _read_ids(path)
            if ids or path == self.verified_path:
                _rewrite_ids(path, sorted(current & ids))


def _read_ids(path: Path) -> set[str]:
    try:
        return set(path.read_text("ascii").split())
    except (FileNotFoundError, UnicodeDecodeError):
        return set()


def _rewrite_ids(path: Path, keep: list[str]) -> None:
    """Replace ``path`` by the ids ``keep`` (atomically; skipped when the disk refuses)."""
    optional_write(lambda: _replace(path, "".join(t + "\n" for t in keep).encode("ascii")))


def _replace(path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` atomically: written to a file of this process's own, renamed over it.

    A save appending to ``path`` meanwhile loses its line: a cache's re-check later.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, new_file_mode())  # mkstemp makes it 600 whatever the repo's sharing
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)  # a half-written copy must not stay behind
        raise


def _append_line(path: Path, line: bytes) -> None:
    """Append ``line`` to ``path`` with one ``O_APPEND`` write (atomic across processes)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o666)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


class _RepoLock(SessionLock):
    """A writer lock whose file-system refusals say which repo cannot be written (see :mod:`.faults`)."""

    def __init__(self, path: Path, session_id: str, repo: Path):
        super().__init__(path, session_id)
        self.repo = repo

    def try_acquire(self) -> bool:
        """Take the lock if free; return whether it is held.

        Raises:
            RepoReadOnly: the lock file cannot be created or opened for writing.
        """
        with os_faults(self.repo):
            return super().try_acquire()
