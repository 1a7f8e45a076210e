"""Disk faults, with the real conditions: a disk that fills, a read-only mount.

- A **read-only repo**: a real read-only bind mount of a session repo. Every read command
  works; a turn left in a journal is reported, not committed; a write says the repo is
  read-only (exit 1). Once the mount is gone, the next command saves the journaled turn.
- A **full disk**: the session repo on a real 2 MB tmpfs, filled at one write of a turn (the
  journal, the blob, the tree, the commit, the ref): a trigger in the ``gs`` process (a
  ``sitecustomize`` on its path, watching ``os.open``) fills the tmpfs with a file just
  before that write, so the kernel refuses the write itself with ``ENOSPC``.
- **kill -9 at each write**: the same trigger sends the process SIGKILL just before it.

After each: no traceback, one line saying what happened and what to do, exit 1 (or the
kill's status), the prompt and the reply kept (or the prompt handed back), ``git fsck
--strict`` clean, and the next command on that session works once the fault is gone.
Mounting needs root (or CAP_SYS_ADMIN); without it these tests skip, saying so.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import GS

SID = "work"
TIMEOUT = 10

#: The trigger loaded into each ``gs`` process (see the module docstring). ``GSFAULT`` is
#: ``ACTION:WHAT:N``: ACTION ``fill`` (fill the file system at ``GSFAULT_FILL``) or ``kill``;
#: WHAT ``journal`` (the N-th record written to the journal), ``object`` (the N-th loose object
#: opened: 1 blob, 2 tree, 3 commit) or ``ref`` (the session's ref lock).
SITECUSTOMIZE = r'''
import os, signal
_spec = os.environ.get("GSFAULT", "")
if _spec:
    _action, _what, _n = _spec.split(":")
    _n = int(_n)
    _seen = {"n": 0, "journal_fds": set()}
    _open, _write = os.open, os.write

    def _fire():
        if _action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        fd = _open(os.path.join(os.environ["GSFAULT_FILL"], "filler"), os.O_WRONLY | os.O_CREAT, 0o644)
        try:
            while True:
                _write(fd, b"\0" * 4096)
        except OSError:
            pass
        finally:
            os.close(fd)

    def _count():
        _seen["n"] += 1
        if _seen["n"] == _n:
            _fire()

    def open(path, flags, mode=0o777, *args, **kwargs):
        p = os.fsdecode(path)
        if _what == "object" and "/objects/" in p and (p.endswith(".lock") or "/tmp_obj_" in p):
            _count()
        elif _what == "ref" and p.endswith("/refs/heads/work.lock"):
            _count()
        fd = _open(path, flags, mode, *args, **kwargs)
        if p.endswith("/gs/journal/work.jsonl"):
            _seen["journal_fds"].add(fd)
        return fd

    def write(fd, data):
        if _what == "journal" and fd in _seen["journal_fds"]:
            _count()
        return _write(fd, data)

    os.open, os.write = open, write
'''


def _mount(*args: str) -> None:
    if shutil.which("mount") is None:
        pytest.skip("no mount command here: the real tmpfs and read-only mounts cannot be made")
    proc = subprocess.run(["mount", *args], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"mounting is not permitted here (needs root or CAP_SYS_ADMIN): {proc.stderr.strip()}")


def _umount(path: Path) -> None:
    subprocess.run(["umount", str(path)], capture_output=True)
    if os.path.ismount(path):
        subprocess.run(["umount", "-l", str(path)], capture_output=True)


@pytest.fixture
def tmpfs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A real 2 MB tmpfs holding the session repo (GS_REPO points into it); unmounted after."""
    mnt = tmp_path / "fs"
    mnt.mkdir()
    _mount("-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt))
    monkeypatch.setenv("GS_REPO", str(mnt / "repo.git"))
    try:
        yield mnt
    finally:
        _umount(mnt)


@pytest.fixture
def under(tmp_path: Path, gs_proc):
    """``under("fill:object:1", "ask", SID, "hi", fs=mnt)`` runs one ``gs`` process with the trigger armed.

    ``under.env(spec, fs)`` is that process environment, for a process started by hand.
    """
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(SITECUSTOMIZE)

    def env(spec: str, fs: Path | None = None) -> dict[str, str]:
        return {"GSFAULT": spec, "GSFAULT_FILL": str(fs or tmp_path),
                "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}

    def run(spec: str, *args: str, fs: Path | None = None):
        return gs_proc(*args, env=env(spec, fs))

    run.env = env  # type: ignore[attr-defined]
    return run


def free(fs: Path) -> None:
    """The fault is gone: remove what filled the file system."""
    (fs / "filler").unlink(missing_ok=True)


def fill(fs: Path) -> Path:
    """Fill ``fs`` now, as the trigger does."""
    filler = fs / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o644)
    try:
        while True:
            os.write(fd, b"\0" * 4096)
    except OSError as exc:
        assert exc.errno == errno.ENOSPC
    finally:
        os.close(fd)
    return filler


def one_line_error(r, *words: str) -> None:
    """The run failed with exit 1 and one ``gs:`` line naming ``words``, and no traceback."""
    assert r.code == 1, (r.code, r.err)
    assert "Traceback" not in r.err and "unexpected error" not in r.err, r.err
    lines = [line for line in r.err.splitlines() if line.startswith("gs: ") and "warning" not in line]
    assert len(lines) == 1, r.err
    for word in words:
        assert word in lines[0], lines[0]


def events(gs, sid: str = SID) -> list[dict]:
    r = gs("show", sid, "--format", "json")
    assert r.code == 0, r.err
    return r.json()["events"]


def user_prompts(evs: list[dict]) -> list[str]:
    return [e["data"]["content"] for e in evs if e["type"] == "user/message"]


def turn_ends(evs: list[dict]) -> list[str]:
    return [e["data"]["reason"] for e in evs if e["type"] == "turn/end"]


def no_leftover_locks(repo: Path) -> None:
    left = [str(p.relative_to(repo)) for p in repo.rglob("*.lock") if "gs" not in p.relative_to(repo).parts]
    left += [str(p.relative_to(repo)) for p in (repo / "objects").glob("tmp_obj_*")]  # a blob half written
    assert left == [], left


def fsck(repo: Path) -> None:
    proc = subprocess.run(["git", "-C", str(repo), "fsck", "--strict"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# --------------------------------------------------------------------------- full disk


def _chat(env: dict[str, str]) -> tuple[subprocess.Popen, list[bytes], threading.Thread]:
    """Start ``gs chat SID`` with ``env`` added; return it, its output so far (a thread fills it), the thread."""
    proc = subprocess.Popen([*GS, "chat", SID], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=dict(os.environ, **env))
    out: list[bytes] = []
    reader = threading.Thread(target=lambda: out.extend(iter(lambda: proc.stdout.read1(4096), b"")), daemon=True)
    reader.start()
    return proc, out, reader


def _wait_for(proc: subprocess.Popen, out: list[bytes], text: bytes) -> None:
    """Wait until the chat printed ``text`` (failing when it exits or TIMEOUT passes first)."""
    deadline = time.monotonic() + TIMEOUT
    while text not in b"".join(out):
        assert proc.poll() is None, proc.stderr.read().decode()
        assert time.monotonic() < deadline, b"".join(out)
        time.sleep(0.01)


@pytest.mark.parametrize("at", ["object:1", "object:2", "object:3", "ref:1"], ids=["blob", "tree", "commit", "ref"])
def test_full_disk_at_a_save_keeps_the_turn_in_the_journal(gs, tmpfs, under, at):
    repo = tmpfs / "repo.git"
    assert gs("ask", "-S", SID, "first").code == 0
    r = under(f"fill:{at}", "ask", SID, "second", fs=tmpfs)
    one_line_error(r, "disk full", "kept in the journal", "will be saved when there is space")
    assert r.out == "echo: second\n"  # the reply was shown
    assert (repo / "gs" / "journal" / f"{SID}.jsonl").exists()
    no_leftover_locks(repo)

    # Still full: every read works and says a turn waits; nothing is committed.
    reads = [["list"], ["log", "-p", SID], ["export", SID], ["search", "first"], ["diff", SID, SID]]
    for args in reads if at == "object:1" else []:  # once is enough: the same for every write
        rr = gs(*args)
        assert rr.code == 0, (args, rr.err)
        assert "Traceback" not in rr.err and "unexpected error" not in rr.err
    assert "not saved yet" in gs("show", SID).err
    assert user_prompts(events(gs)) == ["first"]
    no_leftover_locks(repo)  # a refused write leaves no lock to block the next save (or plain git)
    fsck(repo)

    # Space again: the next command saves the turn, complete, as it was.
    free(tmpfs)
    evs = events(gs)
    assert user_prompts(evs) == ["first", "second"]
    assert turn_ends(evs) == ["completed", "completed"]
    assert not (repo / "gs" / "journal" / f"{SID}.jsonl").exists()
    fsck(repo)
    assert gs("ask", "-S", SID, "third").code == 0
    assert user_prompts(events(gs)) == ["first", "second", "third"]


def test_full_disk_at_the_journal_hands_the_prompt_back(gs, tmpfs, under):
    repo = tmpfs / "repo.git"
    assert gs("ask", "-S", SID, "first").code == 0
    # filled at the journal's first line: nothing of the turn can be written
    r = under("fill:journal:1", "ask", SID, "a prompt to keep", fs=tmpfs)
    one_line_error(r, "disk full", "printed back")
    assert "a prompt to keep" in r.out  # nothing typed is lost
    assert not (repo / "gs" / "journal" / f"{SID}.jsonl").exists()  # no half-made journal
    assert gs("list").code == 0
    free(tmpfs)
    fsck(repo)
    assert user_prompts(events(gs)) == ["first"]
    assert gs("ask", "-S", SID, "a prompt to keep").code == 0
    assert user_prompts(events(gs)) == ["first", "a prompt to keep"]


def test_full_disk_mid_turn_keeps_the_prompt_and_what_fit(gs, tmpfs, under):
    """The disk fills after the prompt was journaled: the prompt and the reply up to there are kept.

    The file system is filled at the journal's step/start; what fits in the journal's last
    page still goes in, the long reply does not: it is kept as far as it fit, marked
    interrupted.
    """
    repo = tmpfs / "repo.git"
    assert gs("ask", "-S", SID, "first").code == 0
    long = "x" * 5000  # the fake API echoes it: a reply longer than a page
    r = under("fill:journal:4", "ask", SID, long, fs=tmpfs)
    one_line_error(r, "disk full", "kept in the journal as far as it fit")
    assert r.out == f"echo: {long}\n"  # shown in full
    free(tmpfs)
    evs = events(gs)
    assert user_prompts(evs) == ["first", long]
    assert turn_ends(evs) == ["completed", "interrupted"]  # what fit, closed as interrupted
    reply = [e["data"] for e in evs if e["type"] == "assistant/message"][-1]
    assert reply["interrupted"] is True
    assert f"echo: {long}".startswith(reply["content"]) and len(reply["content"]) < len(long)
    fsck(repo)
    assert gs("ask", "-S", SID, "third").code == 0


def test_a_new_session_on_a_full_disk(gs, tmpfs):
    repo = tmpfs / "repo.git"
    assert gs("ask", "-S", "other", "make the repo").code == 0
    fill(tmpfs)
    r = gs("ask", "-S", SID, "hello")
    one_line_error(r, "disk full", "printed back")
    assert r.out == "hello\n"  # not even its journal fit: the prompt is handed back
    assert gs("list").code == 0 and gs("show", "other").code == 0
    assert gs("list").code == 0
    free(tmpfs)
    assert gs("ask", "-S", SID, "hello again").code == 0
    assert "hello again" in user_prompts(events(gs))
    fsck(repo)


def test_a_large_save_on_a_full_disk_leaves_no_temporary_object(tmpfs):
    """A log large enough to be hashed in a thread beside its write (``HASH_IN_THREAD_BYTES``).

    The full disk refuses the object's write: the temporary file is removed, the branch stays
    where it was, and the same save succeeds once there is space.
    """
    import base64

    from test_store_contract import Writer

    from gitsessions.errors import DiskFull
    from gitsessions.store import GitStore
    from gitsessions.store.repo import HASH_IN_THREAD_BYTES

    repo = tmpfs / "repo.git"
    store = GitStore(repo)
    w = Writer(lambda: store, SID)
    big = base64.b64encode(os.urandom(HASH_IN_THREAD_BYTES)).decode()  # compresses little
    w.save_turn("first", big)
    tip = w.tip
    fill(tmpfs)
    with pytest.raises(DiskFull):
        w.save_turn("second", big)
    assert store.tip(SID) == tip
    no_leftover_locks(repo)
    fsck(repo)
    free(tmpfs)
    w.tip, w.events, w.turns = tip, w.events[:6], 1  # the refused turn was not saved
    w.save_turn("second", big)
    store.close()
    proc = subprocess.run(["git", "-C", str(repo), "cat-file", "blob", f"{SID}:session.jsonl"], capture_output=True)
    assert proc.stdout == w.raw()
    no_leftover_locks(repo)
    fsck(repo)


def test_list_rows_not_kept_on_a_full_disk_cost_only_speed(gs, tmpfs):
    repo = tmpfs / "repo.git"
    for sid in ("one", "two", "three"):
        assert gs("ask", "-S", sid, f"about {sid}").code == 0
    before = gs("list", "--json").json()
    (repo / "gs" / "rows").unlink()
    fill(tmpfs)
    for _ in range(2):  # the rows read cannot be kept: each list reads them again
        r = gs("list", "--json")
        assert (r.code, r.json()) == (0, before), r.err
    free(tmpfs)
    assert gs("list", "--json").json() == before
    assert len((repo / "gs" / "rows").read_bytes().splitlines()) == 3  # kept once there is room


def test_chat_stays_open_after_a_failed_save(gs, tmpfs, under):
    """``gs chat``: the save fails on a full disk, the chat goes on, the next save takes both turns."""
    repo = tmpfs / "repo.git"
    assert gs("ask", "-S", SID, "first").code == 0
    proc, out, reader = _chat(under.env("fill:object:1", tmpfs))
    try:
        proc.stdin.write(b"second\n")
        proc.stdin.flush()
        _wait_for(proc, out, b"error: disk full")
        free(tmpfs)
        proc.stdin.write(b"third\n/exit\n")
        proc.stdin.close()
        assert proc.wait(TIMEOUT) == 0, proc.stderr.read().decode()
        reader.join(TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(TIMEOUT)
    text = b"".join(out).decode()
    assert "echo: second" in text and "echo: third" in text
    assert "Traceback" not in text
    evs = events(gs)
    assert user_prompts(evs) == ["first", "second", "third"]
    assert turn_ends(evs) == ["completed"] * 3
    assert not (repo / "gs" / "journal" / f"{SID}.jsonl").exists()
    fsck(repo)


# --------------------------------------------------------------------------- kill -9


@pytest.mark.parametrize("at", ["journal:4", "object:1", "object:2", "object:3", "ref:1"],
                         ids=["journal", "blob", "tree", "commit", "ref"])
def test_kill_at_each_write_keeps_the_prompt(gs, repo_path, under, at):
    assert gs("ask", "-S", SID, "first").code == 0
    r = under(f"kill:{at}", "ask", SID, "second")
    assert r.code == -signal.SIGKILL, (r.code, r.err)
    evs = events(gs)  # the next reader commits the turn the journal holds
    assert user_prompts(evs) == ["first", "second"]
    ends = turn_ends(evs)
    # Killed before the reply was journaled: interrupted; after the whole turn was: completed.
    assert ends == ["completed", "interrupted" if at.startswith("journal") else "completed"]
    assert not (repo_path / "gs" / "journal" / f"{SID}.jsonl").exists()
    no_leftover_locks(repo_path)
    fsck(repo_path)
    assert gs("ask", "-S", SID, "third").code == 0
    assert user_prompts(events(gs)) == ["first", "second", "third"]


# --------------------------------------------------------------------------- read-only repo


@pytest.fixture
def read_only(tmp_path: Path, repo_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``read_only()`` mounts the session repo read-only at ``tmp_path/ro`` and points GS_REPO there."""
    ro = tmp_path / "ro"
    mounted: list[Path] = []

    def mount() -> Path:
        ro.mkdir()
        _mount("--bind", str(repo_path), str(ro))
        mounted.append(ro)
        _mount("-o", "remount,bind,ro", str(ro))
        monkeypatch.setenv("GS_REPO", str(ro))
        return ro

    def unmount() -> None:
        while mounted:
            _umount(mounted.pop())
        monkeypatch.setenv("GS_REPO", str(repo_path))

    mount.unmount = unmount  # type: ignore[attr-defined]
    try:
        yield mount
    finally:
        unmount()


def test_every_read_works_on_a_read_only_repo(gs, repo_path, read_only, under):
    assert gs("ask", "-S", SID, "alpha").code == 0
    assert gs("ask", "-S", "other", "beta").code == 0
    assert under("kill:object:1", "ask", SID, "pending").code == -signal.SIGKILL  # a turn left in the journal
    (repo_path / "gs" / "verified").unlink()  # every tip must be checked again, and cannot be noted
    (repo_path / "gs" / "rows").unlink()  # nor can its list row be kept
    ro = read_only()
    with pytest.raises(OSError) as exc:
        (ro / "probe").write_text("x")
    assert exc.value.errno == errno.EROFS  # really read-only

    reads = (["list"], ["list", "--json"], ["show", SID], ["show", SID, "--format", "json"], ["log", SID],
             ["log", "-p", SID], ["export", SID], ["export", SID, "--format", "html"], ["diff", SID, "other"],
             ["search", "alpha"])
    for args in reads:
        r = gs(*args)
        assert r.code == 0, (args, r.err)
        assert "Traceback" not in r.err and "unexpected error" not in r.err, (args, r.err)
    r = gs("show", SID)
    assert "alpha" in r.out
    assert "not saved yet" in r.err and "read-only" in r.err  # the pending turn is reported
    assert "alpha" in gs("search", "alpha").out

    writes = (["ask", "-S", SID, "more"], ["ask", "-S", "new", "hello"], ["rm", "other"],
              ["rename", "other", "renamed"],
              ["title", SID, "T"], ["fork", SID, "copy"], ["gc"], ["hooks", "install"],
              ["remote", "add", "o", str(repo_path.parent / "x.git")], ["clone", str(repo_path), str(ro / "sub")])
    for args in writes:
        one_line_error(gs(*args), "is read-only", str(ro))
    r = gs("chat", SID, input="hello\n")
    one_line_error(r, "is read-only")

    read_only.unmount()
    evs = events(gs)  # writable again: the journaled turn is saved
    assert user_prompts(evs) == ["alpha", "pending"]
    fsck(repo_path)
    assert gs("ask", "-S", SID, "after").code == 0
    assert user_prompts(events(gs)) == ["alpha", "pending", "after"]


def test_a_piped_chat_whose_prompt_could_not_be_saved_exits_1_as_gs_ask_does(gs, tmpfs, under):
    """It exited 0 when none of its prompts could be saved: a script could not tell."""
    assert gs("ask", "-S", SID, "first").code == 0
    proc, out, reader = _chat(under.env("fill:journal:1", tmpfs))  # not even the journal takes the prompt
    try:
        proc.stdin.write(b"second\n")
        proc.stdin.close()
        status = proc.wait(TIMEOUT)
        reader.join(TIMEOUT)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(TIMEOUT)
    text = b"".join(out).decode()
    assert status == 1, (text, proc.stderr.read().decode())
    assert "error: disk full" in text and "second\n" in text and "Traceback" not in text  # handed back
    free(tmpfs)
    assert gs("ask", SID, "third").code == 0
    assert user_prompts(events(gs)) == ["first", "third"]


def test_terminal_chat_stays_open_on_a_full_disk(gs, tmpfs, fake_api):
    """In a real terminal: the line history cannot be written either, and the chat goes on."""
    pexpect = pytest.importorskip("pexpect")
    assert gs("ask", "-S", SID, "first").code == 0
    env = dict(os.environ, OPENAI_BASE_URL=fake_api.base_url, OPENAI_API_KEY="test-key", TERM="xterm",
               PROMPT_TOOLKIT_NO_CPR="1", COLUMNS="100", LINES="24")
    child = pexpect.spawn(GS[0], [*GS[1:], "chat", SID], env=env, dimensions=(24, 100), encoding="utf-8",
                          codec_errors="replace", timeout=TIMEOUT)
    try:
        child.expect(f"{SID} ›")
        fill(tmpfs)
        child.sendline("lost to the disk")
        child.expect("disk full")
        child.expect("lost to the disk")  # handed back
        child.expect(f"{SID} ›")
        free(tmpfs)
        child.sendline("second")
        child.expect("echo: second")
        child.expect(f"{SID} ›")
        child.sendcontrol("d")
        child.expect(pexpect.EOF)
        out = child.before
    finally:
        if child.isalive():
            child.terminate(force=True)
        child.close()
    assert "Traceback" not in out and "unexpected error" not in out, out
    assert child.exitstatus == 0, out
    assert user_prompts(events(gs)) == ["first", "second"]
    fsck(tmpfs / "repo.git")


def test_a_fork_refused_by_a_full_disk_hands_the_prompt_back(gs, tmpfs):
    """Sending from a past revision forks first; when that commit does not fit, nothing is made."""
    repo = tmpfs / "repo.git"
    assert gs("ask", "-S", SID, "one").code == 0 and gs("ask", "-S", SID, "two").code == 0
    fill(tmpfs)
    r = gs("ask", "-S", f"{SID}~1", "from the past")
    one_line_error(r, "disk full", "nothing was saved")
    assert r.out.endswith("from the past\n")
    no_leftover_locks(repo)
    free(tmpfs)
    fsck(repo)
    assert gs("ask", "-S", f"{SID}~1", "from the past").code == 0
    assert user_prompts(events(gs, f"{SID}-1")) == ["one", "from the past"]


def test_once_there_is_space_the_journal_catches_up(gs, tmpfs, under, fake_api, monkeypatch):
    """A chat whose journal missed the end of a turn writes it with the next prompt.

    The disk fills mid-reply (the journal keeps the turn up to there), the save fails, space
    comes back, the next prompt is sent and gs is killed while the model has not answered:
    the journal held all of the earlier turn and the new prompt, so nothing is lost.
    """
    from test_crash import Gate

    assert gs("ask", "-S", SID, "first").code == 0
    long = "y" * 5000
    gate = Gate(fake_api, monkeypatch, n=2)
    proc, out, _reader = _chat(under.env("fill:journal:4", tmpfs))
    try:
        proc.stdin.write(long.encode() + b"\n")
        proc.stdin.flush()
        _wait_for(proc, out, b"as far as it fit")
        free(tmpfs)
        proc.stdin.write(b"third\n")
        proc.stdin.flush()
        gate.wait()
    finally:
        proc.kill()
        proc.wait(TIMEOUT)
        gate.release()
    evs = events(gs)
    assert user_prompts(evs) == ["first", long, "third"]
    assert turn_ends(evs) == ["completed", "completed", "interrupted"]
    assert [e["data"]["content"] for e in evs if e["type"] == "assistant/message"][1] == f"echo: {long}"
    fsck(tmpfs / "repo.git")


def test_a_title_refused_by_a_full_disk_says_nothing_was_saved(gs, tmpfs):
    """The title used to be reported as kept in the journal, and was silently dropped."""
    repo = tmpfs / "repo.git"
    assert gs("ask", "-S", SID, "one").code == 0
    fill(tmpfs)
    one_line_error(gs("title", SID, "a new title"), "disk full", "nothing was saved")
    no_leftover_locks(repo)
    free(tmpfs)
    assert not any((repo / "gs" / "journal").glob("*.jsonl"))
    assert gs("title", SID, "a new title").code == 0
    assert [e["data"]["title"] for e in events(gs) if e["type"] == "session/title"] == ["a new title"]
    fsck(repo)


def test_sync_on_a_read_only_repo_blames_the_repo_not_the_remote(gs, repo_path, read_only, tmp_path):
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)
    other = tmp_path / "other.git"
    assert gs("ask", "-S", SID, "alpha").code == 0
    assert gs("remote", "add", "origin", str(remote)).code == 0 and gs("push").code == 0
    assert gs("--repo", str(other), "clone", str(remote), str(other)).code == 0
    assert gs("--repo", str(other), "ask", SID, "beta").code == 0 and gs("--repo", str(other), "push").code == 0
    assert gs("ask", "-S", SID, "gamma").code == 0  # diverged from origin's
    ro = read_only()
    for args in (["pull"], ["sync"]):
        r = gs(*args)
        one_line_error(r, "is read-only", str(ro))
        assert "could not reach" not in r.err, r.err
    r = gs("push")
    assert r.code == 1 and "not a fast-forward" in r.err and "gs sync" not in r.err, r.err
    assert "read-only" in r.err and "Traceback" not in r.err, r.err
    read_only.unmount()
    assert gs("sync").code == 0
    fsck(repo_path)
