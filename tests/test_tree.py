"""The family tree of a session (issue 12, items 3 and 5): HEAD as the current session, gitsessions.tree, gs tree."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from gitsessions.store import GitStore
from gitsessions.tree import Node, current_session, family


def _shape(node: Node) -> list[tuple[int, str, str | None, int | None, bool]]:
    return [(d, n.session_id, n.parent, n.from_turn, n.archived) for d, n in node.walk()]


@pytest.fixture
def forked(gs, git):
    """work (3 turns); work-2 forked after turn 1 with a turn of its own; work-2-1 off work-2; alt archived."""
    for prompt in ("first question", "second question", "third question"):
        assert gs("ask", "work", prompt).code == 0
    assert gs("ask", "work~1", "shorter answer please", "--fork", "work-2").code == 0
    assert gs("ask", "work-2", "and again").code == 0
    assert gs("fork", "work-2~1", "work-2-1").code == 0
    assert gs("fork", "work~2", "alt").code == 0
    assert gs("rm", "alt").code == 0
    assert gs("ask", "other", "unrelated").code == 0
    return gs


def test_the_family_is_every_session_sharing_history(forked, repo_path: Path):
    with GitStore(repo_path) as store:
        root = family(store, "work-2-1")
        assert family(store, "alt").tip == root.tip  # an archived member finds the same family
    assert _shape(root) == [
        (0, "work", None, None, False),
        (1, "alt", "work", 1, True),
        (1, "work-2", "work", 2, False),
        (2, "work-2-1", "work-2", 3, False),
    ]
    work2 = root.find("work-2")
    assert work2 is not None
    assert (work2.turns, work2.prompt, work2.title) == (4, "shorter answer please", "first question")
    assert root.find("other") is None
    assert root.turns == 3 and root.prompt is None


def test_head_names_the_session_last_saved(gs, git, repo_path: Path):
    assert gs("ask", "work", "hi").code == 0
    assert gs("ask", "other", "hello").code == 0
    assert git("symbolic-ref", "HEAD").strip() == "refs/heads/other"
    assert gs("ask", "work", "again").code == 0
    assert git("symbolic-ref", "HEAD").strip() == "refs/heads/work"
    with GitStore(repo_path) as store:
        assert current_session(store) == "work"
        assert family(store, "work").current
    assert git("log", "--format=%s", "-1").strip() == "turn 2: again"  # git reads HEAD as the session
    git("fsck", "--strict")


def test_a_head_that_names_no_session_is_no_current_session(gs, git, repo_path: Path):
    assert gs("ask", "work", "hi").code == 0
    git("symbolic-ref", "HEAD", "refs/heads/master")
    with GitStore(repo_path) as store:
        assert current_session(store) is None
    git("update-ref", "--no-deref", "HEAD", git("rev-parse", "work").strip())  # detached
    with GitStore(repo_path) as store:
        assert current_session(store) is None


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


def test_commits_plain_git_made_on_top_are_understood(forked, git, repo_path: Path):
    tree = git("rev-parse", "work-2^{tree}").strip()
    top = subprocess.run(["git", "-C", str(repo_path), "commit-tree", tree, "-p", "work-2", "-m", "by hand"],
                         capture_output=True, text=True, check=True,
                         env={"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a",
                              "GIT_COMMITTER_EMAIL": "a@b", "PATH": "/usr/bin:/bin"}).stdout.strip()
    git("update-ref", "refs/heads/work-2", top)
    git("branch", "copy", "work~1")  # a branch plain git made on a session's commit: no lineage trailer
    with GitStore(repo_path) as store:
        root = family(store, "copy")
    assert _shape(root) == [
        (0, "work", None, None, False),
        (1, "alt", "work", 1, True),
        (1, "copy", "work", 2, False),
        (1, "work-2", "work", 2, False),
        (2, "work-2-1", "work-2", 3, False),
    ]
    assert root.find("work-2").prompt == "shorter answer please"  # type: ignore[union-attr]


def test_a_renamed_parent_is_still_the_parent(forked, repo_path: Path):
    assert forked("rename", "work", "main-line").code == 0
    with GitStore(repo_path) as store:
        root = family(store, "work-2")
    assert [(n.session_id, n.parent) for _d, n in root.walk()] == [
        ("main-line", None), ("alt", "main-line"), ("work-2", "main-line"), ("work-2-1", "work-2")]
