"""Backup and sync through a git remote on a local path: push, plain git clone, gs clone,
fast-forward pull, and a diverged session where both sides survive (origin's under the name)."""

from __future__ import annotations

import os
import subprocess

import pytest
from conftest import GS


@pytest.fixture
def two_machines(tmp_path, gs):
    """``(a, b, remote)``: run gs on machine A or B (separate repos), and a bare remote path."""
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)

    def machine(name):
        repo = tmp_path / f"{name}.git"

        def run(*args, input=None, env=None):
            return gs("--repo", str(repo), *args, input=input, env=env)
        run.repo = repo
        return run

    return machine("a"), machine("b"), remote


def _git(repo, *args):
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def _all_messages(run, sid):
    return [m["content"] for m in run("show", sid, "--format", "json").json()["messages"]]


def test_push_clone_pull_and_divergence_over_a_path(two_machines, tmp_path):
    a, b, remote = two_machines
    assert a("ask", "-S", "w", "one").code == 0
    assert a("ask", "-S", "w", "two").code == 0
    assert a("rm", "w") .code == 0 and a("restore", "w").code == 0
    assert a("ask", "-S", "old", "to archive").code == 0 and a("rm", "old").code == 0
    assert a("remote", "add", "origin", str(remote)).code == 0
    assert "origin\t" in a("remote", "list").out
    r = a("push")
    assert r.code == 0 and "pushed refs/heads/w" in r.err and "refs/archive/old" in r.err

    # plain git clone shows every session branch, and git log there matches gs log
    plain = tmp_path / "plain"
    subprocess.run(["git", "clone", "-q", "--bare", str(remote), str(plain)], check=True)
    assert "w" in _git(plain, "branch", "--format=%(refname:short)").split()
    gs_log = [e["commit"] for e in a("log", "w", "--json").json()]
    assert _git(plain, "log", "--format=%H", "w").split() == gs_log

    # gs clone: branches become local sessions, archives stay archived
    r = b("clone", str(remote), str(b.repo))
    assert r.code == 0, r.err
    assert [row["id"] for row in b("list", "--json").json()] == ["w"]
    assert [row["id"] for row in b("list", "--archived", "--json").json()] == ["old"]
    assert _all_messages(b, "w") == _all_messages(a, "w")

    # fast-forward
    assert a("ask", "-S", "w", "three from a").code == 0
    assert a("push").code == 0
    r = b("pull")
    assert r.code == 0 and "updated: w" in r.err
    assert _git(b.repo, "rev-parse", "w") == _git(a.repo, "rev-parse", "w")

    # divergence: both sides survive as branches, nothing merged; origin's side keeps the name
    assert b("ask", "-S", "w", "four from b").code == 0
    assert a("ask", "-S", "w", "four from a").code == 0
    assert a("push").code == 0
    r = b("push")
    assert r.code == 1 and "not a fast-forward" in r.err and "gs sync" in r.err
    mine = _git(b.repo, "rev-parse", "w").strip()
    r = b("pull")
    fork = f"w-{mine[:7]}"
    assert r.code == 0 and f"w: diverged; your turns are in {fork} (continue: gs chat {fork})" in r.err, r.err
    assert _all_messages(b, "w")[-2] == "four from a"
    assert _all_messages(b, fork)[-2] == "four from b"
    r = b("push")
    assert r.code == 0 and f"pushed refs/heads/{fork}" in r.err, r.err
    assert a("pull").code == 0 and _all_messages(a, fork) == _all_messages(b, fork)
    for repo in (a.repo, b.repo, remote):
        _git(repo, "fsck", "--strict")
        blobs = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch-all-objects", "--batch"],
                               capture_output=True).stdout
        assert b"<<<<<<<" not in blobs and b">>>>>>>" not in blobs


def test_plain_git_push_from_a_gs_clone_is_read_back(two_machines, tmp_path):
    a, b, remote = two_machines
    a("ask", "-S", "w", "one")
    a("remote", "add", "origin", str(remote))
    a("push")
    b("clone", str(remote), str(b.repo))
    b("ask", "-S", "w", "two from b")
    # push with plain git from the gs repo
    subprocess.run(["git", "-C", str(b.repo), "push", "-q", "origin", "w"], check=True)
    r = a("pull")
    assert r.code == 0 and "updated: w" in r.err
    assert _all_messages(a, "w")[-2] == "two from b"


def test_pull_does_not_move_a_session_under_a_live_writer(two_machines, fake_api):
    from fakeapi import text
    a, b, remote = two_machines
    a("ask", "-S", "w", "one")
    a("remote", "add", "origin", str(remote))
    a("push")
    b("clone", str(remote), str(b.repo))
    a("ask", "-S", "w", "two")
    a("push")
    fake_api.script(text("y" * 60, chunk_size=1, delay=0.05))
    holder = subprocess.Popen([*GS, "--repo", str(b.repo), "chat", "w"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    try:
        holder.stdin.write("slow\n")
        holder.stdin.flush()
        holder.stdout.read(3)
        r = b("pull")
        assert r.code == 0 and "w: will sync after the gs process writing it ends" in r.err, r.err
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)


def test_remote_errors_are_one_line(two_machines, tmp_path):
    a, _b, _remote = two_machines
    a("ask", "-S", "w", "one")
    r = a("push", "nosuch")
    assert r.code == 1 and "no remote 'nosuch'" in r.err and "gs remote add nosuch" in r.err
    r = a("remote", "add", "bad name", "/x")
    assert r.code == 1 and "invalid remote name" in r.err
    a("remote", "add", "gone", str(tmp_path / "does-not-exist.git"))
    before = _git(a.repo, "rev-parse", "w")
    r = a("pull", "gone")
    assert r.code == 1 and "could not reach" in r.err and "Traceback" not in r.err
    assert _git(a.repo, "rev-parse", "w") == before
    r = a("remote", "add", "creds", "https://user:s3cretpw@example.invalid/x.git")
    assert r.code == 0 and "not saved" in r.err
    assert "s3cretpw" not in (a.repo / "config").read_text()
    assert a("remote", "remove", "creds").code == 0
    assert "creds" not in a("remote", "list").out
    r = a("clone", str(tmp_path / "remote.git"), str(a.repo))
    assert r.code == 1 and "already holds sessions" in r.err


def test_auto_sync_pushes_every_save(two_machines, tmp_path):
    import time

    a, _b, remote = two_machines
    (tmp_path / "config.yaml").write_text("sync: {remote: origin, push: on-save}\n")
    a("remote", "add", "origin", str(remote))
    assert a("ask", "-S", "w", "pushed by itself").code == 0
    want = _git(a.repo, "rev-parse", "w")
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        got = subprocess.run(["git", "-C", str(remote), "rev-parse", "--verify", "-q", "w"],
                             capture_output=True, text=True).stdout
        if got == want:
            break
        time.sleep(0.2)
    assert got == want, "the save was not pushed in the background"
    (tmp_path / "config.yaml").write_text("sync: {push: sometimes}\n")
    r = a("list")
    assert r.code == 1 and "sync must be" in r.err


def test_a_failed_clone_leaves_nothing_and_can_be_retried(two_machines, tmp_path):
    a, b, remote = two_machines
    a("ask", "-S", "w", "one")
    a("remote", "add", "origin", str(remote))
    a("push")
    target = tmp_path / "fresh.git"
    r = b("clone", str(tmp_path / "nowhere.git"), str(target))
    assert r.code == 1 and "could not reach" in r.err and "Traceback" not in r.err
    assert not target.exists()
    assert not list(tmp_path.glob(".fresh.git.clone-*"))
    r = b("clone", str(remote), str(target))
    assert r.code == 0, r.err
    assert [row["id"] for row in b("--repo", str(target), "list", "--json").json()] == ["w"]


def test_a_push_to_a_non_bare_repo_leaves_its_checked_out_branch(two_machines, tmp_path):
    """git's receive checks run for a path remote too: receive.denyCurrentBranch refuses ``w``."""
    a, _b, _remote = two_machines
    work = tmp_path / "work"
    subprocess.run(["git", "init", "-q", "-b", "w", str(work)], check=True)
    assert a("ask", "-S", "w", "one").code == 0 and a("ask", "-S", "side", "two").code == 0
    r = a("push", str(work))
    assert r.code == 1 and "refused: refs/heads/w: branch is currently checked out" in r.err, r.err
    assert f"pushed refs/heads/side to {work}" in r.err and "Traceback" not in r.err, r.err
    assert _git(work, "for-each-ref", "--format=%(refname)") == "refs/heads/side\n"
    _git(work, "fsck", "--strict")


def test_without_git_a_path_push_says_once_that_the_remotes_hooks_were_not_run(two_machines, tmp_path):
    a, _b, remote = two_machines
    hook = remote / "hooks" / "update"
    hook.write_text('#!/bin/sh\ncase "$1" in refs/heads/secret*) echo "secret stays home" >&2; exit 1;; esac\n')
    hook.chmod(0o755)
    assert a("ask", "-S", "w", "one").code == 0 and a("ask", "-S", "secret-plan", "two").code == 0
    assert a("remote", "add", "origin", str(remote)).code == 0
    no_git = tmp_path / "bin"
    no_git.mkdir()
    r = a("sync", env={"PATH": str(no_git)})
    assert r.code == 0 and "pushed refs/heads/secret-plan to origin" in r.err, r.err
    assert r.err.count("hooks and receive checks of") == 1 and "install git" in r.err, r.err
    r = a("sync")  # with git: the hook runs
    assert r.code == 0 and "hooks and receive checks" not in r.err, r.err


def test_a_refused_background_push_is_told_by_the_next_command(two_machines, tmp_path):
    import time

    a, b, remote = two_machines
    assert a("ask", "-S", "w", "one").code == 0
    assert a("remote", "add", "origin", str(remote)).code == 0 and a("push").code == 0
    assert b("clone", str(remote), str(b.repo)).code == 0
    assert b("ask", "-S", "w", "two from b").code == 0 and b("push").code == 0
    (tmp_path / "config.yaml").write_text("sync: {remote: origin, push: on-save}\n")
    assert a("ask", "-S", "w", "two from a").code == 0  # its push in the background is refused: diverged
    deadline, said = time.monotonic() + 30, ""
    while time.monotonic() < deadline and "background" not in said:
        time.sleep(0.2)
        said = a("list").err
    assert "gs: warning: the gs push run in the background after a save failed: refused: refs/heads/w: " \
           "not a fast-forward" in said, said
    assert len(said.strip().splitlines()) == 1
    assert "background" not in a("list").err  # once
    (tmp_path / "config.yaml").write_text("")
    assert a("sync").code == 0


def test_a_sync_or_a_dangling_link_makes_no_repo_there(two_machines, tmp_path):
    """Only a push the user asks for makes one: gs watch syncs unattended, maybe to a disk not mounted."""
    a, _b, _remote = two_machines
    assert a("ask", "-S", "work", "one").code == 0
    new = tmp_path / "sessions.git"
    r = a("sync", str(new))
    assert r.code == 1 and "could not reach" in r.err and not new.exists(), r.err
    assert "nothing is there (gs push makes the repository in a folder that exists)" in r.err, r.err
    new.mkdir()  # an empty folder: a mount point whose disk is not mounted, as like as not
    r = a("sync", str(new))
    assert r.code == 1 and "no git repository there" in r.err and not any(new.iterdir()), r.err
    r = a("push", str(tmp_path / "not-mounted" / "sessions.git"))
    assert r.code == 1 and f"nor is its folder {tmp_path / 'not-mounted'}: a typo, or a disk not mounted?" in r.err
    link = tmp_path / "link.git"
    link.symlink_to(tmp_path / "nowhere.git")
    r = a("push", str(link))
    assert r.code == 1 and "could not reach" in r.err and "Traceback" not in r.err, r.err
    assert link.is_symlink() and not (tmp_path / "nowhere.git").exists()


def test_a_push_to_a_path_not_there_yet_makes_the_bare_repo_its_head_the_current_session(two_machines, tmp_path):
    """So plain git clone checks the session out, and git log there shows it, with no second command."""
    command = "push"
    a, _b, _remote = two_machines
    assert a("ask", "-S", "aaa", "one").code == 0 and a("ask", "-S", "work", "two").code == 0
    assert a("chat", "work", input="three\n").code == 0  # the current session: not the first by name
    new = tmp_path / "backups" / "sessions.git"
    r = a(command, str(new))
    assert r.code == 1 and "could not reach" in r.err and not new.parent.exists()  # a folder missing: refused
    new.parent.mkdir()
    r = a(command, str(new))
    assert r.code == 0 and f"created the bare repository {new} (nothing was there)" in r.err, r.err
    assert "pushed refs/heads/work" in r.err and "pushed refs/heads/aaa" in r.err
    assert _git(new, "symbolic-ref", "HEAD").strip() == "refs/heads/work"
    assert _git(new, "log", "--format=%H").split() == [e["commit"] for e in a("log", "work", "--json").json()]
    clone = subprocess.run(["git", "clone", str(new), str(tmp_path / "checkout")], capture_output=True, text=True)
    assert clone.returncode == 0 and "warning" not in clone.stderr, clone.stderr
    assert (tmp_path / "checkout" / "session.jsonl").exists()
    _git(new, "fsck", "--strict")
    r = a(command, str(new))
    assert r.code == 0 and "created" not in r.err, r.err


def test_a_push_or_share_to_an_empty_folder_makes_the_bare_repo_there(two_machines, tmp_path):
    """``mkdir backup && gs push backup``: the empty folder becomes the repository; a folder of files does not."""
    a, _b, _remote = two_machines
    assert a("ask", "-S", "work", "one").code == 0
    for command, folder in (("push", tmp_path / "backup"), ("share", tmp_path / "gist")):
        folder.mkdir()
        r = a(*(["share", "work", str(folder), "--yes"] if command == "share" else ["push", str(folder)]))
        assert r.code == 0 and "Traceback" not in r.err and "fatal" not in r.err, r.err
        assert _git(folder, "rev-parse", "work") == _git(a.repo, "rev-parse", "work")
        _git(folder, "fsck", "--strict")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "todo.txt").write_text("mine")
    r = a("push", str(notes))
    assert r.code == 1 and f"no git repository there (create one with: git init --bare {notes}" in r.err, r.err
    assert sorted(p.name for p in notes.iterdir()) == ["todo.txt"]  # left as it was


def test_a_push_to_a_repo_made_empty_by_git_leaves_its_head(two_machines):
    """git's push leaves the remote's HEAD alone, and so does gs's (gs clone needs none)."""
    a, _b, remote = two_machines
    before = _git(remote, "symbolic-ref", "HEAD")
    assert a("ask", "-S", "work", "one").code == 0
    r = a("push", str(remote))
    assert r.code == 0 and "created" not in r.err and "pushed refs/heads/work" in r.err, r.err
    assert _git(remote, "symbolic-ref", "HEAD") == before


def test_a_push_with_nothing_to_push_makes_no_repo_there(two_machines, tmp_path):
    a, _b, _remote = two_machines
    r = a("push", str(tmp_path / "new.git"))
    assert r.code == 0 and not (tmp_path / "new.git").exists(), r.err


def test_a_url_whose_host_starts_with_a_dash_is_refused_as_a_bad_url_and_runs_nothing(gs, tmp_path):
    """ssh would read the host as an option (-oProxyCommand=...): dulwich's StrangeHostname was exit 70."""
    ran = tmp_path / "ran"
    assert gs("ask", "-S", "w", "hi").code == 0
    for url in (f"ssh://-oProxyCommand=touch%20{ran}/repo", "me@-oProxyCommand=sh:repo",
                "ssh://git@-oProxyCommand=x/repo"):
        for args in (("remote", "add", "o", url), ("clone", url, str(tmp_path / "c.git")), ("push", url),
                     ("pull", url), ("sync", url), ("share", "w", url, "--yes")):
            r = gs(*args)
            assert r.code == 1, (args, r.code, r.err)
            assert "bad URL" in r.err and "starts with '-'" in r.err and "unexpected" not in r.err, (args, r.err)
    assert not ran.exists()
    assert gs("remote", "list", "--json").json() == []
