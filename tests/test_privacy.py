"""Private by default: the session repo and a config file with a key are the owner's alone.

Checked with the real ``find -perm`` and ``git``, under the usual ``umask 022``.
"""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def usual_umask() -> Iterator[None]:
    """The umask most machines have: files 644, folders 755."""
    old = os.umask(0o022)
    yield
    os.umask(old)


def find(repo: Path, *perm: str) -> list[str]:
    """``find REPO -perm ...``: the paths it prints."""
    proc = subprocess.run(["find", str(repo), *perm], capture_output=True, text=True, check=True)
    return proc.stdout.split()


def test_a_new_repo_is_readable_by_its_owner_only(gs, repo_path, git):
    assert gs("ask", "-S", "work", "my card is 4111 1111 1111 1111").code == 0
    assert gs("ask", "-S", "work", "and again").code == 0
    assert gs("chat", "work", input="/title private\nthird\n").code == 0
    assert (repo_path / "gs").is_dir() and list((repo_path / "objects").iterdir())
    assert find(repo_path, "-perm", "/077") == []
    assert os.umask(0o022) == 0o022  # the caller's umask is its own again
    git("fsck", "--strict")
    assert "and again" in git("log", "-p", "work")  # plain git, as the owner, reads it all


def test_a_repo_shared_with_the_group_gives_what_git_gives(gs, repo_path, git):
    assert gs("ask", "-S", "work", "one").code == 0
    git("config", "core.sharedRepository", "group")
    assert gs("ask", "-S", "work", "two").code == 0
    new = [repo_path / "objects" / c[:2] / c[2:] for c in git("rev-list", "-1", "work").split()]
    assert new and all(p.exists() for p in new)
    for path in new:  # an object: read-only, for the group too (git's 0440)
        assert stat.S_IMODE(path.stat().st_mode) == 0o440, oct(path.stat().st_mode)
    assert stat.S_IMODE((repo_path / "refs" / "heads" / "work").stat().st_mode) & 0o060 == 0o060
    assert find(repo_path, "-perm", "/007") == []  # never others
    assert "warning" not in gs("list").err  # sharing as configured is no exposure


def test_an_exposed_repo_is_warned_of_once_and_doctor_fixes_it(gs, repo_path, git):
    assert gs("ask", "-S", "work", "one").code == 0
    subprocess.run(["chmod", "-R", "go+rX", str(repo_path)], check=True)
    r = gs("list")
    assert r.code == 0
    assert r.err.count("warning: other accounts on this machine can read the session repo") == 1
    assert f"chmod -R go-rwx {repo_path}" in r.err and "gs doctor --fix" in r.err
    r = gs("doctor")
    assert r.code == 1 and "problem: other accounts can read" in r.out and "warning" not in r.err
    r = gs("doctor", "--fix")
    assert r.code == 0 and "fixed:" in r.out, r.out
    assert find(repo_path, "-perm", "/077") == []
    assert gs("doctor").code == 0
    assert "warning" not in gs("list").err
    git("fsck", "--strict")
    assert gs("ask", "-S", "work", "two").code == 0


def test_a_folder_that_is_no_session_repo_is_never_made_private_nor_warned_of(gs, tmp_path):
    folder = tmp_path / "photos"  # --repo mistyped: a folder of the user's own things
    (folder / "2026").mkdir(parents=True)
    (folder / "2026" / "beach.jpg").write_bytes(b"jpeg")
    folder.chmod(0o755)
    (folder / "2026" / "beach.jpg").chmod(0o644)
    for args in (["doctor", "--fix"], ["doctor"]):
        r = gs("--repo", str(folder), *args)
        assert r.code == 1 and "the folder holds other things (2026), not a session repo" in r.err, (r.code, r.err)
        assert "fixed" not in r.out
    r = gs("--repo", str(folder), "list")
    assert "warning" not in r.err and "chmod" not in r.err, r.err  # no advice to chmod -R someone's folder
    assert oct((folder / "2026" / "beach.jpg").stat().st_mode & 0o777) == "0o644"
    assert oct(folder.stat().st_mode & 0o777) == "0o755"


def test_a_config_file_with_a_key_that_others_can_read_is_warned_of(gs, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("api_key: sk-test-0123456789abcdefghijkl\n")
    config.chmod(0o644)
    r = gs("list")
    assert r.code == 0
    assert f"warning: {config} holds an API key and other accounts can read it; fix with: chmod 600 {config}" in r.err
    assert "sk-test" not in r.err
    r = gs("doctor")
    assert r.code == 1 and f"problem: {config} holds an API key" in r.out
    assert gs("doctor", "--fix").code == 0
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert "warning" not in gs("list").err


def test_a_config_file_without_a_key_may_be_readable(gs, tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text("model: gpt-4o-mini\n")
    config.chmod(0o644)
    assert "warning" not in gs("list").err


def test_nothing_executable_arrives_from_a_remote(gs, tmp_path, repo_path):
    """A remote's hooks stay there: a clone and a pull install none, and a save runs none."""
    assert gs("ask", "-S", "work", "one").code == 0
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo_path), str(remote)], check=True)
    marker = tmp_path / "ran"
    for name in ("pre-commit", "commit-msg", "post-commit", "post-merge", "post-checkout", "reference-transaction"):
        hook = remote / "hooks" / name
        hook.write_text(f"#!/bin/sh\necho {name} >> {marker}\n")
        hook.chmod(0o755)
    other = tmp_path / "other.git"
    assert gs("--repo", str(other), "clone", str(remote), str(other)).code == 0
    assert gs("--repo", str(other), "ask", "work", "two").code == 0
    assert gs("--repo", str(other), "pull", str(remote)).code == 0
    assert not marker.exists(), marker.read_text()
    hooks = other / "hooks"
    assert not [p.name for p in hooks.iterdir() if os.access(p, os.X_OK)] if hooks.is_dir() else True
    assert find(other, "-perm", "/077") == []  # a clone is as private as a new repo


def test_doctor_fix_mends_what_it_can_and_names_what_it_cannot(gs, repo_path, tmp_path):
    import shutil

    if shutil.which("chattr") is None:
        pytest.skip("no chattr here to make a file that even its owner cannot chmod")
    assert gs("ask", "-S", "work", "one").code == 0
    subprocess.run(["chmod", "-R", "go+rX", str(repo_path)], check=True)
    stuck = repo_path / "description"
    if subprocess.run(["chattr", "+i", str(stuck)], capture_output=True).returncode != 0:
        pytest.skip("this file system has no immutable files")
    try:
        r = gs("doctor", "--fix")
        assert r.code == 1, r.out + r.err
        assert f"problem: could not change {stuck}" in r.out and "Traceback" not in r.err
        assert find(repo_path, "-perm", "/077") == [str(stuck)]  # everything else was mended
    finally:
        subprocess.run(["chattr", "-i", str(stuck)], check=True)


def test_a_sharing_mode_git_refuses_is_refused_before_anything_is_written(gs, repo_path, git):
    assert gs("ask", "-S", "work", "one").code == 0
    git("config", "core.sharedRepository", "0006")
    before = find(repo_path)
    r = gs("ask", "-S", "work", "two")
    assert r.code == 1
    assert "core.sharedRepository=0006 leaves the owner unable to read and write" in r.err
    assert find(repo_path) == before  # not even a journal
    assert find(repo_path, "-perm", "/077") == []


def test_a_repo_another_account_owns_is_refused_unless_git_is_told_it_is_safe(gs, repo_path, tmp_path):
    """gs writes there and runs its hooks as you: an account that made the folder could put a
    hook in it (git's "dubious ownership"); git's own safe.directory is honoured."""
    repo_path.mkdir(mode=0o777)
    try:
        os.chown(repo_path, 54321, 54321)
    except PermissionError:
        pytest.skip("only root can hand a folder to another account")
    hooks = repo_path / "hooks"
    hooks.mkdir()
    marker = tmp_path / "ran"
    (hooks / "pre-commit").write_text(f"#!/bin/sh\ntouch {marker}\n")
    (hooks / "pre-commit").chmod(0o755)
    r = gs("ask", "-S", "work", "hi")
    assert r.code == 1
    assert "belongs to another account (" in r.err and "dubious ownership" in r.err
    assert f"git config --global --add safe.directory {repo_path}" in r.err
    assert not marker.exists() and not (repo_path / "objects").exists()
    subprocess.run(["git", "config", "--global", "--add", "safe.directory", str(repo_path)], check=True)
    (hooks / "pre-commit").unlink()
    hooks.rmdir()
    r = gs("ask", "-S", "work", "hi")
    assert r.code == 0, r.err  # trusted as git trusts it


def test_a_repo_shared_after_it_was_made_is_mended_by_doctor(gs, repo_path, git):
    """Its folders and files made while it was private stay the owner's until gs doctor --fix."""
    assert gs("ask", "-S", "work", "one").code == 0
    git("config", "core.sharedRepository", "group")
    r = gs("doctor")
    assert r.code == 1 and "the group cannot use" in r.out, r.out
    assert gs("doctor", "--fix").code == 0
    assert gs("doctor").code == 0
    for path in (repo_path, repo_path / "objects", repo_path / "refs" / "heads"):
        assert stat.S_IMODE(path.stat().st_mode) & 0o070 == 0o070, path  # the group may enter and write
    ref = repo_path / "refs" / "heads" / "work"
    assert stat.S_IMODE(ref.stat().st_mode) & 0o060 == 0o060
    assert find(repo_path, "-perm", "/007") == []  # never others
    git("fsck", "--strict")


def test_a_repo_reached_through_a_symbolic_link_is_checked_where_it_is(gs, repo_path, tmp_path, monkeypatch):
    assert gs("ask", "-S", "work", "one").code == 0
    link = tmp_path / "link.git"
    link.symlink_to(repo_path)
    repo_path.chmod(0o755)
    monkeypatch.setenv("GS_REPO", str(link))
    assert gs("doctor").code == 1
    assert gs("doctor", "--fix").code == 0
    assert stat.S_IMODE(repo_path.stat().st_mode) == 0o700


def test_what_a_hook_writes_in_the_repo_is_private_too(gs, repo_path, tmp_path):
    """A user's post-commit hook that packs the repo with plain git makes no readable pack."""
    assert gs("ask", "-S", "work", "one").code == 0
    hook = repo_path / "hooks" / "post-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text('#!/bin/sh\ngit --git-dir="$GIT_DIR" repack -adq && echo packed > "$GIT_DIR/packed-by-hook"\n')
    hook.chmod(0o700)
    assert gs("ask", "-S", "work", "two").code == 0
    assert (repo_path / "packed-by-hook").exists()
    assert list((repo_path / "objects" / "pack").glob("*.pack"))
    assert find(repo_path, "-perm", "/077") == []


def test_doctor_names_a_symbolic_link_that_leads_out_of_the_repo(gs, repo_path, tmp_path):
    assert gs("ask", "-S", "work", "one").code == 0
    outside = tmp_path / "shared-folder" / "history"
    outside.parent.mkdir()
    outside.write_text("")
    (repo_path / "gs" / "prompt-history").unlink(missing_ok=True)
    (repo_path / "gs" / "prompt-history").symlink_to(outside)
    (repo_path / "gs" / "inside").symlink_to(repo_path / "HEAD")  # one that stays inside is fine
    r = gs("doctor")
    assert r.code == 1
    assert f"{repo_path / 'gs' / 'prompt-history'} is a symbolic link to {outside}" in r.out
    assert "inside" not in r.out
    assert gs("doctor", "--fix").code == 1 and (repo_path / "gs" / "prompt-history").is_symlink()  # named, kept


def test_a_repo_made_in_an_empty_folder_the_user_made_is_private(gs, tmp_path):
    folder = tmp_path / "mine"
    folder.mkdir(mode=0o755)
    assert gs("--repo", str(folder), "ask", "work", "hi").code == 0
    assert find(folder, "-perm", "/077") == []


@pytest.mark.parametrize(("value", "umask"), [("group", 0o007), ("all", 0o002), ("0660", 0o007), ("0640", 0o027)])
def test_what_gs_rewrites_in_a_shared_repo_gets_the_mode_git_gives_it(gs, repo_path, git, tmp_path, value, umask):
    """A ref, HEAD, packed-refs and the config gs writes: as git writes them there, under the umask gs runs with
    (the setting's, others kept out): a group member can move a session as git lets them."""
    subprocess.run(["git", "init", "-q", "--bare", f"--shared={value}", str(repo_path)], check=True)
    remote = tmp_path / "remote.git"
    subprocess.run(["git", "init", "-q", "--bare", str(remote)], check=True)

    def git_here(*args: str) -> None:
        """git itself writing in the repo, under the umask gs writes with."""
        subprocess.run(["sh", "-c", f'umask {umask:03o} && exec git -C "$0" "$@"', str(repo_path), *args], check=True)

    assert gs("ask", "-S", "work", "one").code == 0
    assert gs("ask", "-S", "other", "one").code == 0
    git_here("pack-refs", "--all")
    assert gs("remote", "add", "origin", str(remote)).code == 0  # the config
    assert gs("ask", "-S", "work", "two").code == 0  # a loose ref again, and its reflog
    assert gs("push").code == 0  # remote-tracking refs, in folders of their own
    assert gs("rm", "other").code == 0  # packed-refs rewritten, an archive ref, HEAD back to work
    git_here("update-ref", "refs/by-git/deep/ref", "work")
    by_git = stat.S_IMODE((repo_path / "refs" / "by-git" / "deep" / "ref").stat().st_mode)
    by_git_folder = (repo_path / "refs" / "by-git" / "deep").stat().st_mode & 0o7777
    assert by_git & 0o060 == (0o060 if value != "0640" else 0o040), oct(by_git)  # git's own rule, as a check
    files = ["HEAD", "config", "packed-refs", "refs/heads/work", "refs/archive/other",
             "refs/remotes/origin/heads/work", "logs/refs/heads/work", "logs/refs/archive/other"]
    assert {f: oct(stat.S_IMODE((repo_path / f).stat().st_mode)) for f in files} == dict.fromkeys(files, oct(by_git))
    folders = ["refs/archive", "refs/remotes/origin", "refs/remotes/origin/heads", "logs/refs/archive"]
    modes = {f: oct((repo_path / f).stat().st_mode & 0o7777) for f in folders}
    assert modes == dict.fromkeys(folders, oct(by_git_folder))
    assert "refs/heads/work" in (repo_path / "HEAD").read_text()
    git("fsck", "--strict")
    git_here("update-ref", "refs/heads/work", "work~1")  # git moves what gs wrote, through the same files
    git_here("config", "gs.test", "yes")
