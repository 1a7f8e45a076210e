"""Importing Claude Code transcripts: the parentUuid graph, tool calls, sub-agents and a compaction.

The fixture (tests/data/claude_code/session.jsonl) is built from the format as documented and
as Claude Code 2.1 writes it: queue and snapshot lines outside the graph, an attachment
inside the chain, one reply split over three lines sharing ``message.id`` (thinking, text,
tool_use), a failed Bash call, a rewind (turn 2 sent twice from the same point), an image,
an in-file sidechain (a sub-agent run through the Task tool), a meta caveat, ``/compact``
(its echo, a ``compact_boundary`` whose ``logicalParentUuid`` carries the chain, the summary
line), an ``ai-title`` and a ``last-prompt``. Checked with the real git CLI and the strict
fake API.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from fakeapi import validate_messages

from gitsessions.ids import imported_fork_id, imported_session_id
from gitsessions.store import GitStore

FIXTURE = Path(__file__).parent / "data" / "claude_code" / "session.jsonl"
SESSION = "5f0c6a1e-2b7d-4c11-9a0e-3d4b5c6d7e8f"
T = 1772442000  # 2026-03-02 09:00:00 UTC, the fixture's first minute
MAIN = imported_session_id("claude-code", SESSION, "Verbose flag for cli.py")
REWOUND = imported_fork_id(MAIN, "a-6")  # turn 2 as first sent, before the rewind
AGENT = imported_session_id("claude-code", f"{SESSION}/agent-a9f3",
                            "sub-agent: Find where the README documents command-line flags.")


def _lines() -> list[dict]:
    return [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]


def _write(path: Path, lines: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def _said(uuid: str, parent: str | None, role: str, text: str, minute: int, **extra) -> dict:
    message: dict = {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}]}
    if role == "assistant":
        message |= {"id": f"msg_{uuid}", "model": "claude-sonnet-4-5"}
    return {"parentUuid": parent, "isSidechain": False, "userType": "external", "sessionId": SESSION, "type": role,
            "message": message, "uuid": uuid, "timestamp": f"2026-03-02T09:{minute:02d}:00.000Z", **extra}


#: Claude Code resumed: one more turn on the active branch.
GROWTH = [_said("u-20", "a-9", "user", "And a short -l?", 10), _said("a-20", "u-20", "assistant", "Added -l.", 11)]


def _refs(git) -> str:
    return git("for-each-ref", "--format=%(refname) %(objectname)")


def test_the_active_branch_is_the_session_a_rewind_a_fork_and_the_sub_agent_its_own(gs, git, repo_path):
    r = gs("import", str(FIXTURE))
    assert r.code == 0, r.err
    assert r.out.split() == [MAIN, REWOUND, AGENT]
    assert "1 file, 3 sessions written, 5 turns, 0 skipped" in r.err
    git("fsck", "--strict")
    # One commit per turn, dated when each turn began; the header commit when the session did.
    assert git("log", "--format=%at %s", MAIN).splitlines() == [
        f"{T + 240} turn 3: Rename the flag to --loud",
        f"{T + 120} turn 2: Actually, document it in the README first. Here is how it looks:",
        f"{T + 1} turn 1: Add a --verbose flag to cli.py",
        f"{T + 1} import: claude-code {SESSION}",
    ]
    turn1, turn2 = git("rev-parse", f"{MAIN}~2", f"{MAIN}~1").split()
    # The rewound branch leaves the session after turn 1, as it left it in Claude Code.
    assert git("merge-base", MAIN, REWOUND).strip() == turn1
    assert git("log", "-1", "--format=%at %s", REWOUND).strip() == f"{T + 60} turn 2: Now add tests"
    # The sub-agent is a session of its own, its lineage the turn that ran it.
    assert f"Forked-From: {MAIN}@{turn2}" in git("log", "-1", "--format=%B", AGENT)
    assert git("merge-base", "--is-ancestor", turn2, AGENT, check=False) == ""  # shares no history
    assert AGENT in gs("tree", MAIN).out and "at turn 2" in gs("tree", MAIN).out
    with GitStore(repo_path) as store:
        snap, agent = store.load(MAIN), store.load(AGENT)
    assert snap.header["source"] == {"tool": "claude-code", "id": SESSION} and "cwd" not in snap.header
    events = snap.events
    aside = {e.data["name"]: e.data["content"] for e in events if e.type == "import/message"}
    assert all(e.ignorable for e in events if e.type == "import/message")
    assert aside["assistant thinking"] == "The user wants a flag; read cli.py first."
    assert aside["claude-code meta"].startswith("Caveat:")
    assert aside["claude-code note"].startswith("<local-command-stdout>")  # the tool's notes are no prompts
    assert [e.data["content"] for e in events if e.type == "user/message"] == [
        "Add a --verbose flag to cli.py",
        "Actually, document it in the README first. Here is how it looks:\n[image/png: not imported]",
        "Rename the flag to --loud",
    ]
    # The reply split over three lines is one message with its call; the failed call stays failed.
    first = next(e.data for e in events if e.type == "assistant/message")
    assert first["content"] == "I'll read cli.py first." and first["model"] == "claude-sonnet-4-5"
    assert first["usage"] == {"prompt_tokens": 112, "completion_tokens": 30, "total_tokens": 142,
                              "prompt_tokens_details": {"cached_tokens": 100}}  # as the API counts
    assert first["tool_calls"] == [{"id": "toolu_01", "name": "Read",
                                    "arguments": '{"file_path": "/home/dev/proj/cli.py"}'}]
    results = [(e.data["id"], e.data["is_error"]) for e in events if e.type == "tool/result"]
    assert results == [("toolu_01", False), ("toolu_02", True), ("toolu_03", False)]
    summary = [e.data["summary"] for e in events if e.type == "compaction/summary"]
    assert len(summary) == 1 and "documented under Usage" in summary[0]
    assert [e.data for e in agent.events if e.type == "tool/result"][0]["content"] == "README.md:12: ## Usage"


def test_the_same_transcript_again_writes_nothing(gs, git):
    assert gs("import", str(FIXTURE)).code == 0
    before = _refs(git)
    r = gs("import", "--from", "claude-code", str(FIXTURE))
    assert r.code == 0 and r.out == "" and "nothing new in session.jsonl" in r.err
    assert _refs(git) == before


def test_a_resumed_session_fast_forwards_and_a_later_rewind_forks(gs, git, tmp_path):
    path = _write(tmp_path / f"{SESSION}.jsonl", _lines())
    assert gs("import", str(path)).code == 0
    tip, others = git("rev-parse", MAIN).strip(), git("rev-parse", REWOUND, AGENT)
    lines = _lines() + GROWTH
    r = gs("import", str(_write(path, lines)))
    assert r.code == 0 and r.out.split() == [MAIN] and f"{MAIN}: 1 turn new" in r.err, r.err
    assert git("rev-parse", f"{MAIN}^").strip() == tip
    assert git("log", "-1", "--format=%at %s", MAIN).strip() == f"{T + 600} turn 4: And a short -l?"
    assert git("rev-parse", REWOUND, AGENT) == others
    # Going back to before turn 4 and asking again: the old line stays, the new one forks.
    lines += [_said("u-21", "a-9", "user", "No: a short -L", 12), _said("a-21", "u-21", "assistant", "Added -L.", 13)]
    r = gs("import", str(_write(path, lines)))
    fork = imported_fork_id(MAIN, "a-21")
    assert r.code == 0 and r.out.split() == [fork], r.err
    assert git("rev-parse", f"{MAIN}^").strip() == tip  # the old line: as it was
    assert git("merge-base", MAIN, fork).strip() == tip
    assert "nothing new" in gs("import", str(path)).err
    git("fsck", "--strict")


def test_a_turn_still_under_way_is_left_for_the_next_import(gs, git, tmp_path):
    """Imported while Claude Code writes it (cron, --watch): a turn closed as interrupted then
    could only be forked from when the next import found it answered."""
    call = _said("a-20", "u-20", "assistant", "", 11)
    call["message"]["content"] = [{"type": "tool_use", "id": "toolu_20", "name": "Bash", "input": {"command": "ls"}}]
    result = _said("u-21", "a-20", "user", "", 12)
    result["message"]["content"] = [{"type": "tool_result", "tool_use_id": "toolu_20", "content": "cli.py"}]
    path = tmp_path / "live.jsonl"
    for n, lines in enumerate((GROWTH[:1], [GROWTH[0], call], [GROWTH[0], call, result])):
        r = gs("import", str(_write(path, _lines() + lines)))
        assert r.code == 0 and ("its last turn is still under way" if n == 0 else "nothing new") in r.err, r.err
        assert git("log", "-1", "--format=%s", MAIN).strip() == "turn 3: Rename the flag to --loud"
    done = _said("a-21", "u-21", "assistant", "Done.", 13)
    r = gs("import", str(_write(path, [*_lines(), GROWTH[0], call, result, done])))
    assert r.code == 0 and r.out.split() == [MAIN] and f"{MAIN}: 1 turn new" in r.err, r.err
    assert git("log", "-1", "--format=%s", MAIN).strip() == "turn 4: And a short -l?"
    interrupted = [*_lines(), _said("u-22", "a-9", "user", "Stop that", 20), call | {"parentUuid": "u-22"},
                   _said("u-23", "a-20", "user", "[Request interrupted by user for tool use]", 21)]
    r = gs("import", str(_write(path, interrupted)))  # stopped by the user: over, a branch of its own
    assert r.code == 0 and r.out.split() == [imported_fork_id(MAIN, "u-23")], r.err


def test_each_imported_session_continues_against_the_strict_server(gs, fake_api):
    assert gs("import", str(FIXTURE)).code == 0
    for sid in (MAIN, REWOUND, AGENT):
        fake_api.reset()
        r = gs("ask", "-S", sid, "one more question")
        assert r.code == 0, r.err
        messages = fake_api.requests[-1]["messages"]
        assert validate_messages(messages) is None
        assert messages[-1] == {"role": "user", "content": "one more question"}
        said = json.dumps(messages)
        assert "The user wants a flag" not in said  # thinking is never sent
        if sid == MAIN:  # what the compaction covers is sent as its summary
            assert messages[0]["content"].startswith("Summary of the conversation so far:")
            assert "Add a --verbose flag" not in said


def test_a_sub_agent_hanging_from_the_call_that_ran_it_holds_its_own_lines_alone(gs, repo_path, tmp_path):
    """Older versions chain a sidechain's first line to the session's line that ran it."""
    text = FIXTURE.read_text(encoding="utf-8").replace('"parentUuid":null,"isSidechain":true',
                                                       '"parentUuid":"a-7","isSidechain":true')
    path = tmp_path / "chained.jsonl"
    path.write_text(text.replace('"agentId":"a9f3",', ""), encoding="utf-8")
    r = gs("import", str(path))
    agent = imported_session_id("claude-code", f"{SESSION}/s-1", "sub-agent: Find where the README documents "
                                "command-line flags.")
    assert r.code == 0 and r.out.split() == [MAIN, REWOUND, agent], r.err
    with GitStore(repo_path) as store:
        prompts = [e.data["content"] for e in store.load(agent).events if e.type == "user/message"]
    assert prompts == ["Find where the README documents command-line flags."]


def test_sub_agents_in_their_own_files_and_a_fork_session_file_link_by_lineage(gs, git, tmp_path):
    """Newer Claude Code writes sub-agents to <session>/subagents/agent-*.jsonl, and a session
    made with --resume ID --fork-session is a new file repeating the origin's lines."""
    project = tmp_path / "projects" / "-home-dev-proj"
    main = [line for line in _lines() if not line.get("isSidechain")]
    side = [line for line in _lines() if line.get("isSidechain")]
    _write(project / f"{SESSION}.jsonl", main)
    agent_file = _write(project / SESSION / "subagents" / "agent-a9f3.jsonl", side)
    assert gs("import", str(project / f"{SESSION}.jsonl"), str(agent_file)).code == 0
    turn2 = git("rev-parse", f"{MAIN}~1").strip()
    assert f"Forked-From: {MAIN}@{turn2}" in git("log", "-1", "--format=%B", AGENT)
    forked = "0d4e2b1c-7a7a-4b4b-8c8c-9d9d0e0e1f1f"
    copy = [dict(line) for line in main if line.get("uuid") in ("u-1", "at-1", "a-1", "a-2", "a-3", "u-2", "a-4",
                                                                 "u-3", "a-5")]
    copy += [_said("u-30", "a-5", "user", "Try click instead", 30, sessionId=forked),
             _said("a-30", "u-30", "assistant", "Switched to click.", 31, sessionId=forked)]
    r = gs("import", str(_write(project / f"{forked}.jsonl", copy)))
    assert r.code == 0, r.err
    sid = r.out.strip()
    turn1 = git("rev-parse", f"{MAIN}~2").strip()
    assert sid.startswith("add-a-verbose-flag-to-cli-py-")
    assert f"Forked-From: {MAIN}@{turn1}" in git("log", "-1", "--format=%B", sid)
    git("fsck", "--strict")


@pytest.mark.parametrize("break_it, where", [
    (lambda lines, text: text.replace('"uuid":"a-5"', '"uuid":"a-5",', 1), "line 12: not valid JSON"),
    (lambda lines, text: text.replace('{"parentUuid":"u-4"', '["x"]\n{"parentUuid":"u-4"', 1), "line 14 is an array"),
    (lambda lines, text: text.replace('"tool_use_id":"toolu_02"', '"tool_use_id":2', 1),
     'line 11: a tool_result block without a string "tool_use_id"'),
    (lambda lines, text: text.replace('"parentUuid":null,"isSidechain":false',
                                      '"parentUuid":"a-9","isSidechain":false', 1),
     "the parentUuid links form a loop"),
])
def test_a_malformed_transcript_names_its_line_and_writes_nothing(gs, git, repo_path, tmp_path, break_it, where):
    text = FIXTURE.read_text(encoding="utf-8")
    bad = tmp_path / "bad.jsonl"
    bad.write_text(break_it(_lines(), text), encoding="utf-8")
    r = gs("import", str(bad))
    assert r.code == 1 and "cannot import bad.jsonl" in r.err and where in r.err, r.err
    assert not repo_path.exists()
    r = gs("import", str(bad), str(FIXTURE))
    assert r.code == 1 and where in r.err and r.out.split() == [MAIN, REWOUND, AGENT]
    assert "2 files (1 failed), 3 sessions written" in r.err


def test_a_line_being_written_waits_and_unknown_lines_are_passed_over(gs, tmp_path):
    text = FIXTURE.read_text(encoding="utf-8")
    extra = '{"type":"mode","mode":"plan","sessionId":"%s"}\n{"type":"world-state","uuid":"w-1","parentUuid":"a-9"}\n'
    path = tmp_path / "growing.jsonl"
    path.write_text(text + extra % SESSION + '{"parentUuid":"a-9","type":"user","mess', encoding="utf-8")
    r = gs("import", str(path))
    assert r.code == 0 and r.out.split() == [MAIN, REWOUND, AGENT], r.err
    assert "line 35 is not whole yet" in r.err
    assert "nothing new" in gs("import", str(FIXTURE)).err  # the same conversation


def test_titles_a_rename_wins_and_a_file_of_titles_alone_holds_nothing(gs, tmp_path):
    lines = _lines() + [{"type": "custom-title", "customTitle": "Loud flag", "sessionId": SESSION}]
    r = gs("import", str(_write(tmp_path / "renamed.jsonl", lines)))
    renamed = imported_session_id("claude-code", SESSION, "Loud flag")  # a rename beats the tool's own title
    assert r.code == 0 and r.out.split()[0] == renamed, r.err
    assert "Loud flag" in gs("list").out
    lines.append({"type": "custom-title", "customTitle": "Louder flag", "sessionId": SESSION})  # renamed again
    r = gs("import", str(_write(tmp_path / "renamed.jsonl", lines)))
    assert r.code == 0 and r.out.split() == [renamed], r.err  # the same conversation, found by its id
    assert f"{renamed}: titled 'Louder flag'" in r.err and "Louder flag" in gs("list").out
    assert "nothing new" in gs("import", str(tmp_path / "renamed.jsonl")).err
    titles = _write(tmp_path / "titles.jsonl", [{"type": "summary", "summary": "Old chat", "leafUuid": "x"}])
    r = gs("import", "--from", "claude-code", str(titles))
    assert r.code == 1 and "holds no conversation with a prompt" in r.err


def test_from_claude_code_refuses_another_format(gs, repo_path, tmp_path):
    path = tmp_path / "messages.json"
    path.write_text(json.dumps([{"role": "user", "content": "hi"}]), encoding="utf-8")
    r = gs("import", "--from", "claude-code", str(path))
    assert r.code == 1 and "not a claude-code file" in r.err and not repo_path.exists()


def test_redacted_before_anything_is_written(gs, git, tmp_path):
    secret = "sk-" + "proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2"
    text = FIXTURE.read_text(encoding="utf-8").replace("Rename the flag to --loud", f"use {secret}")
    text = text.replace("README.md:12: ## Usage", f"KEY={secret}")
    path = tmp_path / "secret.jsonl"
    path.write_text(text, encoding="utf-8")
    r = gs("import", str(path))
    assert r.code == 0, r.err
    dump = git("log", "-p", "--all", "--format=%B")
    assert secret not in dump and "[REDACTED:api-key]" in dump


def _parallel(upto: int) -> list[dict]:
    """A turn with two parallel calls as Claude Code chains them:
    the reply's lines one after the other, each result hanging from its own call's line, the
    next line from the last result; the first ``upto`` of its six lines."""
    def call(uuid: str, parent: str, call_id: str, name: str) -> dict:
        line = _said(uuid, parent, "assistant", "", 11)
        line["message"] |= {"id": "msg_par", "content": [{"type": "tool_use", "id": call_id, "name": "Write",
                                                          "input": {"file_path": name, "content": "x"}}]}
        return line

    def result(uuid: str, parent: str, call_id: str, text: str) -> dict:
        line = _said(uuid, parent, "user", "", 12)
        line["message"]["content"] = [{"type": "tool_result", "tool_use_id": call_id, "content": text}]
        return line

    return [_said("p-1", "a-9", "user", "Write a.md and b.md", 10), call("p-2", "p-1", "toolu_A", "a.md"),
            call("p-3", "p-2", "toolu_B", "b.md"), result("p-4", "p-2", "toolu_A", "created a.md"),
            result("p-5", "p-3", "toolu_B", "created b.md"),
            _said("p-6", "p-5", "assistant", "Both written.", 13)][:upto]


def test_parallel_tool_calls_keep_their_results_on_the_branch(gs, git, repo_path, tmp_path, fake_api):
    """The first call's result is no rewound branch: no fork, both real results, the turn completed."""
    path = tmp_path / "parallel.jsonl"
    for upto in (4, 5):  # the file being written: the turn waits, and no line of it is a fork
        r = gs("import", str(_write(path, _lines() + _parallel(upto))))
        assert r.code == 0 and ("its last turn is still under way" if upto == 4 else "nothing new") in r.err, r.err
        assert r.out.split() == ([MAIN, REWOUND, AGENT] if upto == 4 else []), r.out
    r = gs("import", str(_write(path, _lines() + _parallel(6))))
    assert r.code == 0 and r.out.split() == [MAIN] and f"{MAIN}: 1 turn new" in r.err, r.err
    assert "never answered" not in r.err
    with GitStore(repo_path) as store:
        events = store.load(MAIN).events
    turn = events[max(i for i, e in enumerate(events) if e.type == "turn/start"):]
    assert [(e.data["id"], e.data["content"]) for e in turn if e.type == "tool/result"] == [
        ("toolu_A", "created a.md"), ("toolu_B", "created b.md")]
    assert [e.data["reason"] for e in turn if e.type == "turn/end"] == ["completed"]
    assert "nothing new" in gs("import", str(path)).err
    assert gs("ask", "-S", MAIN, "and now?").code == 0
    assert validate_messages(fake_api.requests[-1]["messages"]) is None


#: Claude Code 2.1.197's own files: a session, and its copy made with --resume ID --fork-session.
REAL = Path(__file__).parent / "data" / "claude_code" / "real" / "projects" / "-home-user-proj"
ORIGIN_ID, COPY_ID = "90db39e8-d010-41f7-9e46-35f238abb614", "ba86959a-5d04-4b85-95c9-4fb3424581b1"


@pytest.mark.parametrize("runs", [["origin", "copy"], ["copy origin"], ["copy", "origin"], ["copy"]])
def test_a_fork_session_copy_forks_its_origin_whichever_is_imported_first(gs, git, tmp_path, runs):
    """2.1 repeats the origin's lines (same uuids) under the copy's id and names no origin: the
    copy is a fork of the origin's session where they part, its shared turns the origin's commits."""
    folder = tmp_path / "projects" / "-home-user-proj"
    folder.mkdir(parents=True)
    files = {name: Path(shutil.copy(REAL / f"{sid}.jsonl", folder)) for name, sid in (("origin", ORIGIN_ID),
                                                                                  ("copy", COPY_ID))}
    for run in runs:
        r = gs("import", *(str(files[name]) for name in run.split()))
        assert r.code == 0, r.err
    origin = imported_session_id("claude-code", ORIGIN_ID, "Please run echo hi")
    copy = imported_session_id("claude-code", COPY_ID, "Please run echo hi")
    assert sorted(_refs(git).split()[0::2]) == sorted([f"refs/heads/{copy}", f"refs/heads/{origin}"])
    tip = git("rev-parse", origin).strip()
    assert git("log", "--format=%s", origin).splitlines() == [
        "turn 2: And a second question", "turn 1: Please run echo hi", f"import: claude-code {ORIGIN_ID}"]
    assert git("merge-base", origin, copy).strip() == tip  # no turn twice: the copy's first two are the origin's
    assert f"Forked-From: {origin}@{tip}" in git("log", "-1", "--format=%B", copy)
    assert git("log", "-1", "--format=%s", copy).strip() == "turn 3: A forked question"
    before = _refs(git)
    r = gs("import", str(files["origin"]), str(files["copy"]))
    assert r.code == 0 and "nothing new" in r.err and _refs(git) == before, r.err
    with files["origin"].open("a", encoding="utf-8") as f:  # the origin resumed: it grows, the copy stays
        f.write(json.dumps({"parentUuid": "bbec82b7-f34c-4a0a-93ac-a1a2f17e4aa7", "isSidechain": False,
                            "type": "user", "message": {"role": "user", "content": "And a third?"},
                            "uuid": "u-more", "timestamp": "2026-12-01T18:53:00.000Z", "sessionId": ORIGIN_ID}) + "\n")
        f.write(json.dumps({"parentUuid": "u-more", "isSidechain": False, "type": "assistant",
                            "message": {"role": "assistant", "id": "msg_more", "content": [{"type": "text",
                                                                                            "text": "Yes."}]},
                            "uuid": "a-more", "timestamp": "2026-12-01T18:53:01.000Z", "sessionId": ORIGIN_ID}) + "\n")
    r = gs("import", str(files["copy"]), str(files["origin"]))
    assert r.code == 0 and r.out.split() == [origin] and f"{origin}: 1 turn new" in r.err, r.err
    assert git("rev-parse", f"{origin}^").strip() == tip
    git("fsck", "--strict")


def test_a_sub_agent_of_a_fork_session_copy_hangs_from_the_copy(gs, git, tmp_path):
    """The copy's session is a fork of the origin's (its header the origin's): its sub-agent still finds it."""
    folder = tmp_path / "projects" / "-home-user-proj"
    folder.mkdir(parents=True)
    files = [Path(shutil.copy(REAL / f"{sid}.jsonl", folder)) for sid in (ORIGIN_ID, COPY_ID)]
    real_agent = REAL / "6c9351b7-41e1-40fa-8bcc-3d12c8708f15" / "subagents" / "agent-afa859268ef01e89e.jsonl"
    agent = folder / COPY_ID / "subagents" / real_agent.name
    agent.parent.mkdir(parents=True)
    agent.write_text(real_agent.read_text(encoding="utf-8").replace("6c9351b7-41e1-40fa-8bcc-3d12c8708f15", COPY_ID),
                     encoding="utf-8")
    r = gs("import", *map(str, files), str(agent))
    assert r.code == 0, r.err
    copy = imported_session_id("claude-code", COPY_ID, "Please run echo hi")
    sub = r.out.split()[-1]
    assert sub.startswith("sub-agent-")
    assert f"Forked-From: {copy}@{git('rev-parse', copy).strip()}" in git("log", "-1", "--format=%B", sub)


def test_a_turn_imported_before_the_next_prompt_is_the_same_commit_as_imported_after(gs, git, tmp_path):
    """Two machines importing the same transcript at different moments share the commits of the
    turns both saw: a turn's events carry its own lines' times, never those of what follows."""
    lines = _lines() + GROWTH
    early = _write(tmp_path / "early" / f"{SESSION}.jsonl", lines[:-2])  # before turn 4 was asked
    late = _write(tmp_path / "late" / f"{SESSION}.jsonl", lines)
    other = tmp_path / "other.git"
    assert gs("import", str(early)).code == 0
    assert gs("import", str(late)).code == 0
    assert gs("import", str(late), env={"GS_REPO": str(other)}).code == 0
    here = git("rev-list", MAIN).split()
    there = subprocess.run(["git", "-C", str(other), "rev-list", MAIN], capture_output=True, text=True,
                           check=True).stdout.split()
    assert len(here) == 5 and here == there


AGENTS_ID = "6c9351b7-41e1-40fa-8bcc-3d12c8708f15"  # its first turn ran a sub-agent through the Agent tool


@pytest.mark.parametrize("meta", [True, False], ids=["meta", "no-meta"])
def test_a_sub_agent_s_meta_names_the_call_that_ran_it_and_its_title(gs, git, tmp_path, meta):
    """2.1.197 writes ``agent-<id>.meta.json`` beside a sub-agent's file: ``toolUseId`` (the parent's
    Agent call), ``agentType``, ``description``. Its lineage is the commit of that call even when the
    times say otherwise (here the sub-agent's lines are stamped after the parent's next turn)."""
    folder = tmp_path / "projects" / "-home-user-proj"
    parent = Path(shutil.copy(REAL / f"{AGENTS_ID}.jsonl", folder.mkdir(parents=True) or folder))
    lines = [json.loads(line) for line in parent.read_text(encoding="utf-8").splitlines()]
    last = next(line["uuid"] for line in reversed(lines) if line.get("type") == "assistant")
    more = [{"parentUuid": last, "isSidechain": False, "type": "user", "uuid": "u-next", "sessionId": AGENTS_ID,
             "message": {"role": "user", "content": "And now?"}, "timestamp": "2026-12-01T19:00:00.000Z"},
            {"parentUuid": "u-next", "isSidechain": False, "type": "assistant", "uuid": "a-next",
             "sessionId": AGENTS_ID, "timestamp": "2026-12-01T19:00:01.000Z",
             "message": {"role": "assistant", "id": "msg_next", "content": [{"type": "text", "text": "Done."}]}}]
    _write(parent, lines + more)
    real_agent = REAL / AGENTS_ID / "subagents" / "agent-afa859268ef01e89e.jsonl"
    agent = folder / AGENTS_ID / "subagents" / real_agent.name
    agent.parent.mkdir(parents=True)
    agent.write_text(real_agent.read_text(encoding="utf-8").replace("2026-12-01T18:52:", "2026-12-01T19:30:"),
                     encoding="utf-8")
    if meta:
        shutil.copy(real_agent.with_name("agent-afa859268ef01e89e.meta.json"), agent.parent)
    r = gs("import", str(parent), str(agent))
    assert r.code == 0, r.err
    session, sub = r.out.split()
    turn1, turn2 = git("rev-parse", f"{session}~1", session).split()
    assert f"Forked-From: {session}@{turn1 if meta else turn2}" in git("log", "-1", "--format=%B", sub)
    title = "Count files (general-purpose)" if meta else "Count the files in this folder."
    assert sub == imported_session_id("claude-code", f"{AGENTS_ID}/agent-afa859268ef01e89e", f"sub-agent: {title}")
    assert {row["id"]: row["title"] for row in gs("list", "--json").json()}[sub] == title
    ran = [e["data"] for e in gs("show", session, "--format", "json").json()["events"] if e["type"] == "tool/result"]
    assert [r["name"] for r in ran] == ["Agent"]  # its result: a list of text blocks, one text
    assert ran[0]["content"].startswith("Reply 1 to: ") and "\nagentId: afa859268ef01e89e " in ran[0]["content"]
