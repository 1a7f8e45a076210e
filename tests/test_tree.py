"""The family tree of a session (issue 12, items 3 and 5): HEAD as the current session, gitsessions.tree, gs tree."""

from __future__ import annotations

from pathlib import Path

from gitsessions.store import GitStore


def test_head_names_the_session_last_saved(gs, git, repo_path: Path):
    assert gs("ask", "work", "hi").code == 0
    assert gs("ask", "other", "hello").code == 0
    assert git("symbolic-ref", "HEAD").strip() == "refs/heads/other"
    assert gs("ask", "work", "again").code == 0
    assert git("symbolic-ref", "HEAD").strip() == "refs/heads/work"
    with GitStore(repo_path) as store:
        assert store.current() == "work"
    assert git("log", "--format=%s", "-1").strip() == "turn 2: again"  # git reads HEAD as the session
    git("fsck", "--strict")


def test_a_head_that_names_no_session_is_no_current_session(gs, git, repo_path: Path):
    assert gs("ask", "work", "hi").code == 0
    git("symbolic-ref", "HEAD", "refs/heads/master")
    with GitStore(repo_path) as store:
        assert store.current() is None
    git("update-ref", "--no-deref", "HEAD", git("rev-parse", "work").strip())  # detached
    with GitStore(repo_path) as store:
        assert store.current() is None


def test_a_read_only_head_never_fails_a_save(gs, git, repo_path: Path):
    assert gs("ask", "work", "hi").code == 0
    head = repo_path / "HEAD"
    (repo_path / "HEAD.lock").write_text("held by someone else\n")  # git's lock: HEAD cannot be written now
    try:
        assert gs("ask", "other", "hello").code == 0
    finally:
        (repo_path / "HEAD.lock").unlink()
    assert head.read_text() == "ref: refs/heads/work\n"
    assert git("rev-parse", "other")
