"""The bare repository on disk: creating it once, and moving its refs safely.

Everything here is git plumbing the git backend needs around its objects: the settings a
new session repo gets (:data:`INIT_CONFIG`), compare-and-swap of a ref that waits out
a briefly held ``.lock`` and clears one a dead process left, and a ref move that carries its
reflog along as ``git branch -m`` does.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import threading
import time
from pathlib import Path

from dulwich.file import adjust_shared_perm
from dulwich.object_store import PACK_MODE
from dulwich.objects import Blob, Commit, ObjectID, Tree
from dulwich.refs import Ref
from dulwich.repo import Repo

from ..errors import ConcurrentUpdate
from .layout import is_repo
from .lock import REF_HELD, clear_stale_lock, wait_out
from .loose import Deflated, blob_id
from .packed import SessionRefs
from .shared import SessionRepo, write_config

#: Settings written at init: loose objects compressed fast (a save is a new blob), no automatic gc
#: (dulwich's repacks without deltas in the foreground).
INIT_CONFIG = {
    b"looseCompression": b"1",  # ~6x faster saves for MB-size files
}
HEAD = Ref(b"HEAD")
#: The one file in every session tree.
SESSION_FILE = b"session.jsonl"
_HEX = frozenset(b"0123456789abcdef")
def init_repo(path: Path) -> SessionRepo:
    """Create the bare session repo at ``path`` with its settings (once, whoever races) and open it."""
    # Several processes may make their first save at once: one initialises, under a lock.
    lock_path = path / "gs" / "init.lock"  # beside locks/, whose names are session ids ("init" is one)
    path.mkdir(mode=0o700, parents=True, exist_ok=True)  # private whatever the umask (store/privacy.py)
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if not is_repo(path):
            # A folder that was there (an empty one the user made) becomes the repo: private,
            # as one gs makes (a shared repo is made shared after, with git's setting).
            os.chmod(path, stat.S_IMODE(os.stat(path).st_mode) & ~0o077)
            # Made aside and moved in, HEAD last (what makes it a repo): a folder a killed
            # init left half made (or holding hooks/ already) is completed, not refused forever.
            staging = path / "gs" / "init-staging"
            shutil.rmtree(staging, ignore_errors=True)
            repo = Repo.init_bare(str(staging), mkdir=True)
            config = repo.get_config()
            for key, value in INIT_CONFIG.items():
                config.set((b"core",), key, value)
            config.set((b"gc",), b"auto", b"0")  # dulwich's auto-gc repacks without deltas
            config.set((b"core",), b"logAllRefUpdates", b"true")
            write_config(repo, config)
            repo.close()
            for name in sorted(os.listdir(staging), key=lambda n: n == "HEAD"):
                if not (path / name).exists():
                    os.rename(staging / name, path / name)
            shutil.rmtree(staging, ignore_errors=True)
    finally:
        os.close(fd)
    return SessionRepo(str(path))  # reopen so the object store reads the settings


def swap(repo: Repo, ref: Ref, old: ObjectID | None, new: ObjectID, *, committer: bytes, message: bytes,
         now: int, tz: int) -> None:
    """Move ``ref`` from ``old`` (None: create) to ``new`` atomically, with a reflog entry.

    A ref lock another process holds is waited out (:func:`.lock.wait_out`).

    Raises:
        ConcurrentUpdate: the ref was not at ``old``, or stayed locked.
    """
    expected = old.decode("ascii") if old is not None else None

    def move() -> bool:
        if old is None:
            return repo.refs.add_if_new(ref, new, committer=committer, timestamp=now, timezone=tz, message=message)
        return repo.refs.set_if_equals(ref, old, new, committer=committer, timestamp=now, timezone=tz,
                                       message=message)

    ok = wait_out(move, refused=lambda: ConcurrentUpdate(ref.decode(), expected, REF_HELD))
    if not ok:
        found = repo.refs.read_ref(ref)
        raise ConcurrentUpdate(ref.decode(), expected, found.decode() if found else None)


def move_ref(repo: Repo, src: Ref, dst: Ref, sha: ObjectID, *, committer: bytes, message: bytes) -> None:
    """Create ``dst`` at ``sha``, carry the reflog over, then delete ``src`` if still at ``sha`` (HEAD is the store's).

    A process killed on the way leaves a move :func:`finish_move` completes (the store records
    each move it makes, for the next command to find).

    Raises:
        ConcurrentUpdate: ``dst`` exists, or ``src`` moved meanwhile (then ``dst`` is removed again).
        RepoDamaged: ``src`` is packed, and ``packed-refs`` holds a damaged line (nothing moved).
    """
    if isinstance(repo.refs, SessionRefs):
        repo.refs.refuse_rewrite(src)  # before anything moves: its removal would drop the line
    now = int(time.time())
    swap(repo, dst, None, sha, committer=committer, message=message, now=now, tz=time.localtime(now).tm_gmtoff)
    _carry_reflog(repo, src, dst)
    if not repo.refs.remove_if_equals(src, sha):
        repo.refs.remove_if_equals(dst, sha)
        raise ConcurrentUpdate(src.decode(), sha.decode("ascii"), None)
    _drop_reflog(repo, src)


def finish_move(repo: Repo, src: Ref, dst: Ref, sha: ObjectID) -> bool:
    """Complete a move of ``src`` to ``dst`` that a killed process began, once ``dst`` exists.

    Each step of :func:`move_ref` is done once, whatever was done before: the old reflog
    entries are put before the new ones unless they are there already, then ``src`` goes if
    it is still at ``sha``, then its reflog.

    Returns:
        False when ``src`` is at another commit (saved meanwhile: it stays, with its reflog).
    """
    _carry_reflog(repo, src, dst)
    if not repo.refs.remove_if_equals(src, sha) and repo.refs.read_ref(src) is not None:
        return False
    _drop_reflog(repo, src)
    return True


def _carry_reflog(repo: Repo, src: Ref, dst: Ref) -> None:
    """Put the reflog entries of ``src`` before those of ``dst`` (as ``git branch -m`` keeps them), unless there.

    The file is replaced whole, never left half written.
    """
    logs = Path(repo.controldir()) / "logs"
    src_log, dst_log = logs / src.decode(), logs / dst.decode()
    old = src_log.read_bytes() if src_log.exists() else b""
    new = dst_log.read_bytes() if dst_log.exists() else b""
    if old and not new.startswith(old):
        _replace_file(Path(repo.controldir()) / "gs", dst_log, old + new)


def _drop_reflog(repo: Repo, ref: Ref) -> None:
    with contextlib.suppress(FileNotFoundError):
        (Path(repo.controldir()) / "logs" / ref.decode()).unlink()


def undo_move_start(repo: Repo, dst: Ref, sha: ObjectID, message: bytes) -> None:
    """Take back the reflog line a move that never made ``dst`` (its process killed) wrote for it.

    dulwich writes a ref's reflog line before the ref itself: when ``dst`` does not exist, a
    last line of its reflog that created it at ``sha`` with ``message`` is that move's, and goes.
    """
    log = Path(repo.controldir()) / "logs" / dst.decode()
    try:
        lines = log.read_bytes().splitlines(keepends=True)
    except FileNotFoundError:
        return
    last = lines[-1] if lines else b""
    if last.startswith(b"0" * 40 + b" " + sha + b" ") and last.rstrip(b"\n").endswith(b"\t" + message):
        if len(lines) == 1:
            log.unlink()
        else:
            _replace_file(Path(repo.controldir()) / "gs", log, b"".join(lines[:-1]))


def _replace_file(scratch: Path, path: Path, data: bytes) -> None:
    """Replace ``path`` by ``data`` at once: written aside in ``scratch`` (same file system), renamed over it."""
    scratch.mkdir(parents=True, exist_ok=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = scratch / f".{path.name}-{os.urandom(4).hex()}"
    try:
        temp.write_bytes(data)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def point_head(repo: Repo, ref: Ref) -> None:
    """Point HEAD at ``ref`` (nothing is written when it does already)."""
    if repo.refs.read_ref(HEAD) != b"ref: " + ref:
        repo.refs.set_symbolic_ref(HEAD, ref)


def session_tree(blob: ObjectID) -> Tree:
    """Return the tree of a save: :data:`SESSION_FILE` holding ``blob`` (built and checked, not stored)."""
    tree = Tree()
    tree.add(SESSION_FILE, 0o100644, blob)
    tree.check()
    return tree


def write_commit(repo: Repo, identity: bytes, tree: ObjectID, parents: list[str], message: bytes,
                 author_time: int | None = None) -> Commit:
    """Build, check and store a commit object as a loose object (:func:`make_commit`, whose errors it raises)."""
    commit = make_commit(identity, tree, parents, message, author_time)
    add_object(repo, commit)
    return commit


def make_commit(identity: bytes, tree: ObjectID, parents: list[str], message: bytes,
                author_time: int | None = None) -> Commit:
    """Build, check and return a commit object made now (author = committer = ``identity``); nothing is stored.

    Args:
        identity: ``b"Name <email>"``.
        tree: the commit's tree.
        parents: parent commit ids (hex).
        message: the encoded message.
        author_time: the author date, epoch seconds (an imported turn's original time, so
            ``git log`` shows when it was said); None: now. When given it is the committer
            date too, both in UTC: the same import on two machines makes the same commits, so
            a sync finds them equal instead of two sessions made on both (as ``git
            fast-import`` takes both dates from the source).

    Raises:
        ValueError: ``author_time`` before 1970 or past 2106 (a caller's bug: readers check it).
    """
    if author_time is not None and not 0 <= author_time < 2**32:  # git fsck: badDateOverflow
        raise ValueError(f"author time {author_time} is outside what a git commit can hold")
    when = int(time.time()) if author_time is None else author_time
    tz = time.localtime(when).tm_gmtoff if author_time is None else 0
    commit = Commit()
    commit.tree = tree
    commit.parents = [ObjectID(p.encode("ascii")) for p in parents]
    commit.author = commit.committer = identity
    commit.commit_time = commit.author_time = when
    commit.commit_timezone = commit.author_timezone = tz
    commit.message = message
    commit.check()  # dulwich writes malformed objects without complaint
    return commit


def add_object(repo: Repo, obj: Blob | Tree | Commit) -> None:
    """Write one loose object, clearing a ``.lock`` a killed writer left on that very object.

    A recovery rebuilds byte-identical objects, so it would otherwise fail forever.

    Raises:
        RepoBusy: another live writer holds that object's lock past :data:`.lock.REF_LOCK_WAIT_S`.
    """
    wait_out(lambda: repo.object_store.add_object(obj))


#: Content at least this large is hashed in a thread of its own while this one compresses
#: and writes the object (hashlib, os.write and os.fsync release the GIL): at 3.9 MB the two
#: take ~2.5 ms each, so a save of a long session costs one of them, not both. Below this
#: the thread costs more than the hash (~0.7 ms per MB) it moves.
HASH_IN_THREAD_BYTES = 256 * 1024
_TEMP_PREFIX = "tmp_obj_"  # git's name for an object being written; `git prune` removes old ones


def add_blob(repo: Repo, content: bytes | memoryview, kept: Deflated) -> tuple[ObjectID, Deflated]:
    """Write the blob of ``content`` as a loose object, compressing only what ``kept`` does not cover.

    What ``add_object`` of a :class:`~dulwich.objects.Blob` does (see :mod:`.loose` for why
    not through it), with the SHA-1 and the write side by side: the object is written to a
    temporary file of its own in ``objects/`` (as git does: its name needs the SHA-1, which
    a large content is still being hashed for), fsynced when the store fsyncs, and renamed
    into place, so a crash leaves the old state or the whole object, never a part. A file
    already in place is only freshened, and a stale ``<object>.lock`` a killed writer left
    there is cleared.

    Args:
        repo: the repository.
        content: the blob's content; it must not change until this returns.
        kept: the compressed state of a prefix of ``content`` (:meth:`Deflated.grown`).

    Returns:
        The blob's id, and the compressed state of exactly ``content``.

    Raises:
        OSError: the file system refused a write (the temporary file is removed).
    """
    hashed: list[ObjectID] = []
    hashing = None
    if len(content) >= HASH_IN_THREAD_BYTES:
        hashing = threading.Thread(target=lambda: hashed.append(blob_id(content)), name="gs-blob-sha1")
        hashing.start()
    try:
        deflated = kept.grown(content)  # only the new lines and the old tail
        temp = _write_temp(repo, b"".join(deflated.loose_object()))  # one write: ~3x faster than one per segment
    finally:
        if hashing is not None:
            hashing.join()  # even on an error: the thread holds a view of the caller's buffer
    sha = hashed[0] if hashed else blob_id(content)
    _place(repo, temp, sha)
    return sha, deflated


def _write_temp(repo: Repo, data: bytes) -> str:
    """Write ``data`` to a new temporary object file in ``objects/``; return its path."""
    store = repo.object_store
    while True:
        temp = os.path.join(store.path, f"{_TEMP_PREFIX}{os.urandom(6).hex()}")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, PACK_MODE)
            break
        except FileExistsError:
            continue
    try:
        try:
            view = memoryview(data)
            while view:  # a write to a file may take less than all (a disk filling up)
                view = view[os.write(fd, view):]
            if store.fsync_object_files:
                os.fsync(fd)
        finally:
            os.close(fd)
        adjust_shared_perm(temp, store.shared_perm)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    return temp


def _place(repo: Repo, temp: str, sha: ObjectID) -> None:
    """Rename the object written to ``temp`` to its name; only freshen a copy already there."""
    store = repo.object_store
    folder = os.path.join(store.path, sha[:2].decode("ascii"))
    path = os.path.join(folder, sha[2:].decode("ascii"))
    try:
        try:
            os.mkdir(folder)
            adjust_shared_perm(folder, store.shared_perm)
        except FileExistsError:
            pass
        if os.path.exists(path):
            os.utime(path, None)  # as dulwich: a fresh mtime keeps a concurrent prune off it
            os.unlink(temp)
        else:
            os.rename(temp, path)  # another writer's rename of the same bytes is as good as ours
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    clear_stale_lock(path + ".lock")  # left by a killed dulwich writer of this very object


def read_refs(repo: Repo, prefix: bytes) -> dict[Ref, ObjectID]:
    """Return every ref under ``prefix`` (such as ``b"refs/heads/"``) and the id it holds, in one pass.

    What dulwich's ``refs.as_dict`` gives (loose refs over ``packed-refs``, git's rule) without
    its lookup of each ref by name (~25 us a ref: most of listing or syncing 1,000 sessions):
    each loose ref file is read once. A symbolic ref is followed by dulwich; ``*.lock`` files
    (a write in progress) are no refs.

    Args:
        repo: the open repository.
        prefix: the folder of refs, ending in ``/``.

    Returns:
        Full ref name -> object id (hex).
    """
    out = {name: sha for name, sha in repo.refs.get_packed_refs().items() if name.startswith(prefix)}
    root = os.fsencode(repo.controldir())
    todo = [prefix]
    while todo:
        folder = todo.pop()
        try:
            entries = list(os.scandir(os.path.join(root, folder)))
        except (FileNotFoundError, NotADirectoryError):
            continue
        for entry in entries:
            name = Ref(folder + entry.name)
            if entry.is_dir(follow_symlinks=False):
                todo.append(Ref(name + b"/"))
                continue
            if name.endswith(b".lock"):
                continue
            try:  # os.open/os.read: half the cost of a file object, for a 41-byte file
                fd = os.open(entry.path, os.O_RDONLY)
            except FileNotFoundError:
                continue  # deleted meanwhile
            try:
                value = os.read(fd, 256).strip()
            finally:
                os.close(fd)
            if value.startswith(b"ref: "):
                try:
                    out[name] = repo.refs[name]
                except KeyError:
                    out.pop(name, None)
            elif len(value) == 40 and _HEX.issuperset(value):
                out[name] = ObjectID(value)
    return out
