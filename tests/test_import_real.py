"""Importing files the real CLIs wrote: Claude Code 2.1.197 and Codex 0.171, run against tests/fakeagents.py.

The fixtures (tests/data/claude_code/real2/, tests/data/codex/real/) are the tools' own files;
each folder's README says what was run to make them and what every file holds, line by line.
Checked with the real git CLI (``fsck --strict``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gitsessions.ids import imported_fork_id, imported_session_id
from gitsessions.store import GitStore

DATA = Path(__file__).parent / "data"
CLAUDE = DATA / "claude_code" / "real2"
CLAUDE_FOLDER = CLAUDE / "projects" / "-home-user-proj"
CODEX = DATA / "codex" / "real"

#: The Claude Code sessions, by what made them (tests/data/claude_code/real2/README.md).
COMPACT, REWIND = "1639e4d5-c98c-4a50-923f-f32016dd554f", "a8948df7-5ee8-473e-b3a1-9823e3e0d995"
AGENT, EXIT = "1083d665-72d1-4e02-8f52-45563301e940", "133f1ba2-370b-435d-b296-93b2508ae508"
ORIGIN, COPY = "4cef8d97-aa43-4442-b9a5-9ede0053a0cb", "5aafd86c-22e1-4672-9f1c-952519160ac8"
SUB_AGENT = f"{AGENT}/agent-ac1f0804753054c28"
#: The sub-agent's title: its .meta.json's description and type.
SUB_AGENT_TITLE = "sub-agent: Find the README (general-purpose)"
REWOUND_LEAF = "a62688b3-11b4-4fe3-bd2b-23f631eb8e2a"  # the reply to "Second question", left by the rewind

#: The Codex rollouts, by what made them (tests/data/codex/real/README.md).
EXEC, CODEX_COMPACT = "01a23d06-6031-7212-9829-52f06ed75b20", "01a23d06-6379-77d1-96a7-ba8edf5c2ce7"
CODEX_ORIGIN, EXEC_FORK = "01a23d06-9b8a-7ab0-bc12-2006aa63893b", "01a23d06-9c7b-7022-bac0-1ece7c6f8759"
TUI_FORK = "01a23d06-ab98-7fa3-bb05-979b2bcf23d9"


def _claude(sid: str, title: str) -> str:
    return imported_session_id("claude-code", sid, title)


def _codex(sid: str, title: str) -> str:
    return imported_session_id("codex", sid, title)


def _subjects(git, session: str) -> list[str]:
    return git("log", "--format=%s", session).splitlines()


def _prompts(snap) -> list[str]:
    return [e.data["content"] for e in snap.events if e.type == "user/message"]


@pytest.fixture
def claude_imported(gs, git):
    """The Claude Code fixtures imported as Claude Code keeps them: ``--from claude-code`` finds them."""
    r = gs("import", "--from", "claude-code", env={"CLAUDE_CONFIG_DIR": str(CLAUDE)})
    assert r.code == 0, r.err
    git("fsck", "--strict")
    return r


@pytest.fixture
def codex_imported(gs, git):
    """The Codex rollouts imported, each file named."""
    r = gs("import", *map(str, sorted(CODEX.rglob("rollout-*.jsonl"))))
    assert r.code == 0, r.err
    git("fsck", "--strict")
    return r


def test_every_claude_code_session_and_its_sub_agent_is_a_session(claude_imported):
    written = claude_imported.out.split()
    expected = [_claude(COMPACT, "Please run echo hi"), _claude(REWIND, "First question"),
                imported_fork_id(_claude(REWIND, "First question"), REWOUND_LEAF),
                _claude(AGENT, "Use an agent to find the README"),
                imported_session_id("claude-code", SUB_AGENT, SUB_AGENT_TITLE),
                _claude(ORIGIN, "A question before the fork"), _claude(COPY, "A question before the fork"),
                _claude(EXIT, "Hello from the TUI")]
    assert sorted(written) == sorted(expected)


def test_a_rewind_in_the_tui_is_a_fork_at_the_turn_before_it(claude_imported, git):
    main = _claude(REWIND, "First question")
    rewound = imported_fork_id(main, REWOUND_LEAF)
    assert _subjects(git, main)[:3] == ["turn 3: Third question after the rewind",
                                        "turn 2: A different second question", "turn 1: First question"]
    assert _subjects(git, rewound)[0] == "turn 2: Second question"
    assert git("merge-base", main, rewound).strip() == git("rev-parse", f"{main}~2").strip()  # after turn 1


def test_a_fork_session_copy_continued_on_both_sides_forks_its_origin_after_the_shared_turn(claude_imported, git):
    origin, copy = _claude(ORIGIN, "A question before the fork"), _claude(COPY, "A question before the fork")
    assert _subjects(git, origin)[:2] == ["turn 2: The origin goes on", "turn 1: A question before the fork"]
    assert _subjects(git, copy)[:2] == ["turn 3: The copy goes on", "turn 2: The copy's first question"]
    turn1 = git("rev-parse", f"{origin}~1").strip()
    assert git("merge-base", origin, copy).strip() == turn1
    assert f"Forked-From: {origin}@{turn1}" in git("log", "--format=%B", copy)


def test_the_sub_agent_hangs_from_the_turn_that_ran_it(claude_imported, git, repo_path):
    parent = _claude(AGENT, "Use an agent to find the README")
    sub = imported_session_id("claude-code", SUB_AGENT, SUB_AGENT_TITLE)
    assert f"Forked-From: {parent}@{git('rev-parse', parent).strip()}" in git("log", "-1", "--format=%B", sub)
    with GitStore(repo_path) as store:
        run, agent = store.load(parent), store.load(sub)
    call = next(e.data for e in run.events if e.type == "assistant/message")["tool_calls"][0]
    assert call["name"] == "Agent"
    assert json.loads(call["arguments"])["prompt"] == "Find the README file and say its path."
    assert _prompts(agent) == ["Find the README file and say its path."]
    assert [e.data["content"] for e in agent.events if e.type == "tool/result"] == [".\n.."]


def test_the_compacted_session_keeps_its_prompts_its_bash_call_and_the_summary(claude_imported, repo_path):
    with GitStore(repo_path) as store:
        snap = store.load(_claude(COMPACT, "Please run echo hi"))
    assert snap.header["source"] == {"tool": "claude-code", "id": COMPACT}
    assert _prompts(snap) == ["Please run echo hi", "What did it print?", "What do you remember after the compaction?",
                              "And one more turn"]
    call = next(e.data for e in snap.events if e.type == "assistant/message")["tool_calls"][0]
    assert call["name"] == "Bash" and json.loads(call["arguments"])["command"] == "echo hi"
    assert [e.data["content"] for e in snap.events if e.type == "tool/result"] == ["hi"]
    summaries = [e.data["summary"] for e in snap.events if e.type == "compaction/summary"]
    assert len(summaries) == 1 and "The user asked to run `echo hi`; it printed hi." in summaries[0]


def test_a_session_resumed_after_a_local_command_keeps_its_two_prompts(claude_imported, git, repo_path):
    session = _claude(EXIT, "Hello from the TUI")
    assert _subjects(git, session)[:2] == ["turn 2: Back after the exit", "turn 1: Hello from the TUI"]
    with GitStore(repo_path) as store:
        snap = store.load(session)
    assert _prompts(snap) == ["Hello from the TUI", "Back after the exit"]


def test_the_claude_code_fixtures_again_write_nothing(claude_imported, gs, git):
    before = git("for-each-ref", "--format=%(refname) %(objectname)")
    r = gs("import", "--from", "claude-code", env={"CLAUDE_CONFIG_DIR": str(CLAUDE)})
    assert r.code == 0 and r.out == "" and "nothing new" in r.err, r.err
    assert git("for-each-ref", "--format=%(refname) %(objectname)") == before


# --------------------------------------------------------------------------- Codex


def test_every_rollout_is_a_session(codex_imported):
    assert sorted(codex_imported.out.split()) == sorted([
        _codex(EXEC, "Please run echo hi"), _codex(CODEX_COMPACT, "Plan a small change"),
        # a fork's first prompt is its origin's (it holds the origin's turns): its title too
        _codex(CODEX_ORIGIN, "A question before the forks"), _codex(EXEC_FORK, "A question before the forks"),
        _codex(TUI_FORK, "A question before the forks")])


def test_a_tool_call_and_a_resumed_turn(codex_imported, git, repo_path):
    session = _codex(EXEC, "Please run echo hi")
    assert _subjects(git, session)[:2] == ["turn 2: What did it print?", "turn 1: Please run echo hi"]
    with GitStore(repo_path) as store:
        snap = store.load(session)
    assert snap.header["source"] == {"tool": "codex", "id": EXEC}
    assert _prompts(snap) == ["Please run echo hi", "What did it print?"]
    call = next(e.data for e in snap.events if e.type == "assistant/message")["tool_calls"][0]
    assert call["name"] == "exec_command" and json.loads(call["arguments"]) == {"cmd": "echo hi"}
    result = next(e.data for e in snap.events if e.type == "tool/result")
    assert result["id"] == call["id"] and result["content"].rstrip().endswith("Output:\nhi")
    replies = [e.data["content"] for e in snap.events if e.type == "assistant/message"]
    assert replies[1] == "It printed hi."


def test_the_compacted_rollout_keeps_its_prompts_and_the_summary(codex_imported, repo_path):
    with GitStore(repo_path) as store:
        snap = store.load(_codex(CODEX_COMPACT, "Plan a small change"))
    assert _prompts(snap) == ["Plan a small change", "And a second step?", "What is left after the compaction?",
                              "One more after the TUI"]
    summaries = [e.data["summary"] for e in snap.events if e.type == "compaction/summary"]
    assert len(summaries) == 1 and "Progress: the user asked for a plan and got one." in summaries[0]
    assert sum(e.type == "turn/start" for e in snap.events) == 4  # /compact, a task of Codex's, is no turn


def test_the_forks_own_turns_and_the_origin_continued(codex_imported, git, repo_path):
    origin = _codex(CODEX_ORIGIN, "A question before the forks")
    assert _subjects(git, origin)[:2] == ["turn 2: The origin goes on", "turn 1: A question before the forks"]
    by_exec, by_tui = _codex(EXEC_FORK, "A question before the forks"), _codex(TUI_FORK, "A question before the forks")
    with GitStore(repo_path) as store:
        exec_snap, tui_snap = store.load(by_exec), store.load(by_tui)
    # Each holds the origin's first turn (Codex writes it no line of it), on the origin's commit.
    assert _prompts(exec_snap) == ["A question before the forks", "Forked with exec fork", "The exec fork goes on"]
    assert _prompts(tui_snap) == ["A question before the forks", "Forked in the TUI", "The TUI fork goes on"]
    turn1 = git("rev-parse", f"{origin}~1").strip()
    for fork in (by_exec, by_tui):
        assert git("merge-base", origin, fork).strip() == turn1
        assert f"Forked-From: {origin}@{turn1}" in git("log", "-1", "--format=%B", fork)


def test_the_rollouts_again_write_nothing(codex_imported, gs, git):
    before = git("for-each-ref", "--format=%(refname) %(objectname)")
    r = gs("import", *map(str, sorted(CODEX.rglob("rollout-*.jsonl"))))
    assert r.code == 0 and r.out == "" and "nothing new" in r.err, r.err
    assert git("for-each-ref", "--format=%(refname) %(objectname)") == before


# --------------------------------------------------------------------------- a file written out of order

UNORDERED = DATA / "claude_code" / "real2-unordered" / "projects" / "-home-user-proj"
UNORDERED_ID = "36c2d269-4579-41c7-a4e4-d925690398ba"


def test_a_reply_written_before_its_prompt_is_still_the_prompts_reply_and_the_resumed_turn_fast_forwards(
        gs, git, tmp_path, repo_path):
    """Claude Code once appended a turn's prompt after its reply; after the first run the file ended there."""
    lines = (UNORDERED / f"{UNORDERED_ID}.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)
    path = tmp_path / "projects" / "-home-user-proj" / f"{UNORDERED_ID}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(lines[:11]), encoding="utf-8")  # where the file ended after the first run
    session = _claude(UNORDERED_ID, "Hello from the TUI")
    r = gs("import", str(path))
    assert r.code == 0 and r.out.split() == [session], r.err
    assert _subjects(git, session)[0] == "turn 1: Hello from the TUI"
    path.write_text("".join(lines), encoding="utf-8")  # resumed
    r = gs("import", str(path))
    assert r.code == 0 and f"{session}: 1 turn new" in r.err, r.err
    assert _subjects(git, session)[:2] == ["turn 2: Back in the TUI", "turn 1: Hello from the TUI"]
    git("fsck", "--strict")
    with GitStore(repo_path) as store:
        snap = store.load(session)
    said = [(e.type, e.data["content"]) for e in snap.events if e.type in ("user/message", "assistant/message")]
    assert said == [("user/message", "Hello from the TUI"), ("assistant/message", "Reply 2 to: Hello from the TUI"),
                    ("user/message", "Back in the TUI"), ("assistant/message", "Reply 3 to: Back in the TUI")]
