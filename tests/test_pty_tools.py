"""A tool's approval in a real pseudo-terminal (pexpect): the diff, the question, allow once,
then deny; the file as the answers left it, and the decisions in the log."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pexpect
from conftest import GS
from fakeapi import FakeChatServer, text, tool_calls
from test_pty import PROMPT, TIMEOUT, chat_env, finish  # noqa: F401 (chat_env: a fixture)
from test_tools import running


def test_an_approval_allowed_once_then_denied(fake_api: FakeChatServer, chat_env, tmp_path: Path, repo_path):  # noqa: F811
    work = tmp_path / "work"
    work.mkdir()
    (work / "notes.md").write_text("one\ntwo\n")
    fake_api.script(
        tool_calls(("c1", "edit_file", '{"path": "notes.md", "old_string": "two", "new_string": "2"}'),
                   content="I will edit it."),
        text("Edited."),
        tool_calls(("c2", "write_file", '{"path": "notes.md", "content": "gone\\n"}')),
        text("Left as it was."),
    )
    child = pexpect.spawn(GS[0], [*GS[1:], "chat", "demo", "--tools", "write"], env=chat_env, cwd=str(work),
                          dimensions=(24, 100), encoding="utf-8", codec_errors="replace", timeout=TIMEOUT)
    try:
        child.expect_exact("writes and commands ask first")
        child.expect(PROMPT)
        child.sendline("fix the notes")
        child.expect_exact("I will edit it.")
        child.expect_exact("⚙ edit_file notes.md")
        child.expect_exact("+2")
        child.expect_exact("allow? [y] once")
        child.sendline("y")
        child.expect(r"edit_file\(.*\) → wrote notes.md")
        child.expect_exact("Edited.")
        child.expect(PROMPT)
        assert (work / "notes.md").read_text() == "one\n2\n"
        child.sendline("now overwrite it")
        child.expect_exact("⚙ write_file notes.md")
        child.expect_exact("allow? [y] once")
        child.sendline("n")
        child.expect_exact("✗ write_file(")  # the refusal, in red (cut to the line)
        child.expect_exact("Left as it was.")
        child.expect(PROMPT)
        child.sendline("/exit")
        finish(child)
    finally:
        child.close(force=True)
    assert (work / "notes.md").read_text() == "one\n2\n"
    log = subprocess.run(["git", "-C", str(repo_path), "show", "demo:session.jsonl"], capture_output=True,
                         text=True, check=True).stdout
    decisions = [json.loads(line)["data"] for line in log.splitlines() if '"tool/permission"' in line]
    assert [(d["name"], d["answer"], d["by"]) for d in decisions] == [("edit_file", "once", "user"),
                                                                      ("write_file", "deny", "user")]


def test_ctrl_c_stops_a_command_that_runs_and_the_chat_goes_on(fake_api: FakeChatServer, chat_env,  # noqa: F811
                                                                tmp_path: Path, repo_path):
    work = tmp_path / "work"
    work.mkdir()
    command = "setsid sleep 60 & echo $! > child; echo $$ > started; sleep 60; touch finished"
    fake_api.script(tool_calls(("c1", "run_command", json.dumps({"command": command}))))
    child = pexpect.spawn(GS[0], [*GS[1:], "chat", "demo", "--tools", "shell", "--yes"], env=chat_env,
                          cwd=str(work), dimensions=(24, 100), encoding="utf-8", codec_errors="replace",
                          timeout=TIMEOUT)
    try:
        child.expect(PROMPT)
        child.sendline("run the long one")
        for _ in range(200):  # until the command runs
            if (work / "started").exists() and (work / "started").read_text().strip():
                break
            time.sleep(0.05)
        child.sendcontrol("c")
        child.expect_exact("(reply cancelled)")
        child.expect(PROMPT)  # long before the command's 60 s
        child.sendline("/exit")
        finish(child)
    finally:
        child.close(force=True)
    assert not (work / "finished").exists()
    log = subprocess.run(["git", "-C", str(repo_path), "show", "demo:session.jsonl"], capture_output=True,
                         text=True, check=True).stdout
    [result] = [json.loads(line)["data"] for line in log.splitlines() if '"tool/result"' in line]
    assert result["error_code"] == "stopped" and result["content"].startswith("error: stopped by the user (Ctrl+C)")
    assert "processes killed: sh, " in result["content"]
    assert not running(int((work / "started").read_text()))  # stopped with its group
    assert not running(int((work / "child").read_text()))  # and the child that left it
