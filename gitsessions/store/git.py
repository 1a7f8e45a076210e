"""The git backend of the session store, built on dulwich.

Layout: a bare repository; session ``<id>`` is the branch
``refs/heads/<id>`` whose tree holds one file, ``session.jsonl``. A save builds a blob, a
tree and a commit as objects (no index, no working tree) and moves the branch by
compare-and-swap with a reflog entry. Plain ``git`` reads everything written here.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from dulwich.errors import NotCommitError, ObjectFormatException
from dulwich.graph import can_fast_forward
from dulwich.objects import Commit, ObjectID, Tree
from dulwich.refs import Ref

from ..errors import ConcurrentUpdate, CorruptSession, GitSessionsError
from ..ids import CommitId, SessionId, check_free, check_session_id, is_session_id
from ..log.commits import CommitMessage
from ..log.events import Event
from . import packed
from .base import SessionStore
from .batch import Line, Planned
from .faults import optional_write, writes
from .journal import Journal
from .kept import KeptLogs
from .layout import check_repo_path, is_repo
from .lock import SessionLock, clear_left, unless_held, wait_out
from .pack import RepackResult
from .packed import Damaged
from .reflog import branch_line, head_branch, head_ref, read_reflog, save_line
from .repo import (
    SESSION_FILE,
    add_blob,
    add_object,
    finish_move,
    init_repo,
    move_ref,
    point_head,
    read_refs,
    session_tree,
    swap,
    undo_move_start,
    write_commit,
)
from .shared import SessionRepo
from .state import LeftMove, ListRows, RepoState
from .unpack import read_blob
from .values import CommitInfo, Healed, HookRunner, MoveEnded, NoHooks, ReflogEntry
from .writers import census, writing

#: Identity used when neither config nor git names one.
DEFAULT_IDENTITY = "gitsessions <gitsessions@localhost>"
_HEADS = Ref(b"refs/heads/")
_ARCHIVE = Ref(b"refs/archive/")
_REMOTES = Ref(b"refs/remotes/")


def _hex(sha: bytes) -> CommitId:
    """A dulwich object id (hex bytes) as this package's :data:`CommitId`."""
    return CommitId(sha.decode("ascii"))


def _oid(commit: str) -> ObjectID:
    """A :data:`CommitId` (hex str) as dulwich's :data:`ObjectID`."""
    return ObjectID(commit.encode("ascii"))


def _prefix(buf: bytearray, size: int) -> Callable[[], bytes]:
    """What a pre-commit hook reads: the log at one commit (a copy, made only when a hook runs)."""
    return lambda: bytes(memoryview(buf)[:size])


def _archive_ref(name: str) -> Ref:
    return Ref(_ARCHIVE + name.encode())


class GitStore(SessionStore):
    """Sessions as branches of a bare git repository.

    Args:
        path: the repository directory; created (``git init --bare`` + settings) on first write.
        identity: author and committer, ``"Name <email>"``.
        hooks: runs the repo's commit hooks around each commit (the CLI passes a
            :class:`~.hooks.CommitHooks`); None runs none.

    Use as a context manager, or call :meth:`close`.
    """

    def __init__(self, path: str | os.PathLike, identity: str = DEFAULT_IDENTITY,
                 hooks: HookRunner | None = None):
        self.path = Path(path)
        #: The sidecar files under ``<repo>/gs/`` (journals, locks, verified tips, pack state).
        self.state = RepoState(self.path)
        self.identity = identity.encode("utf-8")
        self._repo: SessionRepo | None = None
        # the logs read or saved, by commit: a save appends to the last one's bytes.
        self._kept = KeptLogs()
        #: Runs the commit hooks (see :mod:`.hooks`); whoever built it collects its warnings.
        self.hooks: HookRunner = hooks if hooks is not None else NoHooks()

    # -- repository ------------------------------------------------------------------------

    def exists(self) -> bool:
        """Return True when the repository has been created."""
        return is_repo(self.path)

    def check_path(self) -> None:
        """Refuse to turn an existing file or non-empty folder that is not a session repo into one.

        Raises:
            RepoError: the path is a file, or a folder holding something else.
        """
        check_repo_path(self.path)

    def repo(self, create: bool = False) -> SessionRepo | None:
        """Return the open dulwich ``Repo``; create it when ``create`` (else None if missing).

        Raises:
            RepoError: creating it would write into a file or a folder holding other things.
        """
        if self._repo is None:
            if self.exists():
                self._repo = SessionRepo(str(self.path))
            elif create:
                self.check_path()
                self._repo = init_repo(self.path)
            if self._repo is not None:
                # Objects are fsynced: core.fsyncObjectFiles=true would say so, but git >= 2.36 warns
                # about that key on every command; we ask dulwich for the same fsync directly.
                self._repo.object_store.fsync_object_files = True
        return self._repo

    def close(self) -> None:
        """Close the repository (safe to call twice)."""
        if self._repo is not None:
            self._repo.close()
            self._repo = None

    def journal(self, session_id: str) -> Journal:
        """Return the write-ahead journal of ``session_id`` (``<repo>/gs/journal/<id>.jsonl``)."""
        return self.state.journal(session_id)

    def journaled(self) -> list[str]:
        """Return the ids of sessions that have a journal (a turn in progress, or orphaned)."""
        return self.state.journaled()

    def lock(self, session_id: str) -> SessionLock:
        """Return the (not yet taken) writer lock of ``session_id`` (``<repo>/gs/locks/<id>.lock``).

        Raises RepoError: the repo path is a file or a folder holding something else.
        """
        self.check_path()
        return self.state.lock(session_id)

    def import_lock(self) -> SessionLock:
        """Return the (not yet taken) repo-wide import lock (see :meth:`.state.RepoState.import_lock`)."""
        return self.state.import_lock()

    # -- reading ---------------------------------------------------------------------------

    def _ref(self, session_id: str) -> Ref:
        return Ref(_HEADS + check_session_id(session_id).encode("ascii"))

    def session_ids(self) -> list[SessionId]:
        """Return the ids of all sessions, sorted: branches named by a valid id (``feature/x`` is none).

        Their names only, from one listing of ``refs/heads`` and ``packed-refs``: no ref file is
        read (what :meth:`tips` reads, ~10 us each: an import of 1,000 sessions asks before each
        new one whether its id is taken, twice). A ref being created (its ``.lock``) is none
        yet; one whose file holds no commit id names a session that fails to load.
        """
        return [SessionId(n) for n in self._branch_names() if is_session_id(n)]

    def stranger_branches(self) -> list[str]:
        """Return the branches whose names are no session ids (``feature/x``, ``a.b``), sorted; names only, as above."""
        return [n for n in self._branch_names(nested=True) if not is_session_id(n)]

    def _branch_names(self, nested: bool = False) -> list[str]:
        """The names under ``refs/heads/``, packed or loose (``nested``: in folders too), sorted; no ref file read."""
        repo = self.repo()
        if repo is None:
            return []
        names = {ref[len(_HEADS):].decode("utf-8", "replace") for ref in repo.refs.get_packed_refs()
                 if ref.startswith(_HEADS)}
        todo = [""]
        while todo:
            folder = todo.pop()
            try:
                with os.scandir(os.path.join(repo.controldir(), "refs", "heads", folder)) as entries:
                    for e in entries:
                        if e.is_file(follow_symlinks=False) and not e.name.endswith(".lock"):
                            names.add(folder + e.name)
                        elif nested and e.is_dir(follow_symlinks=False):
                            todo.append(f"{folder}{e.name}/")
            except (FileNotFoundError, NotADirectoryError):
                pass
        return sorted(names)

    def tips(self) -> dict[SessionId, CommitId]:
        """Return every session's tip by id, sorted by id (one pass over the refs: what :meth:`tip` gives each)."""
        refs = read_refs(repo, _HEADS) if (repo := self.repo()) is not None else {}
        named = {ref[len(_HEADS):].decode("utf-8", "replace"): sha for ref, sha in refs.items()}
        return {SessionId(n): _hex(named[n]) for n in sorted(named) if is_session_id(n)}

    def tip(self, session_id: str) -> CommitId | None:
        """Return the tip commit id of ``session_id`` or None.

        Raises:
            InvalidSessionId: no valid id (also before the repository exists).
        """
        ref = self._ref(session_id)
        repo = self.repo()
        if repo is None:
            return None
        try:
            return _hex(repo.refs[ref])
        except KeyError:
            return None

    def _commit(self, commit: str) -> Commit:
        repo = self.repo()
        assert repo is not None
        obj = repo[_oid(commit)]
        if not isinstance(obj, Commit):
            raise NotCommitError(_oid(commit))
        return obj

    #: dulwich's errors for an object that is missing or damaged.
    unreadable = (KeyError, NotCommitError, ObjectFormatException, ValueError)

    def commit_info(self, commit: str) -> CommitInfo:
        """Return the :class:`CommitInfo` of one commit (no blob is read).

        Raises:
            KeyError: no such object.
        """
        obj = self._commit(commit)
        return CommitInfo(CommitId(commit), [_hex(p) for p in obj.parents], obj.commit_time, obj.commit_timezone,
                          CommitMessage.decode(obj.message), obj.author_time, obj.author_timezone)

    def _verified_tips(self) -> set[str]:
        return self.state.verified()

    def _mark_verified(self, commit: str, made: Commit | None = None) -> None:
        self.state.mark_verified(commit, (made.commit_time, made.message) if made is not None else None)

    def _received_tips(self) -> set[str]:
        return self.state.received()

    def _rows(self) -> ListRows:
        return self.state.rows

    def read_raw(self, session_id: str, commit: str) -> bytes:
        """Return the bytes of ``session.jsonl`` at ``commit``.

        Raises:
            CorruptSession: the commit or its tree is missing or has no ``session.jsonl``.
        """
        cached = self._kept.get(commit)
        if cached is not None:
            return cached.raw
        repo = self.repo()
        assert repo is not None
        try:
            tree = repo[self._commit(commit).tree]
            if not isinstance(tree, Tree):
                raise NotCommitError(tree.id)  # a commit whose tree is something else
            _mode, blob_id = tree[SESSION_FILE]
            # fewer copies of a 100 MB log alive than dulwich holds (it reads what this does not)
            raw = read_blob(repo, blob_id) or repo[blob_id].as_raw_string()
        except KeyError as exc:  # no such tree entry, or a missing object
            gone = exc.args[0] if exc.args else b""
            what = "has no session.jsonl" if gone == SESSION_FILE else f"lacks object {os.fsdecode(gone)}"
            raise CorruptSession(session_id, 0, f"commit {commit[:12]} {what}") from None
        except (NotCommitError, ObjectFormatException) as exc:
            raise CorruptSession(session_id, 0, f"commit {commit[:12]} is unreadable ({exc})") from None
        return raw

    def _loaded(self, commit: CommitId, raw: bytes, n_events: int) -> None:
        if self._kept.loaded(commit, raw, n_events):
            self._mark_verified(commit)

    def _events_at(self, session_id: str, commit: str) -> int:
        """How many events the log at ``commit`` holds, keeping that log for the save about to grow it."""
        if commit not in self._kept:  # a save appends to the bytes the last save left here
            self.load(session_id, commit)
        kept = self._kept.get(commit)
        assert kept is not None
        return kept.events

    # -- writing ---------------------------------------------------------------------------

    @writes
    def append(self, session_id: str, events: list[Event], message: CommitMessage, *,
               expected_tip: str | None, header: dict | None = None, author_time: int | None = None) -> CommitId:
        """Save ``events`` as one commit on ``refs/heads/<session_id>``; return the commit id.

        The new ``session.jsonl`` is the old file's bytes plus one line per event (append
        only). The branch moves by compare-and-swap; when it lost the race nothing is
        overwritten and :class:`ConcurrentUpdate` is raised (the objects written are
        unreferenced and harmless). ``author_time`` (epoch s) dates an imported turn; the committer date is now.

        Raises:
            InvalidEvent: seq does not continue the log, or a value is not plain JSON.
            ConcurrentUpdate: the branch is not at ``expected_tip``.
            SessionExists: creating an id that exists (also differing only by case).
            CorruptSession: the parent's log cannot be read.
            HookRefused: the repo's pre-commit or commit-msg hook refused; nothing was written
                (a failed post-commit is only a warning of the runner; see :mod:`.hooks`).
            DiskFull, RepoReadOnly: the file system refused a write (see :mod:`.faults`).
        """
        ref = self._ref(session_id)
        start, count = self._start(session_id, expected_tip, header)
        body = self._new_lines(events, count)
        buf, size = self._kept.grown(expected_tip, start, body)  # the old log's bytes, appended to in place
        hooks = self.hooks  # pre-commit, commit-msg: may raise HookRefused
        text = hooks.before(session_id, message.encode(), _prefix(buf, size), body)
        repo = self.repo(create=True)
        assert repo is not None
        kept = self._kept.deflated(expected_tip, repo.object_store.loose_compression_level)
        blob, deflated = add_blob(repo, memoryview(buf)[:size], kept)  # no view of buf stays
        tree = session_tree(blob)
        add_object(repo, tree)
        commit = write_commit(repo, self.identity, tree.id, [expected_tip] if expected_tip else [], text, author_time)
        self._swap(repo, ref, expected_tip, commit.id, save_line(text, created=expected_tip is None),
                   commit.commit_time, commit.commit_timezone)
        if expected_tip is None:  # an old one became current when it was opened (open_session)
            self._made_current(session_id)
        sha = _hex(commit.id)
        self._kept.put(sha, buf, count + len(events), deflated, size)
        self._mark_verified(sha, commit)  # and its list row
        self.state.pack.record_save(size)
        hooks.after(session_id, sha)  # a failure is the runner's warning; the save is done
        return sha

    @writes
    def append_many(self, session_id: str, commits: Sequence[Planned], *,
                    expected_tip: str | None, header: dict | None = None, current: bool = True) -> list[CommitId]:
        """Save ``commits`` one after another on ``session_id``, as one pack and one ref move (see :mod:`.batch`).

        What :meth:`append` does for each (the same checks, hooks, objects and commit ids),
        with one fsync of one pack for all of them instead of one per object, and the branch
        moved once, from ``expected_tip`` to the last commit.

        Args:
            session_id: the session.
            commits: ``(events, message, author_time)`` per commit, oldest first.
            expected_tip: the tip the first builds on; None creates the session.
            header: the header, required when creating.
            current: make a new session current (False: the caller does, once for many).

        Returns:
            The commit ids, oldest first.

        Raises:
            InvalidEvent, SessionExists, CorruptSession, HookRefused, DiskFull, RepoReadOnly:
                as :meth:`append` (nothing of the line is referenced then).
            ConcurrentUpdate: the branch is not at ``expected_tip`` when it is moved (the
                pack stays unreferenced; nothing is overwritten).
        """
        if not commits:
            return []
        ref = self._ref(session_id)
        start, count = self._start(session_id, expected_tip, header)
        repo = self.repo(create=True)
        assert repo is not None
        line = Line(self.identity, expected_tip)
        hooks = self.hooks
        for events, message, author_time in commits:
            body = self._new_lines(events, count)
            buf, size = self._kept.grown(line.tip, start, body)
            line.add(buf, size, hooks.before(session_id, message.encode(), _prefix(buf, size), body), author_time)
            count += len(events)
            assert line.tip is not None
            self._kept.put(line.tip, buf, count)  # the next one grows the same buffer in place
            start = b""
        made = line.write(repo)
        last = made[-1]
        now = int(time.time())
        self._swap(repo, ref, expected_tip, last.id, save_line(last.message, created=expected_tip is None,
                                                               commits=len(made)),
                   now, time.localtime(now).tm_gmtoff)
        if expected_tip is None:
            self._made_current(session_id, current)
        shas = [_hex(c.id) for c in made]
        self._mark_verified(shas[-1], last)  # the tip, and its list row
        for sha in shas:
            hooks.after(session_id, sha)  # a failure is the runner's warning; the line is saved
        return shas

    def _start(self, session_id: str, expected_tip: str | None, header: dict | None) -> tuple[bytes, int]:
        """What a save writes before its events, and how many the log holds: a new session's header line, or none.

        Raises:
            InvalidEvent, SessionExists, CorruptSession: see :meth:`append`.
        """
        if expected_tip is None:
            return self._new_header(session_id, header), 0
        return b"", self._events_at(session_id, expected_tip)

    # -- branches and the archive ----------------------------------------------------------

    @writes
    def branch_from(self, session_id: str, commit: str, message: CommitMessage, *, reason: str | None = None,
                    author_time: int | None = None, current: bool = True) -> CommitId:
        """Create session ``session_id`` whose first commit sits on ``commit`` (same tree).

        O(1): one commit object, no content copied. Lineage lives in the parent link and the
        message's ``Forked-From`` trailer, so it survives push and clone; the caller derives
        the message (:func:`gitsessions.log.commits.commit_message`, kind ``fork``). ``reason`` is the
        reflog line (default ``branch: <subject>``); ``author_time``, ``current`` as in the base class.

        Raises:
            SessionExists: the id is taken (also by case, or by an archived session).
            HookRefused: the repo's pre-commit or commit-msg hook refused (see :mod:`.hooks`).
        """
        check_session_id(session_id)
        check_free(self, session_id)
        repo = self.repo(create=True)
        assert repo is not None
        parent = self._commit(commit)
        hooks = self.hooks
        text = hooks.before(session_id, message.encode(), lambda: self.read_raw(session_id, commit), b"",
                            action="fork")
        new = write_commit(repo, self.identity, parent.tree, [commit], text, author_time)
        self._swap(repo, self._ref(session_id), None, new.id, reason.encode() if reason else branch_line(text),
                   new.commit_time, new.commit_timezone)
        self._made_current(session_id, current)
        if commit in self._verified_tips():
            self._mark_verified(_hex(new.id), new)  # same tree, same log
        hooks.after(session_id, _hex(new.id))  # a failure is the runner's warning
        return _hex(new.id)

    def archive_ref(self, name: str) -> CommitId | None:
        """Return the commit of archived session ``name``, or None."""
        repo = self.repo()
        if repo is None or not is_session_id(name):
            return None
        try:
            return _hex(repo.refs[_archive_ref(name)])
        except KeyError:
            return None

    def archived_ids(self) -> list[str]:
        """Return the names under ``refs/archive/``, sorted."""
        repo = self.repo()
        if repo is None:
            return []
        return sorted(n.decode("utf-8", "replace") for n in repo.refs.keys(base=_ARCHIVE))

    @writes
    def update_ref(self, ref: Ref, old: str | None, new: str, message: str) -> bool:
        """Move ``ref`` from ``old`` (None: create) to ``new`` by compare-and-swap, with a reflog entry.

        Returns:
            False when the ref was not at ``old`` (nothing changed).
        """
        repo = self.repo(create=True)
        assert repo is not None
        now = int(time.time())
        try:
            self._swap(repo, ref, old, _oid(new), message.encode("utf-8"), now, time.localtime(now).tm_gmtoff)
        except ConcurrentUpdate:
            return False
        return True

    @writes
    def remove_ref(self, ref: Ref, old: str, *, renamed_to: Ref | None = None) -> bool:
        """Remove ``ref`` if it is still at ``old``; ``renamed_to``: its session's name now (a pull: renamed there).

        Returns:
            False when the ref was not at ``old`` (nothing changed).
        """
        repo = self.repo()
        assert repo is not None
        if not repo.refs.remove_if_equals(ref, _oid(old)):
            return False
        if renamed_to is not None and ref.startswith(_HEADS) and renamed_to.startswith(_HEADS):
            self._follow(ref[len(_HEADS):].decode(), renamed_to[len(_HEADS):].decode())
        return True

    def _move(self, src: str, dst: str, commit: str, message: str, *,
              from_archive: bool = False, to_archive: bool = False) -> None:
        self._move_ref(*self._refs_of_move(src, dst, from_archive, to_archive), commit, message)

    def _refs_of_move(self, src: str, dst: str, from_archive: bool, to_archive: bool) -> tuple[Ref, Ref]:
        return (_archive_ref(src) if from_archive else self._ref(src),
                _archive_ref(dst) if to_archive else self._ref(dst))

    def _recorded_move(self, src: str, dst: str, commit: str, message: str, *,
                       from_archive: bool = False, to_archive: bool = False) -> contextlib.AbstractContextManager[None]:
        """Record the move in ``<repo>/gs/moves/`` while it runs (:meth:`.state.RepoState.moving`).

        :meth:`heal` ends one a killed process left.
        """
        old, new = self._refs_of_move(src, dst, from_archive, to_archive)
        return self.state.moving(old, new, commit, message.encode("utf-8"))

    @writes
    def _move_ref(self, src: Ref, dst: Ref, sha: str, msg: str) -> None:
        repo = self.repo()
        assert repo is not None
        move_ref(repo, src, dst, _oid(sha), committer=self.identity, message=msg.encode("utf-8"))

    # -- HEAD and the reflogs (see :mod:`.reflog`) ------------------------------------------

    def _head_id(self) -> str | None:
        return head_branch(self.path)

    def current(self) -> SessionId | None:
        """Return the session ``HEAD`` names when it exists, else None (detached, unborn, not a session)."""
        name = head_branch(self.path)
        if name is None or not is_session_id(name) or self.tip(name) is None:
            return None
        return SessionId(name)

    def head_ref(self) -> str | None:
        """Return the ref ``HEAD`` names (``refs/heads/work``), existing or not; None when detached or missing."""
        return head_ref(self.path)

    def set_current(self, session_id: str) -> None:
        """Point ``HEAD`` at ``refs/heads/<session_id>`` (one read when it already does; never fails).

        Raises:
            InvalidSessionId: no valid id.
        """
        ref = self._ref(session_id)
        if head_branch(self.path) == session_id or (repo := self.repo()) is None:
            return
        with contextlib.suppress(OSError, KeyError), writing(self.path):  # cosmetic: a full or read-only disk
            unless_held(lambda: point_head(repo, ref))  # another gs points it right now; never fails a save

    def reflog(self, name: str, archived: bool = False) -> list[ReflogEntry]:
        """Return the reflog of session ``name`` (archived session ``name``), oldest first (:func:`.read_reflog`)."""
        return read_reflog(self.path, name, archived)

    def tracking(self, session_id: str) -> dict[str, CommitId]:
        """Return remote name -> the commit its tracking ref ``refs/remotes/<remote>/heads/<id>`` holds."""
        repo = self.repo()
        if repo is None:
            return {}
        tail = b"/heads/" + check_session_id(session_id).encode("ascii")
        out = {}
        for ref, sha in read_refs(repo, _REMOTES).items():
            if ref.endswith(tail) and b"/" not in ref[len(_REMOTES):-len(tail)]:
                out[ref[len(_REMOTES):-len(tail)].decode("utf-8", "replace")] = _hex(sha)
        return dict(sorted(out.items()))

    # -- a damaged packed-refs (see :mod:`.packed`) ------------------------------------------

    def damaged_refs(self) -> list[Damaged]:
        """Return the damaged lines of the repo's ``packed-refs`` (read without opening the repo; none: whole)."""
        return packed.damage(self.path)

    @writes
    def set_damage_aside(self) -> tuple[Path, list[Damaged]]:
        """Move the damaged lines of ``packed-refs`` into ``gs/damaged/``, the file rewritten whole.

        See :func:`.packed.set_aside`.

        Returns:
            The file they went to, and the lines (none: nothing was damaged, nothing written).
        """
        repo = self.repo()
        if repo is None:
            return Path(), []
        keep = self.state.root / "damaged" / f"packed-refs-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}"
        return keep, packed.set_aside(repo, keep)

    # -- what killed processes left --------------------------------------------------------

    def heal(self, everything: bool = False) -> Healed:
        """Mend what gs processes killed while writing here left half done; what every command does first.

        When a writer died (:mod:`.writers`), or ``everything`` is asked (``gs gc``, ``gs
        doctor``: also what a writer naming itself nowhere left, judged by its age), the
        files it left are removed (:func:`.lock.clear_left`); then each move of a session it
        left half done is ended (:meth:`_end_move`). On a repo that cannot be written nothing
        is done (reads work all the same); a move another live writer blocks is left to the
        next command.

        Returns:
            What was mended.
        """
        healed = Healed()
        if not self.exists():
            return healed
        if everything or (writers := census(self.path)).dead or writers.half:
            optional_write(lambda: healed.cleared.extend(clear_left(self.path)))
        for left in self.state.left_moves():
            with contextlib.suppress(GitSessionsError):
                optional_write(lambda left=left: healed.moves.append(self._end_move(left)))  # type: ignore[misc]
        return healed

    @writes
    def _end_move(self, left: LeftMove) -> MoveEnded:
        """Complete a move whose new name was made, else take it back; the HEAD policy after it (:meth:`_moved`) runs.

        A session saved under its old name meanwhile keeps it (both names hold their saves).

        Raises:
            RepoBusy: another live process holds a ref of the move locked (the record stays).
        """
        repo = self.repo()
        assert repo is not None
        src, dst, sha = Ref(left.src), Ref(left.dst), _oid(left.commit)
        from_archive, to_archive = src.startswith(_ARCHIVE), dst.startswith(_ARCHIVE)
        names = [ref.split(b"/", 2)[2].decode("utf-8", "replace") for ref in (src, dst)]
        kind = "archive" if to_archive else "restore" if from_archive else "rename"
        now = repo.refs.read_ref(dst)
        if now is None:
            undo_move_start(repo, dst, sha, left.message)
            outcome = "taken back"
        else:
            holds = now == sha or can_fast_forward(repo, sha, ObjectID(now))
            outcome = "completed" if holds and wait_out(lambda: finish_move(repo, src, dst, sha)) else "both kept"
            if outcome == "completed":
                self._moved(*names, from_archive=from_archive, to_archive=to_archive)
        left.record.unlink(missing_ok=True)
        return MoveEnded(kind, names[0], names[1], outcome)

    # -- packing ---------------------------------------------------------------------------

    def pack_due(self) -> bool:
        """True when enough saves piled up as loose objects, or enough packs, that a repack should run."""
        return self.exists() and self.state.pack.due()

    @writes
    def gc(self, incremental: bool = False) -> RepackResult | None:
        """Repack all into one delta pack (:mod:`.pack`); ``incremental``: only loose objects (:mod:`.thinpack`).

        Returns:
            The figures, or None when another process is repacking right now.
        """
        if (repo := self.repo()) is None:
            return RepackResult()
        result = self.state.pack.repack(repo, incremental)
        if result is not None:  # keep only current tips in the tips caches (they gain a line per save)
            self.state.compact_verified([*self.tips().values(), *map(self.archive_ref, self.archived_ids())])
        self.close()  # reopen with a fresh pack list next time
        return result

    def _swap(self, repo: SessionRepo, ref: Ref, old: str | None, new: ObjectID, msg: bytes, now: int, tz: int) -> None:
        swap(repo, ref, None if old is None else _oid(old), new, committer=self.identity, message=msg, now=now, tz=tz)
