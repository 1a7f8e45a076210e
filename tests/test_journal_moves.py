"""A turn waiting in the journal survives whatever happens to its session's branch.

`gs rename` and `gs rm` used to leave `gs/journal/<old>.jsonl` behind, and the next
`gs list` deleted it without a word (the prompt was in no object). The same happened to a
session whose branch was deleted with plain git. Now rename and rm commit the pending turn
first, and a journal whose branch is gone is recovered into a session of its own.
"""

from __future__ import annotations

from pathlib import Path

from gitsessions.log.events import make_header
from gitsessions.store import GitStore
from gitsessions.writer.opening import open_session

PROMPT = "the prompt typed before the crash"


def _orphan_a_turn(repo_path: Path, sid: str = "w") -> None:
    """Save one turn, then start a second and die (the lock goes, the journal stays)."""
    store = GitStore(repo_path)
    s = open_session(store, sid, new_header=make_header(sid))
    s.append("turn/start", {"turn": 1})
    s.append("user/message", {"content": "first"})
    s.end_turn("completed")
    s.append("turn/start", {"turn": 2})
    s.append("user/message", {"content": PROMPT})
    s._lock.release()  # the process ends here without saving
    store.close()
    assert (repo_path / "gs" / "journal" / f"{sid}.jsonl").exists()


def test_rename_takes_the_pending_turn_along(gs, repo_path: Path, git):
    _orphan_a_turn(repo_path)
    r = gs("rename", "w", "w2")
    assert r.code == 0, r.err
    assert not (repo_path / "gs" / "journal" / "w.jsonl").exists()
    assert gs("list").code == 0
    shown = gs("show", "w2")
    assert PROMPT in shown.out and shown.code == 0
    assert "turn 2: " + PROMPT in git("log", "--format=%s", "w2")
    git("fsck", "--strict")


def test_rm_archives_the_pending_turn_with_the_session(gs, repo_path: Path, git):
    _orphan_a_turn(repo_path)
    assert gs("rm", "w").code == 0
    assert gs("list").code == 0
    assert not (repo_path / "gs" / "journal" / "w.jsonl").exists()
    assert PROMPT in git("show", "refs/archive/w:session.jsonl")
    git("fsck", "--strict")  # HEAD stays a branch name (it named w): git refuses one in refs/archive


def test_a_journal_whose_branch_was_deleted_by_git_is_kept_in_a_session_of_its_own(gs, repo_path: Path, git):
    _orphan_a_turn(repo_path)
    git("update-ref", "-d", "refs/heads/w")
    listed = gs("list")
    assert listed.code == 0
    assert "w-recovered-1" in listed.out
    assert "renamed or removed" in listed.err and "w-recovered-1" in listed.err
    assert PROMPT in gs("show", "w-recovered-1").out
    assert not (repo_path / "gs" / "journal" / "w.jsonl").exists()
    git("fsck", "--strict")


def test_renaming_a_session_to_its_own_name_says_so(gs, repo_path: Path):
    assert gs("ask", "-S", "w", "hi").code == 0
    r = gs("rename", "w", "w")
    assert r.code == 1
    assert "already exists" in r.err and "moved while saving" not in r.err
