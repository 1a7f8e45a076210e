"""gs capture: Claude Code's hooks and Codex's notify edited into the user's own files, and the runner they run.

In-process (typer's CliRunner through ``cli.run``) with HOME in ``tmp_path``: the settings
files are real files, the runner imports the real transcripts Claude Code 2.1.197 wrote
(tests/data/claude_code/real) and the Codex rollouts of tests/data/codex into a real repo.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import GS

from gitsessions.store import GitStore
from gitsessions.transfer.capture import CaptureLog

tomllib = pytest.importorskip("tomllib")  # Python 3.11+: a reader other than the writer, as Codex's is

REAL = Path(__file__).parent / "data" / "claude_code" / "real" / "projects" / "-home-user-proj"
#: The session that ran a sub-agent (in its subagents/ folder), and one with none.
WITH_AGENT, PLAIN = "6c9351b7-41e1-40fa-8bcc-3d12c8708f15", "90db39e8-d010-41f7-9e46-35f238abb614"
CODEX_DATA = Path(__file__).parent / "data" / "codex"
THREAD = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"


def _hook_command(repo: Path, tool: str = "claude-code") -> list[str]:
    """What an in-process install records: this Python with -m gitsessions (no gs script ran it)."""
    return [sys.executable, "-m", "gitsessions", "--repo", str(repo), "capture", "run", tool]


def _our_entry(repo: Path) -> dict:
    return {"matcher": "", "hooks": [{"type": "command", "command": shlex.join(_hook_command(repo)), "timeout": 30}]}


@pytest.fixture
def settings(isolated_home: Path) -> Path:
    return isolated_home / ".claude" / "settings.json"


#: A user's settings: keys of their own, a Stop hook of theirs, a PreToolUse matcher, a SessionEnd of theirs.
POPULATED = {
    "model": "opus",
    "permissions": {"allow": ["Bash(git status)"], "deny": []},
    "env": {"FOO": "bär"},
    "hooks": {
        "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "~/bin/check-bash"}]}],
        "Stop": [{"hooks": [{"type": "command", "command": "notify-send done", "timeout": 5}]}],
        "SessionEnd": [{"matcher": "", "hooks": [{"type": "command", "command": "~/bin/bye"}]}],
    },
    "statusLine": {"type": "command", "command": "~/bin/status"},
}


def test_install_into_no_settings_makes_both_hooks_and_twice_changes_nothing(gs, settings, repo_path):
    r = gs("capture", "install", "claude-code")
    assert r.code == 0 and not r.err, r.err
    assert f"installed gs's Stop and SessionEnd hooks in {settings}" in r.out and str(repo_path) in r.out
    assert json.loads(settings.read_text()) == {"hooks": {"Stop": [_our_entry(repo_path)],
                                                          "SessionEnd": [_our_entry(repo_path)]}}
    before = settings.read_bytes()
    r = gs("capture", "install", "claude-code")
    assert r.code == 0 and "nothing changed" in r.out
    assert settings.read_bytes() == before


def test_install_into_populated_settings_keeps_every_other_key_and_hook_and_remove_gives_them_back(
        gs, settings, repo_path):
    settings.parent.mkdir()
    settings.write_text(json.dumps(POPULATED, indent=4, ensure_ascii=False))
    settings.chmod(0o600)
    assert gs("capture", "install", "claude-code").code == 0
    got = json.loads(settings.read_text())
    want = json.loads(json.dumps(POPULATED))
    want["hooks"]["Stop"].append(_our_entry(repo_path))
    want["hooks"]["SessionEnd"].append(_our_entry(repo_path))
    assert got == want and list(got) == list(POPULATED)  # theirs first, in their order
    assert settings.stat().st_mode & 0o777 == 0o600  # their mode, not a new file's
    before = settings.read_bytes()
    assert gs("capture", "install", "claude-code").code == 0
    assert settings.read_bytes() == before
    r = gs("capture", "remove", "claude-code")
    assert r.code == 0 and f"removed gs's capture from {settings}" in r.out, r.err
    assert json.loads(settings.read_text()) == POPULATED
    r = gs("capture", "remove", "claude-code")
    assert r.code == 0 and "nothing to remove" in r.out


def test_remove_takes_out_what_only_gs_made(gs, settings):
    settings.parent.mkdir()
    settings.write_text(json.dumps({"model": "opus"}))
    assert gs("capture", "install", "claude-code").code == 0
    assert gs("capture", "remove", "claude-code").code == 0
    assert json.loads(settings.read_text()) == {"model": "opus"}  # no empty "hooks" left behind


BOM = "\ufeff"


@pytest.mark.parametrize("original", [
    '{"hooks": {}}',  # an empty hooks object of the user's stays
    '{"model": "opus", "hooks": {"Stop": []}}',  # and an empty event list
    json.dumps(POPULATED, indent=4, ensure_ascii=False),  # every other hook untouched
    BOM + '{"model": "opus"}',  # the byte order mark it began with
    BOM + '{"hooks": {"SessionEnd": [], "PreToolUse": []}}',
    "{}",  # a file of the user's, empty: stays
])
def test_install_then_remove_gives_the_settings_back_as_they_were(gs, settings, original):
    """JSON has no comments: the file is written back indented by two, its data and byte order mark as they were."""
    settings.parent.mkdir()
    settings.write_text(original, encoding="utf-8")
    assert gs("capture", "install", "claude-code").code == 0
    installed = settings.read_text(encoding="utf-8")
    assert installed.startswith(BOM) == original.startswith(BOM)
    assert json.loads(installed.removeprefix(BOM))["hooks"]["Stop"][-1]["hooks"][0]["command"].endswith(
        "capture run claude-code")
    r = gs("capture", "remove", "claude-code")
    assert r.code == 0 and "removed gs's capture" in r.out, r.err
    after = settings.read_text(encoding="utf-8")
    assert after.startswith(BOM) == original.startswith(BOM)
    assert json.loads(after.removeprefix(BOM)) == json.loads(original.removeprefix(BOM))


def test_remove_takes_away_the_settings_file_and_folder_gs_made(gs, tmp_path, monkeypatch):
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    assert gs("capture", "install", "claude-code", "--project").code == 0
    assert (project / ".claude" / "settings.json").is_file()
    r = gs("capture", "remove", "claude-code", "--project")
    assert r.code == 0 and "gs had made it, and it is gone" in r.out, r.out
    assert list(project.iterdir()) == []  # no settings.json holding {}, no .claude left
    assert gs("capture", "install", "claude-code", "--project").code == 0  # one the user then adds to stays
    settings = project / ".claude" / "settings.json"
    settings.write_text(json.dumps({**json.loads(settings.read_text()), "model": "opus"}))
    assert gs("capture", "remove", "claude-code", "--project").code == 0
    assert json.loads(settings.read_text()) == {"model": "opus"}


def test_a_hook_another_gs_installed_is_replaced_not_doubled(gs, settings, repo_path):
    other = "/opt/other/bin/gs --repo /srv/old.git capture run claude-code"
    settings.parent.mkdir()
    settings.write_text(json.dumps({"hooks": {"Stop": [{"matcher": "", "hooks": [
        {"type": "command", "command": "echo mine"}, {"type": "command", "command": other}]}]}}))
    r = gs("capture", "install", "claude-code")
    assert r.code == 0 and f"in place of another gs's: {other}" in r.out, r.out
    stop = json.loads(settings.read_text())["hooks"]["Stop"]
    assert stop == [{"matcher": "", "hooks": [{"type": "command", "command": "echo mine"},
                                              {"type": "command", "command": shlex.join(_hook_command(repo_path))}]}]


def test_claude_config_dir_and_project_settings(gs, tmp_path, repo_path, monkeypatch):
    config = tmp_path / "claude-config"
    assert gs("capture", "install", "claude-code", env={"CLAUDE_CONFIG_DIR": str(config)}).code == 0
    assert "Stop" in json.loads((config / "settings.json").read_text())["hooks"]
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    r = gs("capture", "install", "claude-code", "--project")
    assert r.code == 0 and str(project / ".claude" / "settings.json") in r.out
    assert json.loads((project / ".claude" / "settings.json").read_text())["hooks"]["SessionEnd"] == [
        _our_entry(repo_path)]
    status = gs("capture", "status", "--json").json()
    claude = next(row for row in status if row["tool"] == "claude-code")
    assert [p["path"] for p in claude["places"]] == [str(project / ".claude" / "settings.json")]
    r = gs("capture", "install", "codex", "--project")
    assert r.code == 2 and "--project is for claude-code" in r.err


def test_a_symlinked_settings_file_is_written_through_its_link(gs, settings, tmp_path):
    dotfiles = tmp_path / "dotfiles" / "claude-settings.json"
    dotfiles.parent.mkdir()
    dotfiles.write_text('{"model": "opus"}')
    settings.parent.mkdir()
    settings.symlink_to(dotfiles)
    assert gs("capture", "install", "claude-code").code == 0
    assert settings.is_symlink() and json.loads(dotfiles.read_text())["model"] == "opus"
    assert "Stop" in json.loads(dotfiles.read_text())["hooks"]


@pytest.mark.parametrize("text, said", [
    ('{"model": "opus",\n  "hooks": {', "it is not valid JSON (line 2"),
    ('{"hooks": []}', '"hooks" is no JSON object'),
    ('{"hooks": {"Stop": {"command": "x"}}}', '"hooks"."Stop" is no JSON array'),
    ('["a"]', "it holds no JSON object"),
])
def test_settings_that_are_not_claude_codes_json_are_refused_and_never_overwritten(gs, settings, text, said):
    settings.parent.mkdir()
    settings.write_text(text)
    for command in ("install", "remove"):
        r = gs("capture", command, "claude-code")
        assert r.code == 1 and not r.out, r.out
        assert r.err.count("\n") == 1 and "Traceback" not in r.err
        assert f"cannot change {settings}: {said}" in r.err and "it was left as it is" in r.err, r.err
        assert settings.read_text() == text
    assert sorted(p.name for p in settings.parent.iterdir()) == ["settings.json"]  # no copy left behind
    r = gs("capture", "status")
    assert r.code == 0 and f"warning: {settings} cannot be read: {said}" in r.out, r.out


# -- Codex ------------------------------------------------------------------------------------

CODEX_CONFIG = """\
# my Codex settings
model = "gpt-5"   # the default
approval_policy = "on-request"

[model_providers.local]
name = "local"
base_url = "http://127.0.0.1:9/v1"
"""


def _codex_home(home: Path) -> Path:
    return home / ".codex"


def test_codex_without_notify_gets_ours_and_remove_gives_the_file_back_byte_for_byte(gs, isolated_home, repo_path):
    config = _codex_home(isolated_home) / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_CONFIG)
    r = gs("capture", "install", "codex")
    assert r.code == 0 and f"installed gs as Codex's notify program in {config}" in r.out, r.err
    text = config.read_text()
    assert text.startswith("# my Codex settings\n") and '"gpt-5"   # the default' in text
    got = tomllib.loads(text)
    assert got["notify"] == _hook_command(repo_path, "codex")
    assert got["model_providers"] == {"local": {"name": "local", "base_url": "http://127.0.0.1:9/v1"}}
    assert gs("capture", "install", "codex").code == 0 and config.read_text() == text
    r = gs("capture", "remove", "codex")
    assert r.code == 0 and config.read_text() == CODEX_CONFIG


def test_codex_with_no_config_gets_one(gs, isolated_home, repo_path):
    assert gs("capture", "install", "codex", env={"CODEX_HOME": str(isolated_home / "elsewhere")}).code == 0
    assert tomllib.loads((isolated_home / "elsewhere" / "config.toml").read_text()) == {
        "notify": _hook_command(repo_path, "codex")}


@pytest.mark.parametrize("original", [
    '# top\nmodel = "gpt-5"\nnotify = [\n  \'my-notifier\',   # the program\n  "--title", "Codex",\n]  # ping me\n\n'
    '[tui]\nnotifications = true\n',  # a notify of its own layout, comments and quotes
    'model = "x"\nnotify = ["a"]',  # the last line, with no end
    '  notify  =  [ "a" ]   # indented\nmodel = 1\n',
    BOM + 'notify = ["a"]\n',
    'model = 1\n[t]\nk = 1',  # no notify, a table, no end of line
    "# just a comment\n",
    "",
])
def test_install_then_remove_gives_codexs_config_back_byte_for_byte(gs, isolated_home, repo_path, original):
    config = _codex_home(isolated_home) / "config.toml"
    config.parent.mkdir()
    config.write_bytes(original.encode())
    before = tomllib.loads(original.removeprefix(BOM)).get("notify")
    r = gs("capture", "install", "codex")
    assert r.code == 0, r.err
    installed = config.read_text(encoding="utf-8")
    assert installed.startswith(BOM) == original.startswith(BOM)
    settings = tomllib.loads(installed.removeprefix(BOM))
    assert settings.pop("notify") == [*_hook_command(repo_path, "codex"), *(["--", *before] if before else [])]
    assert settings == {k: v for k, v in tomllib.loads(original.removeprefix(BOM)).items() if k != "notify"}
    assert gs("capture", "install", "codex").code == 0 and config.read_text(encoding="utf-8") == installed
    assert gs("capture", "remove", "codex").code == 0
    assert config.read_bytes() == original.encode()
    assert gs("capture", "install", "codex").code == 0  # the note taken out: the program it chains comes back
    config.write_text("".join(line for line in config.read_text(encoding="utf-8").splitlines(keepends=True)
                              if not line.startswith("# gs capture")), encoding="utf-8")
    assert gs("capture", "remove", "codex").code == 0
    assert tomllib.loads(config.read_text(encoding="utf-8").removeprefix(BOM)).get("notify") == before


def test_remove_takes_away_the_codex_config_gs_made(gs, isolated_home):
    home = isolated_home / "elsewhere"
    assert gs("capture", "install", "codex", env={"CODEX_HOME": str(home)}).code == 0
    r = gs("capture", "remove", "codex", env={"CODEX_HOME": str(home)})
    assert r.code == 0 and "gs had made it, and it is gone" in r.out, r.out
    assert not home.exists()


def _previous_program(tmp_path: Path) -> tuple[Path, Path]:
    """A notify program of the user's: writes its arguments, one a line, to a file."""
    out = tmp_path / "previous-ran.txt"
    script = tmp_path / "ping.sh"
    script.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {shlex.quote(str(out))}\n')
    script.chmod(0o755)
    return script, out


def _rollouts(home: Path) -> Path:
    sessions = _codex_home(home) / "sessions" / "2025" / "10" / "06"
    sessions.mkdir(parents=True)
    shutil.copy(CODEX_DATA / f"rollout-2025-10-06T09-00-00-{THREAD}.jsonl", sessions)
    return sessions


def _notice(thread: str = THREAD, kind: str = "agent-turn-complete") -> str:
    return json.dumps({"type": kind, "thread-id": thread, "turn-id": "t-1", "cwd": "/home/user/proj",
                       "input-messages": ["List the files"], "last-assistant-message": "Done."})


def test_an_existing_notify_is_chained_run_with_the_notice_after_the_import_and_put_back(
        gs, isolated_home, tmp_path, repo_path):
    script, out = _previous_program(tmp_path)
    config = _codex_home(isolated_home) / "config.toml"
    config.parent.mkdir()
    mine = CODEX_CONFIG.replace("approval_policy", f'notify = ["{script}", "--title", "Codex"]  # ping me\n'
                                                   "approval_policy")
    config.write_text(mine)
    r = gs("capture", "install", "codex")
    assert r.code == 0 and f"as before: {script} --title Codex" in r.out, r.out
    text = config.read_text()
    notify = tomllib.loads(text)["notify"]
    assert notify == [*_hook_command(repo_path, "codex"), "--", str(script), "--title", "Codex"]
    assert "# ping me" in text
    assert gs("capture", "install", "codex").code == 0 and config.read_text() == text
    _rollouts(isolated_home)
    r = gs(*notify[3:], _notice())  # what Codex runs, this Python's -m gitsessions aside
    assert (r.code, r.out, r.err) == (0, "", "")
    assert out.read_text().splitlines() == ["--title", "Codex", _notice()]
    with GitStore(repo_path) as store:
        assert [sid for sid in store.session_ids() if sid.startswith("list-the-files")]
    status = gs("capture", "status", "--json").json()
    row = next(row for row in status if row["tool"] == "codex")
    assert row["installed"] and row["places"][0]["chained"] == f"{script} --title Codex"
    assert row["last_run"]["said"].startswith("captured 1 session (3 turns)") and not row["last_run"]["failed"]
    r = gs("capture", "remove", "codex")
    assert r.code == 0 and f"notify is again: {script} --title Codex" in r.out
    assert config.read_text() == mine


def test_a_chained_program_that_fails_is_logged_and_the_exit_is_still_0(gs, isolated_home, repo_path):
    _rollouts(isolated_home)
    r = gs("--repo", str(repo_path), "capture", "run", "codex", "--", "/no/such/notifier", _notice())
    assert (r.code, r.out, r.err) == (0, "", "")
    last = CaptureLog(isolated_home / ".local" / "state" / "gitsessions" / "capture", "codex").runs()[-1]
    assert last.failed and last.said.startswith("captured 1 session") and "/no/such/notifier" in last.said


@pytest.mark.parametrize("text, said", [
    ('notify = ["a"\nmodel = 1\n', "it is not valid TOML"),
    ('notify = "my-notifier"\n', "its notify is no list of strings"),
])
def test_a_config_that_is_not_codexs_toml_is_refused_and_never_overwritten(gs, isolated_home, text, said):
    config = _codex_home(isolated_home) / "config.toml"
    config.parent.mkdir()
    config.write_text(text)
    for command in ("install", "remove"):
        r = gs("capture", command, "codex")
        assert r.code == 1 and r.err.count("\n") == 1 and f"cannot change {config}: {said}" in r.err, r.err
        assert config.read_text() == text


def test_the_codex_runner_imports_the_threads_rollout_and_says_what_it_could_not(gs, isolated_home, repo_path):
    _rollouts(isolated_home)
    log = CaptureLog(isolated_home / ".local" / "state" / "gitsessions" / "capture", "codex")
    run = ("--repo", str(repo_path), "capture", "run", "codex")
    assert gs(*run, _notice()).code == 0
    assert gs(*run, _notice()).code == 0
    assert gs(*run, _notice(kind="approval-requested")).code == 0
    assert gs(*run, _notice(thread="0199ffff-0000-7000-8000-000000000000")).code == 0
    assert gs(*run, _notice(thread="../../etc")).code == 0
    assert gs(*run, "not json").code == 0
    said = [(r.event, r.failed, r.said) for r in log.runs()]
    assert said[0] == ("agent-turn-complete", False, f"captured 1 session (3 turns) from codex {THREAD}")
    assert said[1] == ("agent-turn-complete", False, f"nothing new in rollout-2025-10-06T09-00-00-{THREAD}.jsonl")
    assert said[2] == ("approval-requested", False,
                       "no turn in a notice of type approval-requested: nothing to capture")
    assert said[3][1] and "no rollout-*-0199ffff-0000-7000-8000-000000000000.jsonl under" in said[3][2]
    assert said[4][1] and "thread-id is missing or no thread id" in said[4][2]
    assert said[5] == ("-", True, "cannot import Codex's notice: it is no JSON object; nothing was written")
    held = log.path.read_text().lower()
    assert "list the files" not in held and "list-the-files" not in held  # no prompt's words, nor an id made of them


# -- the Claude Code runner -----------------------------------------------------------------------


@pytest.fixture
def projects(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A CLAUDE_CONFIG_DIR holding the transcripts Claude Code 2.1.197 wrote (one with a sub-agent)."""
    config = tmp_path / "claude"
    shutil.copytree(REAL, config / "projects" / REAL.name)
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))
    return config / "projects" / REAL.name


def _hook_json(transcript: Path, event: str = "Stop", session: str = WITH_AGENT) -> str:
    return json.dumps({"session_id": session, "transcript_path": str(transcript), "cwd": "/home/user/proj",
                       "permission_mode": "default", "hook_event_name": event, "stop_hook_active": False})


def _claude_log(home: Path) -> CaptureLog:
    return CaptureLog(home / ".local" / "state" / "gitsessions" / "capture", "claude-code")


def _ids(repo: Path) -> list[str]:
    with GitStore(repo) as store:
        return sorted(store.session_ids())


def test_the_runner_imports_the_transcript_and_its_sub_agents_quietly(gs, projects, isolated_home, repo_path):
    assert gs("capture", "install", "claude-code").code == 0
    command = json.loads((projects.parent.parent / "settings.json").read_text())["hooks"]["Stop"][0]["hooks"][0]
    words = shlex.split(command["command"])
    r = gs(*words[3:], input=_hook_json(projects / f"{WITH_AGENT}.jsonl"))  # what the hook runs, less the Python
    assert (r.code, r.out, r.err) == (0, "", "")
    ids = _ids(repo_path)
    assert [i for i in ids if i.startswith("please-use-an-agent-to-count-files-")]
    assert [i for i in ids if i.startswith("sub-agent-count-files-")]
    r = gs(*words[3:], input=_hook_json(projects / f"{WITH_AGENT}.jsonl", "SessionEnd"))
    assert (r.code, r.out, r.err) == (0, "", "")
    runs = _claude_log(isolated_home).runs()
    assert [(r.event, r.failed) for r in runs] == [("Stop", False), ("SessionEnd", False)]
    assert runs[0].said == (f"captured 2 sessions (2 turns) from claude-code {WITH_AGENT}, "
                            f"claude-code {WITH_AGENT}/agent-afa859268ef01e89e")
    assert runs[1].said.startswith(f"nothing new in {WITH_AGENT}.jsonl")
    r = gs("capture", "status")
    assert r.code == 0 and "claude-code: installed in" in r.out and "(Stop, SessionEnd)" in r.out
    assert "last capture" in r.out and f"from claude-code {WITH_AGENT}" in r.out
    held = _claude_log(isolated_home).path.read_text()
    assert not [sid for sid in ids if sid in held] and "count files" not in held.lower()


def test_a_transcript_that_is_not_there_is_logged_and_the_exit_is_0(gs, projects, isolated_home, repo_path):
    missing = projects / "no-such-session.jsonl"
    r = gs("--repo", str(repo_path), "capture", "run", "claude-code", input=_hook_json(missing))
    assert (r.code, r.out, r.err) == (0, "", "")
    last = _claude_log(isolated_home).runs()[-1]
    assert last.failed and "no-such-session.jsonl" in last.said and "file not found" in last.said, last
    status = gs("capture", "status")
    assert "FAILED: " in status.out and "no-such-session.jsonl" in status.out
    assert gs("capture", "status", "--json").json()[0]["last_run"]["failed"] is True


@pytest.mark.parametrize("stdin", ["", "{not json", '{"session_id": "x"}', "[1, 2]"])
def test_a_notice_that_names_no_transcript_is_logged(gs, isolated_home, repo_path, stdin):
    r = gs("--repo", str(repo_path), "capture", "run", "claude-code", input=stdin)
    assert (r.code, r.out, r.err) == (0, "", "")
    last = _claude_log(isolated_home).runs()[-1]
    assert last.failed and last.said.startswith("cannot import Claude Code's hook notice: "), last
    assert not repo_path.exists()


def test_a_held_import_lock_is_given_up_on_logged_and_the_next_run_imports(gs, projects, isolated_home, repo_path):
    run = ("--repo", str(repo_path), "capture", "run", "claude-code", "--wait=0")
    assert gs(*run, input=_hook_json(projects / f"{PLAIN}.jsonl", session=PLAIN)).code == 0  # the repo is made
    before = _ids(repo_path)
    with GitStore(repo_path) as store:
        lock = store.import_lock()
        lock.acquire()
        try:
            r = gs(*run, input=_hook_json(projects / f"{WITH_AGENT}.jsonl"))
        finally:
            lock.release()
    assert (r.code, r.out, r.err) == (0, "", "")
    assert _ids(repo_path) == before
    last = _claude_log(isolated_home).runs()[-1]
    assert last.failed and "another import" in last.said and "still runs after 0 s" in last.said, last
    assert gs(*run, input=_hook_json(projects / f"{WITH_AGENT}.jsonl")).code == 0
    assert len(_ids(repo_path)) == len(before) + 2


def test_the_hook_as_claude_code_runs_it_a_process_anywhere_writes_the_installed_repo(
        gs, projects, tmp_path, repo_path):
    assert gs("capture", "install", "claude-code").code == 0
    hook = json.loads((projects.parent.parent / "settings.json").read_text())["hooks"]["Stop"][0]["hooks"][0]
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("GS_REPO", "GS_CONFIG")}
    proc = subprocess.run(hook["command"], shell=True, cwd=elsewhere, env=env, capture_output=True,
                          input=_hook_json(projects / f"{PLAIN}.jsonl", session=PLAIN).encode(), timeout=120)
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, b"", b"")
    assert [i for i in _ids(repo_path) if i.startswith("please-run-echo-hi-")]


def test_the_runner_on_a_terminal_does_not_wait_for_a_notice(isolated_home, repo_path):
    pexpect = pytest.importorskip("pexpect")
    child = pexpect.spawn(GS[0], [*GS[1:], "--repo", str(repo_path), "capture", "run", "claude-code"],
                          env=dict(os.environ), timeout=60)
    child.expect(pexpect.EOF)
    child.close()
    assert child.exitstatus == 0 and child.before == b""
    assert "stdin is a terminal" in _claude_log(isolated_home).runs()[-1].said


def test_status_says_nothing_is_installed_yet(gs):
    r = gs("capture", "status")
    assert r.code == 0
    assert "claude-code: not installed (gs capture install claude-code)" in r.out
    assert "codex: not installed (gs capture install codex)" in r.out
    rows = gs("capture", "status", "--json").json()
    assert [(row["tool"], row["installed"], row["last_run"]) for row in rows] == [
        ("claude-code", False, None), ("codex", False, None)]


def test_the_log_keeps_its_newer_half_past_its_limit(tmp_path, monkeypatch):
    log = CaptureLog(tmp_path, "claude-code")
    monkeypatch.setattr(CaptureLog, "LIMIT", 2000)
    for n in range(200):
        log.append("Stop", f"captured run {n}\nsecond line", failed=n % 2 == 1, now=1_800_000_000 + n)
    runs = log.runs()
    assert log.path.stat().st_size <= 2000 + 100 and len(runs) < 200
    assert runs[-1].said == "captured run 199 second line" and runs[-1].failed
    assert [int(r.said.split()[2]) for r in runs] == list(range(200 - len(runs), 200))
    assert runs[-1].time == "2027-01-15T08:03:19+00:00"


def test_a_session_another_gs_writes_is_logged_by_its_conversation_not_its_id(gs, projects, isolated_home, repo_path,
                                                                              tmp_path):
    """gs's session ids are made of the first prompt's words: the log, outside the repo, names the source's."""
    sid = gs("--repo", str(tmp_path / "other.git"), "import", str(projects / f"{PLAIN}.jsonl")).out.strip()
    run = ("--repo", str(repo_path), "capture", "run", "claude-code")
    assert gs(*run, input=_hook_json(projects / f"{WITH_AGENT}.jsonl")).code == 0
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys; from gitsessions.store import GitStore; "
         f"lock = GitStore(sys.argv[1]).lock({sid!r}); assert lock.try_acquire(); print('held', flush=True); "
         "sys.stdin.read()", str(repo_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        r = gs(*run, input=_hook_json(projects / f"{PLAIN}.jsonl", session=PLAIN))
    finally:
        holder.communicate("")
    assert (r.code, r.out, r.err) == (0, "", "")
    last = _claude_log(isolated_home).runs()[-1]
    assert last.failed and last.said.startswith(f"not imported claude-code conversation {PLAIN}: "), last
    assert sid not in _claude_log(isolated_home).path.read_text()
    status = gs("capture", "status")
    assert "FAILED: not imported claude-code conversation" in status.out and sid not in status.out


def test_a_warning_of_the_import_goes_to_the_log_not_to_the_tool(gs, projects, isolated_home, repo_path):
    run = ("--repo", str(repo_path), "capture", "run", "claude-code")
    assert gs(*run, input=_hook_json(projects / f"{PLAIN}.jsonl", session=PLAIN)).code == 0
    hook = repo_path / "hooks" / "post-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text("#!/bin/sh\necho no backup today >&2\nexit 3\n")
    hook.chmod(0o755)
    r = gs(*run, input=_hook_json(projects / f"{WITH_AGENT}.jsonl"))
    assert (r.code, r.out, r.err) == (0, "", "")
    last = _claude_log(isolated_home).runs()[-1]
    assert not last.failed and last.said.startswith("captured 2 sessions") and "warning: " in last.said, last
    assert "post-commit" in last.said and f"(claude-code {WITH_AGENT} at " in last.said, last  # the session's source
    held = _claude_log(isolated_home).path.read_text()
    assert not [sid for sid in _ids(repo_path) if sid in held]
