"""Whoever writes a session takes its lock, then recovers its orphaned journal: through writer/opening.py.

A turn a crashed gs left in the journal is committed before anything else is written to
the session, whichever command writes it; :func:`~gitsessions.writer.opening.hold` is where
that is done, and the only caller of :func:`~gitsessions.writer.recovery.recover_journal`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gitsessions.errors import HookRefused, SessionExists, SessionLocked
from gitsessions.log.commits import CommitMessage
from gitsessions.log.events import make_event, make_header
from gitsessions.store import GitStore
from gitsessions.store.hooks import CommitHooks
from gitsessions.writer.opening import hold, open_revision, open_session

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "the prompt typed before the crash"


def _orphan_a_turn(repo_path: Path, sid: str = "w") -> str:
    """Save one turn, then start a second and die (the lock goes, the journal stays); return the tip."""
    with GitStore(repo_path) as store:
        s = open_session(store, sid, new_header=make_header(sid))
        s.append("turn/start", {"turn": 1})
        s.append("user/message", {"content": "first"})
        s.end_turn("completed")
        tip = s.tip
        s.append("turn/start", {"turn": 2})
        s.append("user/message", {"content": PROMPT})
        s._journal.close()  # the process ends here without saving
        s._lock.release()
    assert (repo_path / "gs" / "journal" / f"{sid}.jsonl").exists()
    assert tip is not None
    return tip


def _subjects(git, ref: str) -> list[str]:
    return git("log", "--format=%s", ref).splitlines()


def _export(gs, tmp_path: Path) -> Path:
    assert gs("ask", "-S", "other", "hello").code == 0
    out = tmp_path / "other.jsonl"
    assert gs("export", "other", "--format", "jsonl", "-o", str(out)).code == 0
    return out


# -- every path that writes a session recovers first ---------------------------------------------


def test_opening_a_session_commits_its_orphaned_turn_first(repo_path: Path, git):
    _orphan_a_turn(repo_path)
    with GitStore(repo_path) as store:
        s = open_session(store, "w")
        try:
            assert s.recovered is not None and s.tip == s.recovered and not s.in_turn
        finally:
            s.close()
    assert _subjects(git, "w")[0] == f"turn 2: {PROMPT}"
    assert not (repo_path / "gs" / "journal" / "w.jsonl").exists()


@pytest.mark.parametrize("command, ref", [
    (["rename", "w", "w2"], "w2"),
    (["rm", "w"], "refs/archive/w"),
    (["title", "w", "A title"], "w"),
    (["ask", "-S", "w", "next"], "w"),
    (["show", "w"], "w"),  # a reading command: the journal is recovered when no writer holds it
])
def test_every_command_that_writes_a_session_commits_its_orphaned_turn_first(gs, repo_path: Path, git,
                                                                            command, ref):
    _orphan_a_turn(repo_path)
    r = gs(*command)
    assert r.code == 0, r.err
    assert f"turn 2: {PROMPT}" in _subjects(git, ref)
    assert not (repo_path / "gs" / "journal" / "w.jsonl").exists()


def test_an_import_onto_an_existing_id_commits_its_orphaned_turn_then_leaves_it_alone(gs, repo_path: Path, git,
                                                                                       tmp_path: Path):
    out = _export(gs, tmp_path)
    _orphan_a_turn(repo_path)
    r = gs("import", str(out), "--as", "w")
    assert r.code == 1 and "already exists" in r.err
    assert _subjects(git, "w") == [f"turn 2: {PROMPT}", "turn 1: first"]  # recovered; nothing imported over it
    assert not (repo_path / "gs" / "journal" / "w.jsonl").exists()


def test_an_import_onto_an_id_another_writer_holds_is_refused_and_its_journal_left_alone(gs, repo_path: Path, git,
                                                                                          tmp_path: Path):
    out = _export(gs, tmp_path)
    with GitStore(repo_path) as store:
        s = open_session(store, "w", new_header=make_header("w"))
        try:
            s.append("turn/start", {"turn": 1})
            s.append("user/message", {"content": PROMPT})
            r = gs("import", str(out), "--as", "w")
            assert r.code == 1 and "'w' is being written by pid" in r.err
            assert store.journal("w").exists() and store.tip("w") is None
        finally:
            s.close()


def _orphan_a_new_session(store: GitStore, sid: str) -> None:
    """Start a new session's first turn and die before its first save (no branch, only the journal)."""
    s = open_session(store, sid, new_header=make_header(sid))
    s.append("turn/start", {"turn": 1})
    s.append("user/message", {"content": PROMPT})
    s._journal.close()
    s._lock.release()


def test_a_fork_to_the_next_free_name_never_writes_over_an_orphaned_new_session_of_that_name(repo_path: Path, git):
    _orphan_a_turn(repo_path)
    with GitStore(repo_path) as store:
        _orphan_a_new_session(store, "w-1")
        session, note = open_revision(store, "w", always_fork=True)
        try:
            assert session.id == "w-2" and "new session w-2" in str(note)  # w-1 holds the recovered turn now
            session.append("turn/start", {"turn": 2})
            session.append("user/message", {"content": "from the past"})
            session.end_turn("completed")
        finally:
            session.close()
    assert _subjects(git, "w-1") == [f"turn 1: {PROMPT}"]
    assert _subjects(git, "w-2")[0] == "turn 2: from the past"


def test_a_fork_to_a_name_an_orphaned_new_session_has_is_refused_once_that_turn_is_committed(repo_path: Path, git):
    _orphan_a_turn(repo_path)
    with GitStore(repo_path) as store:
        _orphan_a_new_session(store, "alt")
        with pytest.raises(SessionExists):
            open_revision(store, "w", fork_as="alt")
        assert store.lock("alt").try_acquire()  # the refused open let go of it
    assert _subjects(git, "alt") == [f"turn 1: {PROMPT}"]
    assert not (repo_path / "gs" / "journal" / "alt.jsonl").exists()


# -- hold: the lock, then the recovery -------------------------------------------------------------


def test_hold_is_refused_while_a_live_writer_holds_the_session_and_leaves_its_journal(repo_path: Path):
    with GitStore(repo_path) as store:
        s = open_session(store, "w", new_header=make_header("w"))
        try:
            s.append("turn/start", {"turn": 1})
            s.append("user/message", {"content": PROMPT})
            with GitStore(repo_path) as other, pytest.raises(SessionLocked) as refused:
                hold(other, "w")
            assert refused.value.session_id == "w" and refused.value.waited == 0
            assert store.journal("w").exists() and store.tip("w") is None  # the live turn is untouched
        finally:
            s.close()


def test_hold_recovers_then_lets_go_and_gives_the_recoverys_warnings(repo_path: Path):
    base = _orphan_a_turn(repo_path)
    with GitStore(repo_path) as store:
        n = len(store.load("w").events)  # the branch moves on under the journal, as a pull would move it
        moved = [make_event(n, "turn/start", {"turn": 2}), make_event(n + 1, "user/message", {"content": "elsewhere"}),
                 make_event(n + 2, "turn/end", {"turn": 2, "reason": "completed"})]
        store.append("w", moved, CommitMessage("turn 2: elsewhere"), expected_tip=base)
        warnings: list[str] = []
        with hold(store, "w", warnings=warnings) as held:
            assert held.lock.held
            assert held.recovered is not None and held.recovered == store.tip("w-recovered-1")
        assert warnings == ["w moved on while a turn was in progress; that turn is kept in session w-recovered-1"]
        assert not held.lock.held
        assert store.lock("w").try_acquire()  # free for the next writer
        assert not store.journal("w").exists()


def test_hold_with_nothing_to_recover_just_takes_the_lock(repo_path: Path):
    with GitStore(repo_path) as store, hold(store, "w") as held:
        assert held.lock.held and held.recovered is None
        with pytest.raises(SessionLocked):
            store.lock("w").acquire()


def test_hold_lets_go_of_the_lock_when_the_recovery_fails(repo_path: Path):
    tip = _orphan_a_turn(repo_path)
    hook = repo_path / "hooks" / "pre-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho refused >&2\nexit 1\n")
    hook.chmod(0o755)
    with GitStore(repo_path, hooks=CommitHooks(repo_path)) as store:
        with pytest.raises(HookRefused):
            hold(store, "w")
        assert store.journal("w").exists() and store.tip("w") == tip  # kept for the next try
        lock = store.lock("w")
        assert lock.try_acquire()  # not left held by the failed recovery
        lock.release()


def test_recover_journal_is_called_only_by_hold():
    callers = set()
    for path in (ROOT / "gitsessions").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) == \
                    "recover_journal":
                callers.add(path.relative_to(ROOT).as_posix())
    assert callers == {"gitsessions/writer/opening.py"}
