"""``kill -9`` of a real gs at each git lock it takes: the next command heals what it left.

Each test stops a real ``gs`` process at the very moment dulwich has made a ``<file>.lock``
(:mod:`killat`), kills it there, then runs the next command in this process (typer's
CliRunner) and checks the repo with the real ``git`` CLI (``git fsck --strict``): the lock
is gone, the command does what it is for, nothing committed is lost. A lock a live writer
holds is never taken over, however old it is.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gitservers import init_bare
from killat import as_python, kill_at, stopped_at

from gitsessions.store import lock

DATA = Path(__file__).parent / "data"
CHATGPT = str(DATA / "chatgpt" / "conversations.json")


def _sessions(gs) -> list[str]:
    r = gs("list", "--json")
    assert r.code == 0, r.err
    return sorted(row["id"] for row in r.json())


def _locks(repo: Path) -> list[str]:
    """The git locks in ``repo`` (gs's own ``gs/`` aside)."""
    return sorted(str(p.relative_to(repo)) for p in repo.rglob("*.lock") if p.relative_to(repo).parts[0] != "gs")


def _fsck(repo: Path) -> str:
    """What ``git fsck --strict`` says of ``repo`` beyond its notices, a stray file it only warns of too.

    A dangling object (what a killed command wrote before its ref moved) is no fault: it names nothing lost.
    """
    proc = subprocess.run(["git", "-C", str(repo), "fsck", "--strict"], capture_output=True, text=True)
    said = [line for line in (proc.stdout + proc.stderr).splitlines() if not line.startswith(("notice:", "dangling "))]
    return f"exit {proc.returncode}: " + "\n".join(said) if proc.returncode or said else ""


def _heads(git) -> list[str]:
    return git("for-each-ref", "--format=%(refname)", "refs/heads").split()


def test_a_kill_while_an_object_is_written_leaves_nothing_fsck_sees_once_gs_runs(gs, git, repo_path):
    assert gs("ask", "-S", "w", "one").code == 0
    at = kill_at("fork", "w", "w2", lock=r"/objects/[0-9a-f]{2}/[0-9a-f]{38}\.lock$")
    assert Path(at).exists()
    assert "bad sha1 file" in _fsck(repo_path)  # until gs runs
    assert _sessions(gs) == ["w"]  # a read heals it too
    assert _locks(repo_path) == []
    assert _fsck(repo_path) == ""
    r = gs("fork", "w", "w2")
    assert r.code == 0, r.err
    assert _sessions(gs) == ["w", "w2"]
    assert _fsck(repo_path) == ""


def test_a_kill_while_a_branch_is_made_leaves_it_free(gs, git, repo_path):
    assert gs("ask", "-S", "w", "one").code == 0
    kill_at("fork", "w", "w2", lock=r"/refs/heads/w2\.lock$")
    r = gs("fork", "w", "w2")
    assert r.code == 0, r.err
    assert _heads(git) == ["refs/heads/w", "refs/heads/w2"] and _locks(repo_path) == []
    assert _fsck(repo_path) == ""


def test_a_kill_while_head_is_moved_leaves_it_movable(gs, git, repo_path):
    assert gs("ask", "-S", "w", "one").code == 0
    kill_at("fork", "w", "w2", lock=r"/HEAD\.lock$")
    assert git("symbolic-ref", "HEAD").strip() == "refs/heads/w"  # w2 was made, HEAD not yet moved
    r = gs("fork", "w", "w3")
    assert r.code == 0, r.err
    assert git("symbolic-ref", "HEAD").strip() == "refs/heads/w3"  # a fork is current
    assert _locks(repo_path) == []
    assert _fsck(repo_path) == ""


def test_a_kill_during_an_import_lets_the_next_import_of_that_file_through(gs, git, repo_path):
    assert gs("ask", "-S", "w", "one").code == 0  # the repo exists
    at = kill_at("import", CHATGPT, lock=r"/objects/pack/pack-[0-9a-f]{40}\.idx\.lock$")
    assert at.endswith(".idx.lock") and Path(at).exists()
    r = gs("import", CHATGPT)
    assert r.code == 0, r.err
    assert "4 sessions written" in r.err, r.err
    assert len(_sessions(gs)) == 5 and _locks(repo_path) == []
    assert _fsck(repo_path) == ""
    r = gs("gc")
    assert r.code == 0, r.err
    assert _fsck(repo_path) == ""


def test_a_kill_during_a_push_lets_the_next_sync_settle(gs, git, repo_path, tmp_path):
    remote = init_bare(tmp_path / "remote.git")
    assert gs("ask", "-S", "w", "one").code == 0
    assert gs("remote", "add", "origin", str(remote)).code == 0
    kill_at("push", lock=r"/refs/remotes/origin/heads/w\.lock$")  # the push was made; its tracking ref not
    r = gs("sync")
    assert r.code == 0, r.err
    assert _locks(repo_path) == []
    r = gs("status", "w", "--json")
    assert r.code == 0, r.err
    assert r.json()["remotes"]["origin"]["ahead"] == 0, r.json()
    assert git("rev-parse", "refs/remotes/origin/heads/w") == git("rev-parse", "w")
    assert _fsck(repo_path) == ""


def test_a_kill_while_the_config_is_written_leaves_it_writable(gs, git, repo_path, tmp_path):
    remote = init_bare(tmp_path / "remote.git")
    assert gs("ask", "-S", "w", "one").code == 0
    kill_at("remote", "add", "origin", str(remote), lock=r"/config\.lock$")
    r = gs("remote", "add", "origin", str(remote))
    assert r.code == 0, r.err
    assert git("config", "remote.origin.url").strip() == str(remote)
    assert _locks(repo_path) == []


def test_a_kill_while_packed_refs_are_rewritten_leaves_them_writable(gs, git, repo_path):
    assert gs("ask", "-S", "w", "one").code == 0
    assert gs("ask", "-S", "other", "one").code == 0
    git("pack-refs", "--all")
    kill_at("rm", "other", lock=r"/packed-refs\.lock$")
    assert _sessions(gs) == ["w"]  # the archive, half done, is completed
    assert git("for-each-ref", "--format=%(refname)").split() == ["refs/archive/other", "refs/heads/w"]
    assert _locks(repo_path) == []
    assert _fsck(repo_path) == ""
    r = gs("restore", "other")
    assert r.code == 0, r.err
    assert _sessions(gs) == ["other", "w"]


def test_gc_and_doctor_say_what_they_removed_of_what_was_left(gs, git, repo_path):
    assert gs("ask", "-S", "w", "one").code == 0
    left = repo_path / "refs" / "heads" / "gone.lock"  # no writer names itself for it: judged by its age
    left.write_text("")
    old = time.time() - 3600
    os.utime(left, (old, old))
    r = gs("gc")
    assert r.code == 0 and "removed 1 file gs processes killed while writing left behind (refs/heads/gone.lock)" \
        in r.out, r.out
    assert not left.exists()
    left.write_text("")
    os.utime(left, (old, old))
    r = gs("doctor")
    assert f"fixed: removed {left}, left behind by a gs process killed while writing it" in r.out, r.out
    assert not left.exists()


def test_the_lock_of_a_live_writer_is_never_taken_however_old(gs, git, repo_path, monkeypatch: pytest.MonkeyPatch):
    assert gs("ask", "-S", "w", "one").code == 0
    kill_at("fork", "w", "x", lock=r"/refs/heads/x\.lock$")  # a writer died here: its leftovers go at once
    monkeypatch.setattr(lock, "REF_LOCK_WAIT_S", 0.2)
    with stopped_at("fork", "w", "w2", lock=r"/refs/heads/w2\.lock$") as writer:
        held = Path(writer.at)
        old = time.time() - 3600  # a writer writing for an hour: its file and its lock as old, older than any grace
        (named,) = (repo_path / "gs" / "writers").iterdir()
        os.utime(named, (old - 1, old - 1))
        os.utime(held, (old, old))
        r = gs("fork", "w", "w2")
        assert r.code == 1 and "found locked by an" in r.err, r.err  # ConcurrentUpdate of REF_HELD
        assert held.exists()
        assert _sessions(gs) == ["w"]
        assert not (repo_path / "refs" / "heads" / "x.lock").exists()  # the dead one's went
        writer.kill()
    r = gs("fork", "w", "w2")
    assert r.code == 0, r.err
    assert _fsck(repo_path) == ""


def test_a_writer_names_itself_while_it_writes_and_no_longer(gs, repo_path):
    assert gs("ask", "-S", "w", "one").code == 0
    with stopped_at("fork", "w", "w2", lock=r"/refs/heads/w2\.lock$") as writer:
        files = list((repo_path / "gs" / "writers").iterdir())
        assert len(files) == 1
        info = json.loads(files[0].read_text())
        assert info["pid"] == writer.proc.pid and {"host", "started"} <= info.keys()
        writer.kill()
    assert _sessions(gs) == ["w"]
    assert list((repo_path / "gs" / "writers").iterdir()) == []  # the dead one's file went with what it left
    assert _fsck(repo_path) == ""


# -- a rename killed on the way: the next command completes it, or takes it back ----------------

#: Where a rename of w to proj is killed: (lock, call, match) as :func:`killat.stopped_at` takes them, and
#: whether the new name was made by then (then it is completed, else taken back).
RENAME_STEPS = {
    "proj being made": (r"/refs/heads/proj\.lock$", None, "", False),
    "proj's reflog line written, proj not yet": (None, "after:dulwich.refs:DiskRefsContainer._log", "refs/heads/proj",
                                                 False),
    "proj made, the reflog not carried": (None, "before:gitsessions.store.repo:_carry_reflog", "", True),
    "the reflog carried, w being removed": (r"/refs/heads/w\.lock$", None, "", True),
    "w removed, its reflog not": (None, "before:gitsessions.store.repo:_drop_reflog", "", True),
    "all moved, HEAD not yet": (r"/HEAD\.lock$", None, "", True),
}


@pytest.mark.parametrize("step", RENAME_STEPS)
def test_a_rename_killed_on_the_way_is_one_move_the_next_command_ends(gs, git, repo_path, step):
    lock_at, call, match, made = RENAME_STEPS[step]
    assert gs("ask", "-S", "w", "one").code == 0
    assert gs("ask", "-S", "w", "two").code == 0
    before = gs("show", "w", "--json").json()["events"]
    old_reflog = git("reflog", "show", "--format=%H %gs", "refs/heads/w").splitlines()
    kill_at("rename", "w", "proj", lock=lock_at, call=call, match=match)
    r = gs("list", "--json")  # a read: the first command after the kill
    assert r.code == 0, r.err
    name, gone = ("proj", "w") if made else ("w", "proj")
    assert [row["id"] for row in r.json()] == [name], r.err
    said = "left it half done; it is done now (w is proj)" if made else "had moved nothing; w is as it was"
    assert f"gs: warning: a gs killed while renaming w as proj {said}" in r.err, r.err
    assert _heads(git) == [f"refs/heads/{name}"]
    assert git("symbolic-ref", "HEAD").strip() == f"refs/heads/{name}"
    assert not (repo_path / "logs" / "refs" / "heads" / gone).exists()
    reflog = git("reflog", "show", "--format=%H %gs", f"refs/heads/{name}").splitlines()
    assert reflog[-len(old_reflog):] == old_reflog  # the old entries kept, once
    assert reflog[:-len(old_reflog)] == ([f"{reflog[0].split()[0]} Branch: renamed w to proj"] if made else [])
    assert gs("show", name, "--json").json()["events"] == before
    assert list((repo_path / "gs" / "moves").iterdir()) == [] and _locks(repo_path) == []
    assert _fsck(repo_path) == ""
    r = gs("list")
    assert r.code == 0 and "warning" not in r.err, r.err  # said once
    if not made:
        assert gs("rename", "w", "proj").code == 0
        assert _sessions(gs) == ["proj"]


def test_a_rename_killed_halfway_keeps_both_when_the_old_name_was_saved_to_since(gs, git, repo_path):
    assert gs("ask", "-S", "w", "one").code == 0
    kill_at("rename", "w", "proj", call="before:gitsessions.store.repo:_carry_reflog")
    tip = git("rev-parse", "w").strip()
    tree = git("rev-parse", "w^{tree}").strip()
    later = subprocess.run(["git", "-C", str(repo_path), "commit-tree", tree, "-p", tip, "-m", "saved by hand"],
                           capture_output=True, text=True, check=True,
                           env={**os.environ, "GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b",
                                "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b"}).stdout.strip()
    git("update-ref", "refs/heads/w", later, tip)  # a save under the old name before any gs ran
    r = gs("list", "--json")
    assert r.code == 0, r.err
    assert sorted(row["id"] for row in r.json()) == ["proj", "w"]
    assert "left both names, and w was saved to since: both are kept" in r.err, r.err
    assert git("rev-parse", "w").strip() == later and git("rev-parse", "proj").strip() == tip
    assert _fsck(repo_path) == ""


# -- a background command killed before it ended -------------------------------------------------


def test_a_killed_background_gc_leaves_no_log_for_good(gs, repo_path, tmp_path, monkeypatch: pytest.MonkeyPatch):
    from gitsessions.cli import background

    assert gs("ask", "-S", "w", "one").code == 0
    said = tmp_path / "said"
    python, env = as_python(tmp_path, r"/objects/pack/pack-[0-9a-f]{40}\.idx\.lock$", said)
    monkeypatch.setattr(background.sys, "executable", python)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    background.run_in_background(repo_path, "gc")  # as a save starts it
    deadline = time.monotonic() + 60  # a safety net: no figure of speed is judged
    while not said.exists() or not said.read_text().endswith("\n"):
        assert time.monotonic() < deadline, "the background gc never got to its pack's index"
        time.sleep(0.01)
    pid = int(said.read_text().split()[1])
    logs = list((repo_path / "gs" / "background").glob("gc-*.log"))
    assert len(logs) == 1
    os.kill(pid, signal.SIGKILL)
    while _alive(pid):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    r = gs("list")
    assert r.code == 0 and "background" not in r.err, r.err  # it said nothing: nothing to tell
    assert list((repo_path / "gs" / "background").iterdir()) == []
    assert _locks(repo_path) == [] and _fsck(repo_path) == ""


def _alive(pid: int) -> bool:
    """Whether process ``pid`` still runs (a zombie of a process this one started counts as ended)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_background_log_that_held_words_is_told_once_then_gone(gs, repo_path, tmp_path):
    assert gs("ask", "-S", "w", "one").code == 0
    folder = repo_path / "gs" / "background"
    proc = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from gitsessions.store.writers import hold_new\n"
        f"fd = hold_new(Path({str(folder)!r}), 'push-0badf00d.log', b'gs: pushing to origin\\n')\n"
        "print('held', flush=True); time.sleep(3600)")], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        r = gs("list")
        assert "background" not in r.err and (folder / "push-0badf00d.log").exists(), r.err  # still running
        proc.kill()
        proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(60)
        if proc.stdout is not None:
            proc.stdout.close()
    r = gs("list")
    assert "gs: warning: the gs push run in the background after a save was stopped before it ended: " \
           "pushing to origin" in r.err, r.err
    assert list(folder.iterdir()) == []
    assert "background" not in gs("list").err  # once


def test_a_move_record_gs_did_not_write_is_dropped_not_followed(gs, git, repo_path):
    assert gs("ask", "-S", "w", "one").code == 0
    moves = repo_path / "gs" / "moves"
    moves.mkdir()
    (moves / "1-junk.json").write_text(json.dumps({"src": "w", "dst": "refs/heads/../../x", "commit": "no",
                                                   "message": ""}))
    (moves / "2-torn.json").write_text('{"src": "refs/heads/w", "dst"')  # cut short
    r = gs("list", "--json")
    assert r.code == 0 and "warning" not in r.err, r.err
    assert [row["id"] for row in r.json()] == ["w"] and list(moves.iterdir()) == []
    assert _heads(git) == ["refs/heads/w"]
