"""``gs import --from TOOL`` without a file: the tool's own folder, found as the tool finds it;
and ``gs import --watch`` (a real process, stopped with SIGINT as Ctrl+C stops it)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pexpect
import pytest
from conftest import GS
from fakeapi import validate_messages
from test_import_claude_code import AGENT, GROWTH, MAIN, REWOUND, SESSION, _lines, _said, _write
from test_watch import WAIT_S, _wait_for

from gitsessions.transfer.readers import claude_code


def _claude_dir(root: Path) -> Path:
    """A Claude Code folder as 2.1 lays it out: a project, its session, the session's sub-agent."""
    project = root / "projects" / "-home-dev-proj"
    _write(project / f"{SESSION}.jsonl", [line for line in _lines() if not line.get("isSidechain")])
    _write(project / SESSION / "subagents" / "agent-a9f3.jsonl", [line for line in _lines() if line.get("isSidechain")])
    _write(project / "0a0a0a0a-0000-4000-8000-000000000000.jsonl",
           [{"type": "summary", "summary": "An old chat", "leafUuid": "gone"}])  # titles alone: nothing to import
    return root


def test_claude_code_default_paths_honour_its_config_dir_and_put_sessions_first(tmp_path):
    root = _claude_dir(tmp_path / "elsewhere")
    home = tmp_path / "home"
    found = claude_code.default_paths({"CLAUDE_CONFIG_DIR": str(root)}, home)
    assert [p.relative_to(root / "projects").as_posix() for p in found] == [
        "-home-dev-proj/0a0a0a0a-0000-4000-8000-000000000000.jsonl",
        f"-home-dev-proj/{SESSION}.jsonl",
        f"-home-dev-proj/{SESSION}/subagents/agent-a9f3.jsonl",
    ]
    assert claude_code.default_paths({}, home) == []  # no ~/.claude: nothing, not an error here
    _claude_dir(home / ".claude")
    assert len(claude_code.default_paths({}, home)) == 3


def test_from_claude_code_without_a_file_reads_its_folder_and_says_what_it_found(gs, git, tmp_path):
    root = _claude_dir(tmp_path / "claude")
    r = gs("import", "--from", "claude-code", env={"CLAUDE_CONFIG_DIR": str(root)})
    assert r.code == 0, r.err
    assert f"found 3 Claude Code transcripts in {root / 'projects'}" in r.err
    assert r.out.split() == [MAIN, REWOUND, AGENT]
    assert "3 files, 3 sessions written, 5 turns, 1 skipped" in r.err
    turn2 = git("rev-parse", f"{MAIN}~1").strip()
    assert f"Forked-From: {MAIN}@{turn2}" in git("log", "-1", "--format=%B", AGENT)  # its session came first
    r = gs("import", "--from", "claude-code", env={"CLAUDE_CONFIG_DIR": str(root)})
    assert r.code == 0 and r.out == "" and "nothing new" in r.err
    git("fsck", "--strict")


@pytest.mark.parametrize("named", ["", "projects", "projects/-home-dev-proj"], ids=["config", "projects", "project"])
def test_from_claude_code_reads_a_folder_named_as_it_reads_its_own(gs, git, tmp_path, named):
    """Its config folder, its projects folder or one project's: the same files in the same order."""
    root = _claude_dir(tmp_path / "claude")
    folder = root / named if named else root
    assert claude_code.folder_paths(folder) == claude_code.default_paths({"CLAUDE_CONFIG_DIR": str(root)}, tmp_path)
    r = gs("import", "--from", "claude-code", str(folder))
    assert r.code == 0, r.err
    assert f"found 3 Claude Code transcripts in {folder}" in r.err
    assert r.out.split() == [MAIN, REWOUND, AGENT]  # the session before its sub-agent, which hangs from it
    assert "3 files, 3 sessions written, 5 turns, 1 skipped" in r.err  # a file of titles alone, as in its own
    turn2 = git("rev-parse", f"{MAIN}~1").strip()
    assert f"Forked-From: {MAIN}@{turn2}" in git("log", "-1", "--format=%B", AGENT)
    r = gs("import", "--from", "claude-code", str(folder), str(folder / "missing.jsonl"))
    assert r.code == 1 and r.out == "" and "file not found" in r.err, r.err
    git("fsck", "--strict")


def test_a_folder_without_transcripts_or_of_another_format_is_refused(gs, repo_path, tmp_path):
    empty = tmp_path / "empty"
    (empty / "projects").mkdir(parents=True)
    r = gs("import", "--from", "claude-code", str(empty))
    assert r.code == 1 and f"cannot import {empty}: it holds no Claude Code transcript" in r.err, r.err
    root = _claude_dir(tmp_path / "claude")
    r = gs("import", str(root / "projects"))  # what a folder holds is told by its format, named
    assert r.code == 1 and "it is a directory, not a file" in r.err, r.err
    assert not repo_path.exists()


def test_without_the_tool_folder_or_a_file_the_user_is_told_what_to_do(gs, repo_path, tmp_path):
    r = gs("import", "--from", "claude-code")  # HOME has no .claude
    assert r.code == 1 and "no Claude Code folder here" in r.err and "set CLAUDE_CONFIG_DIR" in r.err, r.err
    r = gs("import")
    assert r.code == 2 and "name the FILEs to import" in r.err and "--from claude-code" in r.err
    r = gs("import", "--from", "chatgpt")
    assert r.code == 2 and "name the FILEs to import" in r.err
    assert not repo_path.exists()


@pytest.fixture
def watcher(tmp_path):
    """Start ``gs import --watch ...`` in a process; returns (proc, log path)."""
    started = []

    def start(*args, env=None):
        log = tmp_path / f"watch-{len(started)}.log"
        proc = subprocess.Popen([*GS, "import", "--watch", *args], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=log.open("w"), env={**os.environ, **(env or {})})
        started.append(proc)
        return proc, log

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _stop(proc, log) -> list[str]:
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=WAIT_S) == 0, log.read_text()
    lines = log.read_text().splitlines()
    assert lines[-1] == "gs: stopped importing", lines
    return lines


def _tip(repo: Path, ref: str) -> str:
    return subprocess.run(["git", "-C", str(repo), "rev-parse", "--verify", "-q", ref],
                          capture_output=True, text=True).stdout.strip()


@pytest.mark.parametrize("named", [False, True], ids=["its-own-folder", "a-folder-named"])
def test_watch_imports_a_transcript_as_it_grows_and_a_new_one(gs_env, repo_path, tmp_path, watcher, named):
    root = _claude_dir(tmp_path / "claude")
    if named:  # listed again as it changes: a new project's transcript counts
        proc, log = watcher("--from", "claude-code", str(root / "projects"))
    else:
        proc, log = watcher("--from", "claude-code", env={"CLAUDE_CONFIG_DIR": str(root)})
    _wait_for("the first import", lambda: "importing again as" in log.read_text())
    tip = _tip(repo_path, MAIN)
    path = root / "projects" / "-home-dev-proj" / f"{SESSION}.jsonl"
    with path.open("a", encoding="utf-8") as f:  # Claude Code appends a turn
        for line in GROWTH:
            f.write(json.dumps(line) + "\n")
    _wait_for("the new turn", lambda: f"{MAIN}: 1 turn new" in log.read_text())
    assert _tip(repo_path, f"{MAIN}^") == tip
    other = "1b1b1b1b-0000-4000-8000-000000000000"
    new = [_said("n-1", None, "user", "A new chat", 20, sessionId=other),
           _said("n-2", "n-1", "assistant", "Hello.", 21, sessionId=other)]
    _write(root / "projects" / "-home-dev-other" / f"{other}.jsonl", new)  # a new project, a new session
    _wait_for("the new session", lambda: "imported a-new-chat-" in log.read_text())
    lines = _stop(proc, log)
    assert not any(line.startswith("gs:") and "stopped" not in line and "importing again" not in line
                   for line in lines), lines
    assert subprocess.run(["git", "-C", str(repo_path), "fsck", "--strict"]).returncode == 0


def _drained(child, seconds: float) -> str:
    """What a pty child writes in the next ``seconds`` (all of it read, so the next read begins after it)."""
    out, end = "", time.monotonic() + seconds
    while (left := end - time.monotonic()) > 0:
        try:
            out += child.read_nonblocking(4096, timeout=left)
        except pexpect.TIMEOUT:
            break
    return out


def test_watch_draws_the_progress_bar_only_for_a_round_with_something_to_import(gs_env, tmp_path):
    """On a terminal the first import's bar is gone before the watch begins; an idle watch writes nothing."""
    path = _write(tmp_path / "t.jsonl", _lines())
    child = pexpect.spawn(GS[0], [*GS[1:], "import", "--watch", str(path)], env={**os.environ, "TERM": "xterm"},
                          dimensions=(24, 100), encoding="utf-8", codec_errors="replace", timeout=WAIT_S)
    try:
        child.expect("Ctrl\\+C stops")
        assert _drained(child, 1.5).strip() == ""  # idle: a bar still up is redrawn ten times a second
        with path.open("a", encoding="utf-8") as f:  # Claude Code appends a turn: that round has a bar of its own
            f.write("".join(json.dumps(line) + "\n" for line in GROWTH))
        child.expect(f"{MAIN}: 1 turn new")
        _drained(child, 1)  # the round's end: its bar taken down
        assert _drained(child, 1.5).strip() == ""
        child.sendintr()
        child.expect("stopped importing")
    finally:
        child.close(force=True)


def test_watch_refuses_stdin(gs):
    r = gs("import", "--watch", "-")
    assert r.code == 2 and "stdin" in r.err


#: Files Claude Code 2.1.197 wrote, run against a local server (``claude -p``, then ``--resume``, then
#: ``--resume --fork-session``, then a prompt that ran a sub-agent); the working directory renamed.
REAL = Path(__file__).parent / "data" / "claude_code" / "real"


def test_transcripts_claude_code_wrote_import_and_continue(gs, git, fake_api):
    r = gs("import", "--from", "claude-code", env={"CLAUDE_CONFIG_DIR": str(REAL)})
    assert r.code == 0, r.err
    assert "found 4 Claude Code transcripts" in r.err and "4 files, 4 sessions written, 5 turns, 0 skipped" in r.err
    origin, forked, agents, agent = r.out.split()  # in the order they were begun, sub-agents last
    assert origin.startswith("please-run-echo-hi-") and forked.startswith("please-run-echo-hi-")
    assert git("log", "--format=%s", origin).splitlines() == [
        "turn 2: And a second question", "turn 1: Please run echo hi",
        "import: claude-code 90db39e8-d010-41f7-9e46-35f238abb614"]
    shown = gs("show", origin, "--format", "json").json()
    calls = [e["data"] for e in shown["events"] if e["type"] == "tool/result"]
    assert [(c["name"], c["content"], c["is_error"]) for c in calls] == [("Bash", "hi", False)]
    # --fork-session repeats the origin's lines under the new session's id: a fork of the origin where they end
    assert f"{forked}: a branch of claude-code conversation ba86959a-5d04-4b85-95c9-4fb3424581b1 (1 turn of its own)" \
        in r.err
    assert git("merge-base", origin, forked).strip() == git("rev-parse", origin).strip()
    assert f"Forked-From: {origin}@{git('rev-parse', origin).strip()}" in git("log", "-1", "--format=%B", forked)
    subjects = git("log", "--format=%s", forked).splitlines()
    assert len(subjects) == 5 and subjects[0] == "turn 3: A forked question"
    assert subjects[1].startswith(f"fork: {forked} from {origin} at ")  # the origin's three commits, then its own
    # the sub-agent (in <session>/subagents/) hangs from the turn that ran it
    assert agents.startswith("please-use-an-agent-to-count-files-")
    assert agent.startswith("sub-agent-count-files-general-purpose-")  # its .meta.json's description and type
    assert f"Forked-From: {agents}@{git('rev-parse', agents).strip()}" in git("log", "-1", "--format=%B", agent)
    for sid in (origin, forked, agents, agent):
        fake_api.reset()
        r = gs("ask", "-S", sid, "one more")
        assert r.code == 0, r.err
        assert validate_messages(fake_api.requests[-1]["messages"]) is None
    git("fsck", "--strict")
