"""``gs chat --tools`` against the strict test server, in-process (the ``gs`` fixture): the
tools offered, the question behind a pipe (the next line answers), the decisions in the log,
the config's ``tools:`` and ``permissions:``, and what a wrong name is told."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import GS
from fakeapi import FakeChatServer, text, tool_calls, validate_messages


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    (root / "notes.md").write_text("one\ntwo\n")
    monkeypatch.chdir(root)
    return root


def _events(gs, sid: str) -> list[dict]:
    return gs("show", sid, "--format", "json").json()["events"]


def test_a_plain_chat_offers_no_tools_and_the_clock_is_opt_in(gs, fake_api: FakeChatServer, work, tmp_path):
    assert gs("chat", "plain", input="hi\n").code == 0
    assert gs("ask", "-S", "plain", "and you?").code == 0
    assert [request.get("tools") for request in fake_api.requests] == [None, None]  # no ``tools`` key at all
    assert gs("ask", "--tools", "time", "-S", "plain", "what time is it?").code == 0
    (tmp_path / "config.yaml").write_text("tools: [time]\n")
    r = gs("chat", "plain", input="and now?\n")
    assert r.code == 0 and r.out.startswith("(tools: get_current_time · it runs without asking · in ")
    assert [[t["function"]["name"] for t in request["tools"]] for request in fake_api.requests[2:]] == [
        ["get_current_time"], ["get_current_time"]]


def test_a_piped_chat_asks_on_the_next_line_and_logs_each_answer(gs, fake_api: FakeChatServer, work, repo_path):
    edit = '{"path": "notes.md", "old_string": "two", "new_string": "2"}'
    fake_api.script(tool_calls(("c1", "edit_file", edit)), text("Edited."),
                    tool_calls(("c2", "write_file", '{"path": "notes.md", "content": "gone"}')), text("Not written."))
    r = gs("chat", "work", "--tools", "read,write", input="edit the notes\ny\nnow overwrite it\nn\n")
    assert r.code == 0, r.err
    assert r.out.startswith("(tools: read_file, list_files, search_files, write_file, edit_file · writes and "
                            "commands ask first · in ")
    assert "⚙ edit_file notes.md\n" in r.out and "  -two\n  +2\n" in r.out  # (a pipe shows no prompt)
    assert (work / "notes.md").read_text() == "one\n2\n"
    [backup] = (repo_path / "gs" / "backups").rglob("notes.md")
    assert backup.read_text() == "one\ntwo\n"
    offered = [t["function"]["name"] for t in fake_api.requests[0]["tools"]]
    assert offered == ["read_file", "list_files", "search_files", "write_file", "edit_file"]  # the clock only if named
    decisions = [e["data"] for e in _events(gs, "work") if e["type"] == "tool/permission"]
    assert [(d["name"], d["answer"], d["by"]) for d in decisions] == [("edit_file", "once", "user"),
                                                                      ("write_file", "deny", "user")]
    lines = [json.loads(line) for line in gs("show", "work", "--format", "jsonl").out.splitlines()[1:]]
    # a record beside the conversation: written ignorable, so a gs that does not know the type skips it
    assert {line.get("ignorable") for line in lines if line["type"] == "tool/permission"} == {True}
    assert not any(line.get("ignorable") for line in lines if line["type"] != "tool/permission")
    shown = gs("show", "work").out.splitlines()
    assert "  (edit_file allowed once)" in shown and "  (write_file denied)" in shown
    last = fake_api.requests[-1]["messages"]
    assert validate_messages(last) is None
    assert "the user denied this write_file call" in last[-1]["content"]


def test_config_tools_and_permissions_preapprove(gs, fake_api: FakeChatServer, work, tmp_path):
    (tmp_path / "config.yaml").write_text("tools: [shell]\npermissions: {allow: [shell]}\n")
    fake_api.script(tool_calls(("c1", "run_command", '{"command": "echo hi > out.txt"}')), text("Done."))
    r = gs("chat", "work", input="run it\n")
    assert r.code == 0, r.err
    assert (work / "out.txt").read_text() == "hi\n" and "allow?" not in r.out
    [decision] = [e["data"] for e in _events(gs, "work") if e["type"] == "tool/permission"]
    assert (decision["answer"], decision["by"]) == ("once", "config")
    tool = [e["data"] for e in _events(gs, "work") if e["type"] == "tool/result"]
    assert json.loads(json.dumps(tool))[0]["content"] == "exit status 0\n"


def test_yes_runs_without_asking_and_end_of_input_denies(gs, fake_api: FakeChatServer, work):
    cmd = tool_calls(("c1", "run_command", '{"command": "touch made"}'))
    fake_api.script(cmd, text("Asked."))
    assert gs("chat", "a", "--tools", "shell", input="make it\n").code == 0  # nothing left to answer with
    assert not (work / "made").exists()
    fake_api.script(tool_calls(("c2", "run_command", '{"command": "touch made"}')), text("Made."))
    assert gs("chat", "b", "--tools", "shell", "--yes", input="make it\n").code == 0
    assert (work / "made").exists()


def test_a_wrong_tool_name_is_a_usage_error_and_a_wrong_config_one_a_refusal(gs, work, tmp_path):
    r = gs("chat", "work", "--tools", "read,net", input="")
    assert r.code == 2 and "no tool or group 'net'; the groups are read, write, shell" in r.err
    (tmp_path / "config.yaml").write_text("tools: [web]\n")
    r = gs("chat", "work", input="")
    assert r.code == 1 and "config.yaml: tools: no tool or group 'web'" in r.err and "Traceback" not in r.err
    (tmp_path / "config.yaml").write_text("permissions: [write]\n")
    r = gs("chat", "work", input="")
    assert r.code == 1 and "permissions must be a mapping" in r.err


def test_a_tool_call_cut_by_a_kill_is_shown_on_resume(gs, fake_api: FakeChatServer, work, gs_env):
    fake_api.script(tool_calls(("c1", "run_command", '{"command": "echo $$ > started; sleep 30"}')))
    proc = subprocess.Popen([*GS, "chat", "demo", "--tools", "shell", "--yes"], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=work)
    try:
        proc.stdin.write(b"run the long one\n")
        proc.stdin.flush()
        for _ in range(400):  # until the command runs
            if (work / "started").exists() and (work / "started").read_text().strip():
                break
            time.sleep(0.05)
        proc.kill()
        proc.wait()
    finally:
        group = (work / "started").read_text().strip() if (work / "started").exists() else ""
        if group:
            os.killpg(int(group), signal.SIGKILL)
    r = gs("chat", "demo", input="")
    assert r.code == 0, r.err
    assert "(recovered an interrupted turn of demo from its journal" in r.out
    assert ('(the tool call run_command({"command": "echo $$ > started; sleep 30"}) was cut while it ran: '
            "whether it took effect is unknown; check before asking for it again)\n") in r.out


def test_ask_runs_tools_with_yes_and_refuses_a_command_without(gs, fake_api: FakeChatServer, work):
    fake_api.script(tool_calls(("c1", "run_command", '{"command": "echo ran"}')), text("Refused."))
    r = gs("ask", "-S", "one", "--tools", "shell", "run it")
    assert r.code == 1 and r.out == "Refused.\n"  # the turn is saved; the exit status says a call was refused
    assert "turn saved (completed)" in r.err
    assert ("gs: run_command refused: gs ask asks no one; pass --yes or set permissions.allow: [run_command] "
            "in the config\n") in r.err
    assert "needs the user's approval and there was no one to ask (the user can pass --yes" in (
        fake_api.requests[1]["messages"][-1]["content"])
    fake_api.script(tool_calls(("c2", "read_file", '{"path": "notes.md"}'),
                               ("c3", "run_command", '{"command": "echo ran"}')), text("Ran."))
    r = gs("ask", "-S", "two", "--tools", "read,shell", "--yes", "read and run")
    assert r.code == 0, r.err
    answers = [m["content"] for m in fake_api.requests[-1]["messages"] if m["role"] == "tool"]
    assert answers == ["one\ntwo\n", "exit status 0\nran\n"]


def test_ask_says_on_stderr_which_write_it_refused_once_per_tool(gs, fake_api: FakeChatServer, work):
    write = '{"path": "made.txt", "content": "x"}'
    fake_api.script(tool_calls(("c1", "write_file", write), ("c2", "write_file", write)), text("Could not write."))
    r = gs("ask", "-S", "one", "--tools", "write", "write it")
    assert r.code == 1 and not (work / "made.txt").exists()
    assert r.err.count("gs: write_file refused: gs ask asks no one; pass --yes or set permissions.allow") == 1
    assert gs("show", "one").code == 0  # saved, whole


def test_retry_takes_tools_and_yes_as_ask_does(gs, fake_api: FakeChatServer, work):
    touch = tool_calls(("c1", "run_command", '{"command": "touch made"}'))
    fake_api.script(text("First."), touch, text("Not allowed."))
    assert gs("ask", "-S", "one", "hello").code == 0
    assert gs("ask", "-S", "one", "--tools", "shell", "make it").code == 1  # no one to ask: refused
    assert not (work / "made").exists()
    fake_api.script(touch, text("Made."))
    r = gs("retry", "one", "--tools", "shell", "--yes")
    assert r.code == 0, r.err
    assert (work / "made").exists() and r.out == "Made.\n"
    assert [t["function"]["name"] for t in fake_api.requests[-2]["tools"]] == ["run_command"]
    assert validate_messages(fake_api.requests[-1]["messages"]) is None
    [decision] = [e["data"] for e in _events(gs, "one-1") if e["type"] == "tool/permission"]
    assert (decision["answer"], decision["by"]) == ("once", "--yes")


def test_a_command_gets_gs_s_environment_without_its_secrets(gs, fake_api: FakeChatServer, work):
    """The variables redaction treats as secret (OPENAI_API_KEY among them) are not the command's."""
    echo = 'echo "[$OPENAI_API_KEY][$GITHUB_TOKEN][$DB_Password][$MY_SECRET_FILE][$PLAIN_SETTING]"'
    fake_api.script(tool_calls(("c1", "run_command", json.dumps({"command": echo}))), text("Ran."))
    env = {"GITHUB_TOKEN": "ghp_" + "x" * 36, "DB_Password": "hunter2hunter2", "MY_SECRET_FILE": "/s",
           "PLAIN_SETTING": "visible"}
    assert gs("ask", "-S", "env", "--tools", "shell", "--yes", "run it", env=env).code == 0
    assert fake_api.requests[1]["messages"][-1]["content"] == "exit status 0\n[][][][][visible]\n"


def test_a_secret_a_tool_read_never_reaches_the_server_the_screen_or_the_repo(gs, fake_api: FakeChatServer, work,
                                                                             repo_path):
    key = "sk-" + "Zq7Xw3Rt9Yp2Lm5Nb8Vc1Kd4" + "Hf6Js0Ga"  # shaped like an OpenAI key; not one
    (work / "settings.py").write_text(f'API_KEY = "{key}"\n')
    fake_api.script(tool_calls(("c1", "search_files", '{"pattern": "API_KEY"}')), text("Found it."))
    r = gs("chat", "work", "--tools", "read", input="where is the key set?\n")
    assert r.code == 0, r.err
    answer = fake_api.requests[1]["messages"][-1]
    assert answer["role"] == "tool" and answer["content"].startswith("settings.py:1: API_KEY = \"[REDACTED:")
    assert key not in r.out and "[REDACTED:" in r.out
    objects = subprocess.run(["git", "-C", str(repo_path), "cat-file", "--batch-all-objects", "--batch"],
                             capture_output=True, check=True).stdout
    assert key.encode() not in objects


def test_allowed_for_this_session_asks_no_more_until_another_session_opens(gs, fake_api: FakeChatServer, work):
    def cmd(n: int):
        return tool_calls((f"c{n}", "run_command", f'{{"command": "echo {n} >> runs"}}'))

    fake_api.script(cmd(1), text("one"), cmd(2), text("two"), cmd(3), text("three"))
    r = gs("chat", "work", "--tools", "shell", input="first\na\nsecond\n/new other\nthird\nn\n")
    assert r.code == 0, r.err
    assert (work / "runs").read_text() == "1\n2\n"  # the third was asked again, in the other session, and refused
    assert r.out.count("⚙ run_command\n") == 2
    def answers(sid: str) -> list[tuple[str, str]]:
        return [(e["data"]["answer"], e["data"]["by"]) for e in _events(gs, sid) if e["type"] == "tool/permission"]

    assert answers("work") == [("session", "user"), ("once", "session")]
    assert answers("other") == [("deny", "user")]
