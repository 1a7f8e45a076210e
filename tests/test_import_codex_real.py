"""Importing the rollouts Codex 0.171 itself wrote (tests/data/codex/real, see its README).

Codex ran against the fake Responses server: ``codex exec`` and ``exec resume``, ``/compact``
in the TUI, then ``codex exec fork`` and the TUI's ``/fork`` of one session, each side
continued. What gs makes of them is checked against what the files say, not against what
this reader was built from.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from fakeapi import validate_messages

from gitsessions.ids import imported_fork_id, imported_session_id
from gitsessions.log.transcript import derive_messages
from gitsessions.store import GitStore
from gitsessions.transfer.readers import codex

SESSIONS = Path(__file__).parent / "data" / "codex" / "real" / "sessions"
DAY = SESSIONS / "2026" / "12" / "03"
COMPACT_ID = "01a23d06-6379-77d1-96a7-ba8edf5c2ce7"
ORIGIN_ID = "01a23d06-9b8a-7ab0-bc12-2006aa63893b"
EXEC_FORK_ID = "01a23d06-9c7b-7022-bac0-1ece7c6f8759"
TUI_FORK_ID = "01a23d06-ab98-7fa3-bb05-979b2bcf23d9"
FORKS_TITLE = "A question before the forks"
ORIGIN, EXEC_FORK, TUI_FORK = (imported_session_id("codex", sid, FORKS_TITLE)
                               for sid in (ORIGIN_ID, EXEC_FORK_ID, TUI_FORK_ID))


def _file(sid: str) -> Path:
    [path] = DAY.glob(f"rollout-*-{sid}.jsonl")
    return path


def _lines(sid: str) -> list[dict]:
    return [json.loads(line) for line in _file(sid).read_text(encoding="utf-8").splitlines()]


def _events(repo: Path, sid: str) -> list:
    with GitStore(repo) as store:
        return store.load(sid).events


def _said(events: list) -> list[tuple[str, str]]:
    return [(m["role"], m["content"]) for m in derive_messages(events)]


def test_compact_is_no_turn_and_a_continued_session_is_sent_what_codex_sends(gs, git, repo_path, fake_api):
    lines = _lines(COMPACT_ID)
    prompts = ["Plan a small change", "And a second step?", "What is left after the compaction?",
               "One more after the TUI"]
    [compacted] = [line["payload"] for line in lines if line["type"] == "compacted"]
    r = gs("import", str(_file(COMPACT_ID)))
    assert r.code == 0, r.err
    sid = imported_session_id("codex", COMPACT_ID, prompts[0])
    git("fsck", "--strict")
    assert [s for s in git("log", "--format=%s", sid).splitlines() if s.startswith("turn")] == [
        f"turn {n}: {p}" for n, p in reversed(list(enumerate(prompts, 1)))]  # 4 prompts, 4 turns
    events = _events(repo_path, sid)
    [summary] = [e for e in events if e.type == "compaction/summary"]
    # The /compact task's reply is the summary's text, not a reply of any turn.
    reply = next(line["payload"] for line in lines if line.get("metadata", {}).get("compaction_output"))
    proper = reply["content"][0]["text"]
    assert not any(e.data.get("content") == proper for e in events if e.type == "assistant/message")
    assert summary.data["summary"] == compacted["message"] and compacted["message"].endswith(proper)
    usage = compacted["latest_token_usage_record"]["usage"]
    assert (summary.data["usage"]["prompt_tokens"], summary.data["usage"]["completion_tokens"]) == (
        usage["input_tokens"], usage["output_tokens"])
    # It covers turns 1-2 and opens turn 3's commit.
    ends = [e.seq for e in events if e.type == "turn/end"]
    assert summary.data["through"] == ends[1] == summary.seq - 1
    turn3 = git("log", "-1", "--format=%(trailers:key=Events,valueonly)", f"{sid}~1").strip()
    assert git("log", "-1", "--format=%s", f"{sid}~1").strip() == f"turn 3: {prompts[2]}"
    assert int(turn3.split("-")[0]) == summary.seq
    # What it keeps are the prompts Codex's replacement history holds word for word.
    kept_by_codex = [item["content"][0]["text"] for item in compacted["replacement_history"]
                     if item.get("role") == "user" and not item["content"][0]["text"].startswith("<")
                     and item["content"][0]["text"] != compacted["message"]]
    assert kept_by_codex == prompts[:2]
    assert [e.data["content"] for e in events if e.seq in summary.data["kept"]] == kept_by_codex
    sent = _said(events)
    assert sent == [("user", prompts[0]), ("user", prompts[1]),
                    ("user", f"Summary of the conversation so far:\n{compacted['message']}"),
                    ("user", prompts[2]), ("assistant", f"Reply 7 to: {prompts[2]}"),
                    ("user", prompts[3]), ("assistant", f"Reply 9 to: {prompts[3]}")]
    assert gs("ask", "-S", sid, "and now?").code == 0
    messages = fake_api.requests[-1]["messages"]
    assert validate_messages(messages) is None
    assert [(m["role"], m["content"]) for m in messages if m["role"] != "system"] == [*sent, ("user", "and now?")]


ORIGIN_TURN = [("user", FORKS_TITLE), ("assistant", f"Reply 10 to: {FORKS_TITLE}")]
THEIR_TURNS = {
    ORIGIN: [("user", "The origin goes on"), ("assistant", "Reply 15 to: The origin goes on")],
    EXEC_FORK: [("user", "Forked with exec fork"), ("assistant", "Reply 11 to: Forked with exec fork"),
                ("user", "The exec fork goes on"), ("assistant", "Reply 12 to: The exec fork goes on")],
    TUI_FORK: [("user", "Forked in the TUI"), ("assistant", "Reply 13 to: Forked in the TUI"),
               ("user", "The TUI fork goes on"), ("assistant", "Reply 16 to: The TUI fork goes on")],
}


def _check_forks(gs, git, repo: Path) -> None:
    """Each fork is a fork of the origin's session at its first turn, holding it, then its own two."""
    git("fsck", "--strict")
    point = git("rev-parse", f"{ORIGIN}~1").strip()  # the origin's turn 1
    listed = gs("list").out
    for fork in (EXEC_FORK, TUI_FORK):
        assert git("merge-base", ORIGIN, fork).strip() == point
        assert f"Forked-From: {ORIGIN}@{point}" in git("log", "-1", "--format=%B", fork)
        assert f"{fork} ← {ORIGIN}@{point[:7]}" in listed
    for sid, theirs in THEIR_TURNS.items():
        assert _said(_events(repo, sid)) == [*ORIGIN_TURN, *theirs]


@pytest.mark.parametrize("order", [(ORIGIN_ID, EXEC_FORK_ID, TUI_FORK_ID), (TUI_FORK_ID, EXEC_FORK_ID, ORIGIN_ID),
                                   (EXEC_FORK_ID,), (TUI_FORK_ID, EXEC_FORK_ID)])
def test_the_forks_fork_the_origin_where_they_left_it_whatever_the_order(gs, git, repo_path, tmp_path, order):
    r = gs("import", *(str(_file(sid)) for sid in order))
    assert r.code == 0, r.err
    if EXEC_FORK_ID in order and TUI_FORK_ID in order:  # (the origin comes with the first fork)
        _check_forks(gs, git, repo_path)
    refs = git("for-each-ref", "--format=%(refname) %(objectname)")
    one_run = tmp_path / "one-run.git"  # every file at once, origin first: the same commits
    assert gs("import", *(str(_file(sid)) for sid in (ORIGIN_ID, EXEC_FORK_ID, TUI_FORK_ID)),
              env={"GS_REPO": str(one_run)}).code == 0
    theirs = git("--git-dir", str(one_run), "for-each-ref", "--format=%(refname) %(objectname)")
    assert set(refs.splitlines()) <= set(theirs.splitlines())  # what this order wrote, commit for commit
    for sid in (ORIGIN_ID, EXEC_FORK_ID, TUI_FORK_ID):
        r = gs("import", str(_file(sid)))
        assert r.code == 0, r.err
    assert git("for-each-ref", "--format=%(refname) %(objectname)") == theirs


def test_codex_home_imported_whole_twice(gs, git, repo_path, tmp_path):
    home = tmp_path / "codex-home"
    shutil.copytree(SESSIONS, home / "sessions")
    r = gs("import", "--from", "codex", env={"CODEX_HOME": str(home)})
    assert r.code == 0, r.err
    assert "5 files, 5 sessions written, 12 turns, 0 skipped" in r.err
    _check_forks(gs, git, repo_path)
    refs = git("for-each-ref", "--format=%(refname) %(objectname)")
    r = gs("import", "--from", "codex", env={"CODEX_HOME": str(home)})
    assert r.code == 0 and r.out == "", r.err
    assert git("for-each-ref", "--format=%(refname) %(objectname)") == refs


def test_a_fork_away_from_its_origin_is_completed_once_the_origin_is_found(gs, git, repo_path, tmp_path):
    alone = tmp_path / "copied" / _file(TUI_FORK_ID).name
    alone.parent.mkdir()
    shutil.copy(_file(TUI_FORK_ID), alone)
    r = gs("import", str(alone))
    assert r.code == 0, r.err
    first = imported_session_id("codex", TUI_FORK_ID, "Forked in the TUI")
    assert r.out.split() == [first] and f"its history begins in codex session {ORIGIN_ID}" in r.err
    assert _said(_events(repo_path, first)) == THEIR_TURNS[TUI_FORK]
    kept = git("rev-parse", first).strip()
    home = tmp_path / "codex-home"
    shutil.copytree(SESSIONS, home / "sessions")
    r = gs("import", str(alone), env={"CODEX_HOME": str(home)})  # the origin found where Codex keeps it
    assert r.code == 0, r.err
    whole = imported_fork_id(first, TUI_FORK_ID)
    assert r.out.split() == [ORIGIN, whole], r.err
    git("fsck", "--strict")
    assert git("rev-parse", first).strip() == kept
    assert git("merge-base", ORIGIN, whole).strip() == git("rev-parse", f"{ORIGIN}~1").strip()
    assert _said(_events(repo_path, whole)) == [*ORIGIN_TURN, *THEIR_TURNS[TUI_FORK]]


def test_every_line_of_the_real_rollouts_has_a_home():
    """No item of them is skipped unsaid: every note is one this reader means to give."""
    for path in sorted(DAY.glob("rollout-*.jsonl")):
        with path.open("rb") as f:
            convs = codex.read_rollouts(f, path)
        for conv in convs:
            assert conv.branches and conv.awaits is None
            assert all(note.startswith(("it was forked from", "read with codex session")) for note in conv.notes), (
                path.name, conv.notes)
