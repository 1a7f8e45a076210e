"""The git backend of the session store, built on dulwich.

Layout (design.md, "On disk"): a bare repository; session ``<id>`` is the branch
``refs/heads/<id>`` whose tree holds one file, ``session.jsonl``. A save builds a blob, a
tree and a commit as objects (no index, no working tree) and moves the branch by
compare-and-swap with a reflog entry. Plain ``git`` reads everything written here.
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from collections import OrderedDict
from collections.abc import Mapping
from pathlib import Path

from dulwich.errors import NotCommitError, ObjectFormatException
from dulwich.file import FileLocked
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo

from ..errors import (
    BadRevision,
    ConcurrentUpdate,
    CorruptSession,
    InvalidEvent,
    InvalidSessionId,
    RepoError,
    SessionExists,
    SessionNotFound,
    UnsupportedVersion,
)
from ..events import KNOWN_TYPES, Event, clean_value, encode_header, parse_log
from ..rules import REV_RE, SESSION_ID_RE, CommitMessage, check_free, check_session_id
from .base import CommitInfo, Revision, SessionInfo, SessionStore, Snapshot
from .hooks import CommitHooks, subject_of
from .journal import Journal
from .lock import SessionLock
from .pack import RepackResult
from .state import PackState, RepoState

#: The one file in every session tree.
SESSION_FILE = b"session.jsonl"
#: Identity used when neither config nor git names one (design.md).
DEFAULT_IDENTITY = "gitsessions <gitsessions@localhost>"
#: Settings written at init (design.md, "Repo settings").
INIT_CONFIG = {
    b"looseCompression": b"1",  # ~6x faster saves for MB-size files
}
#: How long a save waits for a ref lock another process holds, seconds.
REF_LOCK_WAIT_S = 5.0
#: A ref ``.lock`` file older than this was left by a dead process (git holds them for
#: microseconds), seconds.
STALE_REF_LOCK_S = 2.0

_BARE_REPO_ENTRIES = frozenset({"gs", "HEAD", "config", "description", "branches", "hooks", "info", "objects",
                                "refs", "logs", "packed-refs"})
_HEADS = b"refs/heads/"
_ARCHIVE = b"refs/archive/"


def _hex(sha: bytes) -> str:
    return sha.decode("ascii")


def _check_event(ev: Event) -> None:
    """Refuse an event that :func:`parse_log` would later reject (the session would be unreadable)."""
    if not isinstance(ev.type, str) or (ev.type not in KNOWN_TYPES and not ev.ignorable):
        raise InvalidEvent(f"unknown event type {ev.type!r} (mark it ignorable to store it)")
    if not isinstance(ev.data, dict):
        raise InvalidEvent(f"data of {ev.type} is not an object")
    if not isinstance(ev.time, int) or isinstance(ev.time, bool):
        raise InvalidEvent(f"time {ev.time!r} of {ev.type} is not an integer")
    clean_value(ev.data)  # raises InvalidEvent for NaN, objects, non-str keys


class GitStore(SessionStore):
    """Sessions as branches of a bare git repository.

    Args:
        path: the repository directory; created (``git init --bare`` + settings) on first write.
        identity: author and committer, ``"Name <email>"``.

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike, identity: str = DEFAULT_IDENTITY,
                 hook_env: Mapping[str, str] | None = None):
        self.path = Path(path)
        #: The sidecar files under ``<repo>/gs/`` (journals, locks, verified tips, pack state).
        self.state = RepoState(self.path)
        self.identity = identity.encode("utf-8")
        self._repo: Repo | None = None
        # commit id -> (session.jsonl bytes, number of events); saves append to the last one.
        self._cache: OrderedDict[str, tuple[bytes, int]] = OrderedDict()
        #: The environment the repo's commit hooks run in (see :mod:`.hooks`); the CLI passes its own.
        self.hook_env = hook_env
        #: Warnings for the user (a failed post-commit hook); the CLI prints them (take_warnings).
        self.warnings: list[str] = []

    # -- repository ------------------------------------------------------------------------

    def exists(self) -> bool:
        """Return True when the repository has been created."""
        return (self.path / "HEAD").exists() and (self.path / "objects").is_dir()

    def check_path(self) -> None:
        """Refuse to turn an existing file or non-empty folder that is not a session repo into one.

        Raises:
            RepoError: the path is a file, or a folder holding something else.
        """
        if self.exists() or not self.path.exists():
            return
        if not self.path.is_dir():
            raise RepoError(str(self.path), "it is a file, not a session repo")
        # What a bare repo holds (another process may be creating it right now) is fine.
        others = sorted(p.name for p in self.path.iterdir()
                        if p.name.removesuffix(".lock") not in _BARE_REPO_ENTRIES)
        if others:
            shown = ", ".join(others[:4]) + (", ..." if len(others) > 4 else "")
            raise RepoError(str(self.path), f"the folder holds other things ({shown}), not a session repo")

    def repo(self, create: bool = False) -> Repo | None:
        """Return the open dulwich ``Repo``; create it when ``create`` (else None if missing).

        Raises:
            RepoError: creating it would write into a file or a folder holding other things.
        """
        if self._repo is None:
            if self.exists():
                self._repo = Repo(str(self.path))
            elif create:
                self.check_path()
                self._repo = self._init()
            if self._repo is not None:
                # design.md asks for core.fsyncObjectFiles=true, but git >= 2.36 warns about
                # that key on every command; we ask dulwich for the same fsync directly.
                self._repo.object_store.fsync_object_files = True
        return self._repo

    def _init(self) -> Repo:
        # Several processes may make their first save at once: one initialises, under a lock.
        lock_path = self.path / "gs" / "locks" / "init.lock"
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            if not self.exists():
                repo = Repo.init_bare(str(self.path), mkdir=False)
                config = repo.get_config()
                for key, value in INIT_CONFIG.items():
                    config.set((b"core",), key, value)
                config.set((b"gc",), b"auto", b"0")  # dulwich's auto-gc repacks without deltas
                config.set((b"core",), b"logAllRefUpdates", b"true")
                config.write_to_path()
                repo.close()
        finally:
            os.close(fd)
        return Repo(str(self.path))  # reopen so the object store reads the settings

    def close(self) -> None:
        """Close the repository (safe to call twice)."""
        if self._repo is not None:
            self._repo.close()
            self._repo = None

    def __enter__(self) -> GitStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def journal(self, session_id: str) -> Journal:
        """Return the write-ahead journal of ``session_id`` (``<repo>/gs/journal/<id>.jsonl``)."""
        return self.state.journal(session_id)

    def journaled(self) -> list[str]:
        """Return the ids of sessions that have a journal (a turn in progress, or orphaned)."""
        return self.state.journaled()

    def lock(self, session_id: str) -> SessionLock:
        """Return the (not yet taken) writer lock of ``session_id`` (``<repo>/gs/locks/<id>.lock``).

        Raises:
            RepoError: the repo path is a file or a folder holding something else.
        """
        self.check_path()
        return self.state.lock(session_id)

    # -- reading ---------------------------------------------------------------------------

    def _ref(self, session_id: str) -> bytes:
        return _HEADS + check_session_id(session_id).encode("ascii")

    def session_ids(self) -> list[str]:
        """Return the ids of all sessions (branches), sorted."""
        repo = self.repo()
        if repo is None:
            return []
        return sorted(name.decode("utf-8", "replace") for name in repo.refs.keys(base=_HEADS))

    def tip(self, session_id: str) -> str | None:
        """Return the tip commit id of ``session_id`` or None."""
        repo = self.repo()
        if repo is None:
            return None
        try:
            return _hex(repo.refs[self._ref(session_id)])
        except KeyError:
            return None

    def find(self, session_id: str) -> str | None:
        """Return the existing id equal to ``session_id`` ignoring case, else None."""
        folded = session_id.casefold()
        for sid in self.session_ids():
            if sid.casefold() == folded:
                return sid
        return None

    def _commit(self, commit: str) -> Commit:
        repo = self.repo()
        assert repo is not None
        obj = repo[commit.encode("ascii")]
        if not isinstance(obj, Commit):
            raise NotCommitError(commit)
        return obj

    def _commit_info(self, sha: str, obj: Commit) -> CommitInfo:
        return CommitInfo(sha, [_hex(p) for p in obj.parents], obj.commit_time,
                          obj.commit_timezone, CommitMessage.decode(obj.message))

    def list_sessions(self) -> list[SessionInfo]:
        """Return one :class:`SessionInfo` per session, from tip commits only (no blob reads)."""
        out = []
        verified = self.state.verified()
        for sid in self.session_ids():
            try:
                tip = self.tip(sid)
            except InvalidSessionId:
                continue  # a branch made with plain git whose name is no session id
            if tip is None:
                continue
            try:
                obj = self._commit(tip)
            except (KeyError, NotCommitError, ObjectFormatException, ValueError) as exc:
                out.append(SessionInfo(sid, tip, 0, CommitMessage(""), error=f"unreadable tip: {exc}"))
                continue
            error = None
            if tip not in verified:
                # Written by something other than this store (plain git, a pull): check once.
                try:
                    self.load(sid, tip)
                except (CorruptSession, UnsupportedVersion) as exc:
                    error = str(exc)
            out.append(SessionInfo(sid, tip, obj.commit_time, CommitMessage.decode(obj.message), error))
        return out

    def _verified(self) -> set[str]:
        return self.state.verified()

    def _mark_verified(self, commit: str) -> None:
        self.state.mark_verified(commit)

    def read_raw(self, session_id: str, commit: str) -> bytes:
        """Return the bytes of ``session.jsonl`` at ``commit``.

        Raises:
            CorruptSession: the commit or its tree is missing or has no ``session.jsonl``.
        """
        cached = self._cache.get(commit)
        if cached is not None:
            return cached[0]
        repo = self.repo()
        assert repo is not None
        try:
            tree = repo[self._commit(commit).tree]
            _mode, blob_id = tree[SESSION_FILE]
            raw = repo[blob_id].as_raw_string()
        except KeyError as exc:
            raise CorruptSession(session_id, 0, f"commit {commit[:12]} lacks session.jsonl ({exc})") from None
        except (NotCommitError, ObjectFormatException) as exc:
            raise CorruptSession(session_id, 0, f"commit {commit[:12]} is unreadable ({exc})") from None
        return raw

    def load(self, session_id: str, commit: str | None = None) -> Snapshot:
        """Read ``session_id`` at ``commit`` (its tip when None) and validate it.

        Raises:
            SessionNotFound: no such branch.
            CorruptSession, UnsupportedVersion: the log cannot be read safely.
        """
        if commit is None:
            commit = self.tip(session_id)
            if commit is None:
                raise SessionNotFound(session_id, self.session_ids())
        raw = self.read_raw(session_id, commit)
        parsed = parse_log(raw, session_id)
        if parsed.dropped_tail:
            # A committed blob is always whole lines; a torn one was written by someone else.
            # Cut exactly the dropped last line (which may be empty: "...\n\n").
            body = raw[:-1] if raw.endswith(b"\n") else raw
            raw = raw[: body.rfind(b"\n") + 1]
        if commit not in self._cache:
            self.state.mark_verified(commit)
        self._remember(commit, raw, len(parsed.events))
        return Snapshot(session_id, commit, parsed.header, parsed.events, raw)

    def log(self, session_id: str, start: str | None = None, limit: int | None = None) -> list[CommitInfo]:
        """Return commits newest first, following first parents from ``start`` (default tip).

        Raises:
            SessionNotFound: no such branch.
        """
        sha = start or self.tip(session_id)
        if sha is None:
            raise SessionNotFound(session_id, self.session_ids())
        out: list[CommitInfo] = []
        while sha and (limit is None or len(out) < limit):
            obj = self._commit(sha)
            out.append(self._commit_info(sha, obj))
            sha = _hex(obj.parents[0]) if obj.parents else None
        return out

    # -- writing ---------------------------------------------------------------------------

    def _remember(self, commit: str, raw: bytes, n_events: int) -> None:
        self._cache[commit] = (raw, n_events)
        self._cache.move_to_end(commit)
        while len(self._cache) > 4:
            self._cache.popitem(last=False)

    def append(self, session_id: str, events: list[Event], message: CommitMessage, *,
               expected_tip: str | None, header: dict | None = None) -> str:
        """Save ``events`` as one commit on ``refs/heads/<session_id>``; return the commit id.

        The new ``session.jsonl`` is the old file's bytes plus one line per event (append
        only). The branch moves by compare-and-swap; when it lost the race nothing is
        overwritten and :class:`ConcurrentUpdate` is raised (the objects written are
        unreferenced and harmless).

        Raises:
            InvalidEvent: seq does not continue the log, or a value is not plain JSON.
            ConcurrentUpdate: the branch is not at ``expected_tip``.
            SessionExists: creating an id that exists (also differing only by case).
            CorruptSession: the parent's log cannot be read.
            HookRefused: the repo's pre-commit or commit-msg hook refused; nothing was written
                (a failed post-commit only adds to :attr:`warnings`; see :mod:`.hooks`).
        """
        ref = self._ref(session_id)
        if expected_tip is None:
            if header is None:
                raise InvalidEvent("a new session needs a header")
            existing = self.find(session_id)
            if existing is not None:
                raise SessionExists(session_id, existing)
            try:
                prefix, count = encode_header(header), 0
            except (TypeError, ValueError) as exc:
                raise InvalidEvent(f"the header is not plain JSON ({exc})") from None
        else:
            cached = self._cache.get(expected_tip)
            if cached is None:
                self.load(session_id, expected_tip)
                cached = self._cache[expected_tip]
            prefix, count = cached
            if not prefix.endswith(b"\n"):
                prefix += b"\n"  # a last line committed without its newline (another tool)
        for i, ev in enumerate(events):
            if ev.seq != count + i:
                raise InvalidEvent(f"event seq {ev.seq} does not continue the log (expected {count + i})")
            _check_event(ev)
        try:
            body = b"".join(ev.encode() for ev in events)
        except (TypeError, ValueError) as exc:
            raise InvalidEvent(f"a value is not plain JSON ({exc})") from None
        raw = prefix + body
        hooks = CommitHooks(self.path, self.hook_env)  # pre-commit, commit-msg: may raise HookRefused
        text = hooks.before(session_id, message.encode(), raw, body)
        repo = self.repo(create=True)
        assert repo is not None
        blob = Blob.from_string(raw)
        tree = Tree()
        tree.add(SESSION_FILE, 0o100644, blob.id)
        tree.check()
        self._add_object(repo, blob)
        self._add_object(repo, tree)
        commit = self._write_commit(repo, tree.id, [expected_tip] if expected_tip else [], text)
        reflog = ("commit (initial): " if expected_tip is None else "commit: ") + subject_of(text)
        self._swap(repo, ref, expected_tip, commit.id, reflog.encode("utf-8"), commit.commit_time,
                   commit.commit_timezone)
        if expected_tip is None:
            self._point_head(repo, ref)
        sha = _hex(commit.id)
        self._remember(sha, raw, count + len(events))
        self._mark_verified(sha)
        PackState(self.path).record_save(len(raw))
        self._post_commit(hooks, session_id, sha)
        return sha

    def _post_commit(self, hooks: CommitHooks, session_id: str, sha: str) -> None:
        warning = hooks.after(session_id, sha)
        if warning:
            self.warnings.append(warning)

    def take_warnings(self) -> list[str]:
        """Return the warnings collected since the last call (e.g. a failed post-commit hook) and forget them."""
        out, self.warnings = self.warnings, []
        return out

    def _write_commit(self, repo: Repo, tree: bytes, parents: list[str],
                      message: CommitMessage | bytes) -> Commit:
        """Build, check and store a commit object (author = committer = this store's identity)."""
        now = int(time.time())
        commit = Commit()
        commit.tree = tree
        commit.parents = [p.encode("ascii") for p in parents]
        commit.author = commit.committer = self.identity
        commit.author_time = commit.commit_time = now
        commit.author_timezone = commit.commit_timezone = time.localtime(now).tm_gmtoff
        commit.message = message if isinstance(message, bytes) else message.encode()
        commit.check()
        self._add_object(repo, commit)
        return commit

    def _add_object(self, repo: Repo, obj: Blob | Tree | Commit) -> None:
        """Write one loose object, clearing a ``.lock`` a killed writer left on that very object
        (a recovery rebuilds byte-identical objects, so it would otherwise fail forever)."""
        deadline = time.monotonic() + REF_LOCK_WAIT_S
        while True:
            try:
                repo.object_store.add_object(obj)
                return
            except FileLocked as exc:
                self._clear_stale_lock(exc.lockfilename)
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.005)

    # -- history: revisions, branches, archive ---------------------------------------------

    def resolve(self, rev: str) -> Revision:
        """Resolve ``SESSION``, ``SESSION~N``, ``SESSION^`` (git's meaning: N saves back along
        first parents; suffixes combine) or ``SESSION@COMMIT`` (a prefix of >= 4 hex digits of
        a commit in that session's history).

        Raises:
            BadRevision: malformed, or names no commit (the message names what exists).
            SessionNotFound: no such session.
        """
        m = REV_RE.match(rev)
        if not m:
            raise BadRevision(rev, "expected SESSION, SESSION~N, SESSION^ or SESSION@COMMIT")
        sid, suffix = m.group("id"), m.group("suffix")
        check_session_id(sid)
        tip = self.tip(sid)
        if tip is None:
            archived = self.archive_ref(sid)
            if archived:
                raise BadRevision(rev, f"session {sid!r} is archived; restore it with 'gs restore {sid}'")
            raise SessionNotFound(sid, self.session_ids())
        if not suffix:
            return Revision(sid, tip, True)
        if suffix.startswith("@"):
            prefix = suffix[1:].lower()
            if not re.fullmatch(r"[0-9a-f]{4,40}", prefix):
                raise BadRevision(rev, "a commit after @ is 4 to 40 hex digits")
            hits = [c.commit for c in self.log(sid) if c.commit.startswith(prefix)]
            if not hits:
                raise BadRevision(rev, f"no commit {prefix} in the history of {sid!r} (see 'gs log {sid}')")
            if len(hits) > 1:
                raise BadRevision(rev, f"{prefix} is ambiguous: " + ", ".join(h[:12] for h in hits))
            return Revision(sid, hits[0], hits[0] == tip)
        back = 0
        for step in re.findall(r"~\d*|\^+", suffix):
            back += (int(step[1:]) if step[1:] else 1) if step.startswith("~") else len(step)
        history = self.log(sid, limit=back + 1)
        if len(history) <= back:
            n = len(self.log(sid))
            raise BadRevision(rev, f"{sid!r} has {n} save{'s' if n != 1 else ''}, so {sid}~0 to {sid}~{n - 1} exist")
        return Revision(sid, history[back].commit, back == 0)

    def branch_from(self, session_id: str, commit: str, message: CommitMessage) -> str:
        """Create session ``session_id`` whose first commit sits on ``commit`` (same tree).

        O(1): one commit object, no content copied. Lineage lives in the parent link and the
        message's ``Forked-From`` trailer, so it survives push and clone; the caller derives
        the message (:func:`gitsessions.rules.commit_message`, kind ``fork``).

        Raises:
            SessionExists: the id is taken (also by case, or by an archived session).
            HookRefused: the repo's pre-commit or commit-msg hook refused (see :mod:`.hooks`).
        """
        check_session_id(session_id)
        check_free(self, session_id)
        repo = self.repo(create=True)
        assert repo is not None
        parent = self._commit(commit)
        hooks = CommitHooks(self.path, self.hook_env)
        text = hooks.before(session_id, message.encode(), lambda: self.read_raw(session_id, commit), b"",
                            action="fork")
        new = self._write_commit(repo, parent.tree, [commit], text)
        self._swap(repo, self._ref(session_id), None, new.id, f"branch: {subject_of(text)}".encode(),
                   new.commit_time, new.commit_timezone)
        if commit in self._verified():
            self._mark_verified(_hex(new.id))  # same tree, same log
        self._post_commit(hooks, session_id, _hex(new.id))
        return _hex(new.id)

    def rename(self, old: str, new: str) -> None:
        """Rename session ``old`` to ``new`` (the branch and its reflog move; history stays).

        Raises:
            SessionNotFound, SessionExists, ConcurrentUpdate.
        """
        sha = self.tip(old)
        if sha is None:
            raise SessionNotFound(old, self.session_ids())
        check_session_id(new)
        if new.casefold() != old.casefold():
            check_free(self, new)
        self._move_ref(self._ref(old), self._ref(new), sha, f"Branch: renamed {old} to {new}")

    def archive(self, session_id: str) -> str:
        """Move ``refs/heads/<id>`` to ``refs/archive/<id>`` (or ``<id>-<n>`` when that is taken).

        Returns:
            The archive name (``<id>`` or ``<id>-<n>``) to restore it by.
        """
        sha = self.tip(session_id)
        if sha is None:
            raise SessionNotFound(session_id, self.session_ids())
        name, n = session_id, 1
        while self.archive_ref(name):
            n += 1
            name = f"{session_id}-{n}"
        self._move_ref(self._ref(session_id), _ARCHIVE + name.encode(), sha, f"archive: {session_id}")
        return name

    def restore(self, name: str, as_id: str | None = None) -> str:
        """Move ``refs/archive/<name>`` back to a session (``as_id`` or ``name``); return its id."""
        sha = self.archive_ref(name)
        if sha is None:
            raise SessionNotFound(name, self.archived_ids())
        sid = as_id or name
        check_session_id(sid)
        existing = self.find(sid)
        if existing is not None:
            raise SessionExists(sid, existing)
        self._move_ref(_ARCHIVE + name.encode(), self._ref(sid), sha, f"restore: {name}")
        return sid

    def archive_ref(self, name: str) -> str | None:
        """Return the commit of archived session ``name``, or None."""
        repo = self.repo()
        if repo is None or not SESSION_ID_RE.match(name):
            return None
        try:
            return _hex(repo.refs[_ARCHIVE + name.encode()])
        except KeyError:
            return None

    def archived_ids(self) -> list[str]:
        """Return the names under ``refs/archive/``, sorted."""
        repo = self.repo()
        if repo is None:
            return []
        return sorted(n.decode("utf-8", "replace") for n in repo.refs.keys(base=_ARCHIVE))

    def archived_sessions(self) -> list[SessionInfo]:
        """Return :class:`SessionInfo` rows of archived sessions (from their tip commits)."""
        out = []
        for name in self.archived_ids():
            sha = self.archive_ref(name)
            if not sha:
                continue
            try:
                obj = self._commit(sha)
                out.append(SessionInfo(name, sha, obj.commit_time, CommitMessage.decode(obj.message)))
            except (KeyError, NotCommitError, ObjectFormatException, ValueError) as exc:
                out.append(SessionInfo(name, sha, 0, CommitMessage(""), error=f"unreadable tip: {exc}"))
        return out

    def update_ref(self, ref: bytes, old: str | None, new: str, message: str) -> bool:
        """Move ``ref`` from ``old`` (None: create) to ``new`` by compare-and-swap, with a reflog entry.

        Returns:
            False when the ref was not at ``old`` (nothing changed).
        """
        repo = self.repo(create=True)
        assert repo is not None
        now = int(time.time())
        try:
            self._swap(repo, ref, old, new.encode("ascii"), message.encode("utf-8"), now,
                       time.localtime(now).tm_gmtoff)
        except ConcurrentUpdate:
            return False
        if ref.startswith(_HEADS) and old is None:
            self._point_head(repo, ref)
        return True

    def _move_ref(self, src: bytes, dst: bytes, sha: str, msg: str) -> None:
        """Create ``dst`` at ``sha``, carry the reflog over, then delete ``src`` if still at ``sha``."""
        repo = self.repo()
        assert repo is not None
        now = int(time.time())
        tz = time.localtime(now).tm_gmtoff
        self._swap(repo, dst, None, sha.encode("ascii"), msg.encode("utf-8"), now, tz)
        logs = self.path / "logs"
        src_log, dst_log = logs / src.decode(), logs / dst.decode()
        if src_log.exists():
            # keep the old entries first, as git branch -m does
            dst_log.parent.mkdir(parents=True, exist_ok=True)
            new_entries = dst_log.read_bytes() if dst_log.exists() else b""
            dst_log.write_bytes(src_log.read_bytes() + new_entries)
        if not repo.refs.remove_if_equals(src, sha.encode("ascii")):
            repo.refs.remove_if_equals(dst, sha.encode("ascii"))
            raise ConcurrentUpdate(src.decode(), sha, None)
        try:
            src_log.unlink()
        except FileNotFoundError:
            pass
        if repo.refs.read_ref(b"HEAD") == b"ref: " + src:
            repo.refs.set_symbolic_ref(b"HEAD", dst)

    # -- packing ---------------------------------------------------------------------------

    def pack_due(self) -> bool:
        """True when enough saves piled up as loose objects that a repack should run."""
        return self.exists() and self.state.pack.due()

    def gc(self) -> RepackResult | None:
        """Repack everything reachable into one delta pack (see :mod:`gitsessions.store.pack`).

        Returns:
            The figures, or None when another process is repacking right now.
        """
        repo = self.repo()
        if repo is None:
            return RepackResult()
        result = self.state.pack.repack(repo)
        if result is not None:
            # keep only current tips in the verified-tips file (it gains a line per save)
            tips = [self.tip(sid) for sid in self.session_ids()] + [self.archive_ref(n) for n in self.archived_ids()]
            self.state.compact_verified(tips)
        self.close()  # reopen with a fresh pack list next time
        return result

    def _swap(self, repo: Repo, ref: bytes, old: str | None, new: bytes, msg: bytes,
              now: int, tz: int) -> None:
        """Move ``ref`` from ``old`` to ``new`` atomically, waiting out a briefly held lock."""
        deadline = time.monotonic() + REF_LOCK_WAIT_S
        kw = {"committer": self.identity, "timestamp": now, "timezone": tz, "message": msg}
        while True:
            try:
                if old is None:
                    ok = repo.refs.add_if_new(ref, new, **kw)
                else:
                    ok = repo.refs.set_if_equals(ref, old.encode("ascii"), new, **kw)
                break
            except FileLocked as exc:
                self._clear_stale_lock(exc.lockfilename)
                if time.monotonic() > deadline:
                    raise ConcurrentUpdate(ref.decode(), old, "locked by another process") from None
                time.sleep(0.005)
        if not ok:
            found = repo.refs.read_ref(ref)
            raise ConcurrentUpdate(ref.decode(), old, found.decode() if found else None)

    @staticmethod
    def _point_head(repo: Repo, ref: bytes) -> None:
        """Point HEAD at ``ref`` while it names no existing branch, so that ``git clone`` and
        ``git log`` without arguments find a session instead of an unborn ``master``."""
        try:
            target = repo.refs.read_ref(b"HEAD")
            if target and target.startswith(b"ref: ") and target[5:] not in repo.refs:
                repo.refs.set_symbolic_ref(b"HEAD", ref)
        except (OSError, KeyError, FileLocked):
            pass  # cosmetic: never fail a save over HEAD

    @staticmethod
    def _clear_stale_lock(lockfile: str | bytes) -> None:
        """Remove a ref ``.lock`` left behind by a dead process (older than STALE_REF_LOCK_S)."""
        path = os.fsdecode(lockfile)
        try:
            if time.time() - os.stat(path).st_mtime > STALE_REF_LOCK_S:
                os.unlink(path)
        except FileNotFoundError:
            pass

    # -- read-only helpers for history commands (log -p/--graph, diff, search) -------------

    def commit_info(self, commit: str) -> CommitInfo:
        """Return the :class:`CommitInfo` of one commit (no blob is read).

        Raises:
            KeyError: no such object.
        """
        return self._commit_info(commit, self._commit(commit))

    def first_parents(self, commit: str):
        """Yield :class:`CommitInfo` from ``commit`` back along first parents, lazily (newest first)."""
        sha: str | None = commit
        while sha:
            info = self.commit_info(sha)
            yield info
            sha = info.parents[0] if info.parents else None
