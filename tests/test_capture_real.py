"""gs capture with the real agents: a `claude -p` turn and a `codex exec` turn reach the archive by themselves.

The CLIs are those ``.ci/run`` installs (``npm install --prefix .ci/npm``, pinned versions);
``AGENT_CLIS_BIN`` points the tests at another ``node_modules/.bin`` holding ``claude`` and
``codex``. Without them the tests are skipped, saying why, except under ``CI=true``, where they
fail. Each CLI talks to a fake model server of tests/fakeagents.py; ``gs capture install``
runs as the real ``gs`` program, and nothing after the agent's turn runs gs but its hooks.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GS
from fakeagents import AnthropicServer, ResponsesServer, text

from gitsessions.log.events import Event
from gitsessions.store import GitStore
from gitsessions.transfer.capture import CaptureLog

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(os.environ.get("AGENT_CLIS_BIN") or ROOT / ".ci" / "npm" / "node_modules" / ".bin")
#: Runs a command, then waits for every process it left behind (Codex does not wait for its
#: notify program): they come back here as orphans (Linux's child subreaper), and are waited for.
_REAPER = """
import ctypes, os, subprocess, sys
ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
status = subprocess.call(sys.argv[1:])
while True:
    try:
        os.wait()
    except ChildProcessError:
        break
sys.exit(status)
"""


def _cli(name: str) -> Path:
    path = BIN / name
    if not os.access(path, os.X_OK):
        why = (f"no {name} in {BIN}: .ci/run installs the agent CLIs in .ci/npm (npm install --prefix .ci/npm ...); "
               f"AGENT_CLIS_BIN names another node_modules/.bin holding {name}")
        if os.environ.get("CI") == "true":
            pytest.fail(why)
        pytest.skip(why)
    return path


def _gs_program() -> list[str]:
    """The gs program of this venv (what a user runs), else this Python's -m gitsessions."""
    script = Path(sys.executable).parent / "gs"
    return [str(script)] if script.is_file() else GS


def _gs(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*_gs_program(), *args], capture_output=True, text=True, timeout=120)


def _agent_env(home: Path, **extra: str) -> dict[str, str]:
    """What the agent runs with: a plain environment of this HOME (no GS_REPO: the hook names its repo)."""
    return {"PATH": os.environ["PATH"], "HOME": str(home), "LANG": "C.UTF-8", **extra}


def _source_id(repo: Path, sid: str) -> str:
    """The id the tool gave the conversation session ``sid`` was imported from."""
    with GitStore(repo) as store:
        return store.load(sid).header["source"]["id"]


def _sessions(repo: Path) -> dict[str, list[Event]]:
    """Each session's events, by id."""
    with GitStore(repo) as store:
        return {sid: store.load(sid).events for sid in store.session_ids()}


def _said(events: list[Event], kind: str) -> list[str]:
    return [e.data["content"] for e in events if e.type == kind]


@pytest.fixture
def anthropic():
    with AnthropicServer() as server:
        yield server


@pytest.fixture
def responses():
    with ResponsesServer() as server:
        yield server


def test_a_claude_p_turn_is_in_the_archive_and_the_users_own_hooks_still_run(
        anthropic, isolated_home, tmp_path, repo_path):
    claude = _cli("claude")
    marker = tmp_path / "their-stop-hook-ran"
    settings = isolated_home / ".claude" / "settings.json"
    settings.parent.mkdir()
    theirs = {"permissions": {"deny": ["WebFetch"]},
              "hooks": {"Stop": [{"matcher": "", "hooks": [{"type": "command",
                                                            "command": f"touch {shlex.quote(str(marker))}"}]}],
                        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "true"}]}]}}
    settings.write_text(json.dumps(theirs))
    for _ in range(2):
        done = _gs("capture", "install", "claude-code")
        assert done.returncode == 0, done.stderr
    assert "nothing changed" in done.stdout
    installed = json.loads(settings.read_text())
    assert installed["permissions"] == theirs["permissions"]
    assert installed["hooks"]["PreToolUse"] == theirs["hooks"]["PreToolUse"]
    assert installed["hooks"]["Stop"][0] == theirs["hooks"]["Stop"][0] and len(installed["hooks"]["Stop"]) == 2
    project = tmp_path / "project"
    project.mkdir()
    anthropic.script(text("Hello from the fake model."))
    proc = subprocess.run([str(claude), "-p", "hello"], cwd=project, capture_output=True, text=True, timeout=180,
                          stdin=subprocess.DEVNULL,
                          env=_agent_env(isolated_home, ANTHROPIC_BASE_URL=anthropic.base_url,
                                         ANTHROPIC_API_KEY="test-key", CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
                                         DISABLE_AUTOUPDATER="1"))
    assert proc.returncode == 0 and "Hello from the fake model." in proc.stdout, proc.stderr
    assert marker.exists()  # their Stop hook beside gs's
    sessions = _sessions(repo_path)
    [(sid, events)] = [(sid, ev) for sid, ev in sessions.items() if _said(ev, "user/message") == ["hello"]]
    assert _said(events, "assistant/message") == ["Hello from the fake model."]
    runs = CaptureLog(isolated_home / ".local" / "state" / "gitsessions" / "capture", "claude-code").runs()
    assert [(r.event, r.failed) for r in runs] == [("Stop", False), ("SessionEnd", False)], runs
    assert runs[0].said == f"captured 1 session (1 turn) from claude-code {_source_id(repo_path, sid)}"
    assert json.loads(settings.read_text()) == installed


def test_a_codex_exec_turn_lands_in_the_archive_and_the_notify_it_had_still_runs(
        responses, isolated_home, tmp_path, repo_path):
    if sys.platform != "linux":
        pytest.skip("waiting for Codex's notify program uses Linux's child subreaper")
    codex = _cli("codex")
    ran = tmp_path / "their-notify-ran"
    script = tmp_path / "their-notify.sh"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {shlex.quote(str(ran))}\n')
    script.chmod(0o755)
    config = isolated_home / ".codex" / "config.toml"
    config.parent.mkdir()
    theirs = (f'# my Codex\nmodel = "fake-model"\nmodel_provider = "fake"\nnotify = ["{script}", "ping"]\n\n'
              f'[model_providers.fake]\nname = "fake"\nbase_url = "{responses.base_url}"\nwire_api = "responses"\n'
              'env_key = "FAKE_KEY"\n')
    config.write_text(theirs)
    for _ in range(2):
        done = _gs("capture", "install", "codex")
        assert done.returncode == 0, done.stderr
    assert "nothing changed" in done.stdout
    installed = config.read_text()
    assert installed.startswith("# my Codex\n")
    settings = tomllib.loads(installed)
    assert settings.pop("notify")[-4:] == ["codex", "--", str(script), "ping"]
    assert settings == {k: v for k, v in tomllib.loads(theirs).items() if k != "notify"}
    responses.script(text("Hello from the fake Codex model."))
    project = tmp_path / "project"
    project.mkdir()
    proc = subprocess.run([sys.executable, "-c", _REAPER, str(codex), "exec", "--skip-git-repo-check", "hello codex"],
                          cwd=project, capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
                          env=_agent_env(isolated_home, FAKE_KEY="test-key"))
    assert proc.returncode == 0 and "Hello from the fake Codex model." in proc.stdout, proc.stderr
    word, notice = ran.read_text().splitlines()
    notice = json.loads(notice)
    assert word == "ping" and notice["type"] == "agent-turn-complete"
    sessions = _sessions(repo_path)
    [(sid, events)] = [(sid, ev) for sid, ev in sessions.items() if "hello codex" in _said(ev, "user/message")]
    assert _said(events, "assistant/message")[-1] == "Hello from the fake Codex model."
    [run] = CaptureLog(isolated_home / ".local" / "state" / "gitsessions" / "capture", "codex").runs()
    assert (run.event, run.failed, run.said) == ("agent-turn-complete", False,
                                                 f"captured 1 session (1 turn) from codex {_source_id(repo_path, sid)}")
    assert config.read_text() == installed
