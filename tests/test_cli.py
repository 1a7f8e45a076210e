"""End to end: real ``gs`` processes, a real HTTP server speaking the chat-completions
stream, and the real ``git`` CLI reading what gs wrote."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest
from fakeapi import drop, error, text, tool_calls, validate_messages


def test_two_asks_make_two_commits_plain_git_reads(gs, git, fake_api):
    r1 = gs("ask", "-S", "work", "hello one")
    assert r1.code == 0, r1.err
    assert r1.out.strip() == "echo: hello one"
    r2 = gs("ask", "-S", "work", "hello two")
    assert r2.code == 0, r2.err

    subjects = git("log", "--format=%s", "work").splitlines()
    assert subjects == ["turn 2: hello two", "turn 1: hello one"]
    lines = git("show", "work:session.jsonl").splitlines()
    header, events = json.loads(lines[0]), [json.loads(x) for x in lines[1:]]
    assert header["type"] == "session" and header["version"] == 1
    assert [e["seq"] for e in events] == list(range(len(events)))
    git("fsck", "--strict")
    assert git("cat-file", "-t", "work") == "commit\n"

    log = gs("log", "work", "--json").json()
    assert len(log) == 2
    assert [e["turn"] for e in log] == [2, 1]
    assert log[0]["parents"] == [log[1]["commit"]]
    assert set(log[0]) >= {"commit", "parents", "time", "turn", "subject"}
    assert log[0]["time"].startswith("20") and "T" in log[0]["time"]

    shown = gs("show", "work", "--format", "json").json()
    assert [m["role"] for m in shown["messages"]] == ["user", "assistant", "user", "assistant"]
    assert shown["id"] == "work" and shown["commit"] == log[0]["commit"]
    assert shown["header"] == header and len(shown["events"]) == len(events)

    # the second request carried the first turn (the model saw the history)
    assert [m["content"] for m in fake_api.requests[1]["messages"]] == [
        "hello one", "echo: hello one", "hello two"]


def test_trailers_and_reflog(gs, git):
    assert gs("ask", "-S", "work", "first line\nsecond line").code == 0
    body = git("log", "-1", "--format=%B", "work")
    assert body.startswith("turn 1: first line\n")
    for trailer in ("Session: work", "Turn: 1", "Model: gpt-4o-mini", "Events: 0-5"):
        assert trailer in body
    assert "commit (initial): turn 1: first line" in git("reflog", "show", "work")


def test_show_jsonl_is_the_file_byte_for_byte(gs, repo_path):
    gs("ask", "-S", "work", "héllo ✓ 😀 \"quoted\"")
    shown = subprocess.run([sys.executable, "-m", "gitsessions", "show", "work", "--format", "jsonl"],
                           capture_output=True).stdout
    raw = subprocess.run(["git", "-C", str(repo_path), "show", "work:session.jsonl"],
                         capture_output=True).stdout
    assert shown == raw and "😀".encode() in raw


def test_tool_calls_end_to_end(gs, fake_api):
    fake_api.script(
        tool_calls(("call_a", "get_current_time", "{}"),
                   ("call_b", "get_current_time", '{"timezone": "Asia/Tokyo"}')),
        text("Both times fetched."),
    )
    r = gs("ask", "--tools", "time", "-S", "t", "what time is it?")
    assert r.code == 0, r.err
    assert r.out.strip() == "Both times fetched."
    second = fake_api.requests[1]["messages"]
    assert validate_messages(second) is None
    tool_msgs = [m for m in second if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_msgs] == ["call_a", "call_b"]
    assert "+09:00" in tool_msgs[1]["content"]
    assert fake_api.requests[0]["tools"][0]["function"]["name"] == "get_current_time"
    shown = gs("show", "t", "--format", "json").json()
    assert [m["role"] for m in shown["messages"]] == ["user", "assistant", "tool", "tool", "assistant"]
    usage = [e["data"]["usage"] for e in shown["events"] if e["type"] == "assistant/message"]
    assert all(u and u["total_tokens"] > 0 for u in usage)


def test_max_steps_bounds_a_tool_loop(gs, fake_api, tmp_path):
    (tmp_path / "config.yaml").write_text("max_steps: 3\ntools: [time]\n")
    fake_api.script(*[tool_calls(("get_current_time", "{}")) for _ in range(5)])
    r = gs("ask", "-S", "loop", "loop forever")
    assert r.code == 1
    assert len(fake_api.requests) == 3
    events = gs("show", "loop", "--format", "json").json()["events"]
    assert events[-1]["type"] == "turn/end" and events[-1]["data"]["reason"] == "max-steps"


def test_api_errors_are_one_line_and_keep_the_prompt(gs, fake_api):
    fake_api.script(error(401, "Incorrect API key provided"))
    r = gs("ask", "-S", "e", "first try")
    assert r.code == 1
    assert "401" in r.err and "Incorrect API key provided" in r.err
    assert "Traceback" not in r.err and len(r.err.strip().splitlines()) <= 2
    # the SDK retries a 5xx twice before giving up
    fake_api.script(*[error(500, "upstream exploded") for _ in range(3)])
    r = gs("ask", "-S", "e", "second try")
    assert r.code == 1 and "500" in r.err
    fake_api.script(drop("partial ans"))
    r = gs("ask", "-S", "e", "third try")
    assert r.code == 1 and "connection" in r.err.lower()
    assert "Traceback" not in r.err
    r = gs("ask", "-S", "e", "fourth try")
    assert r.code == 0, r.err
    last = fake_api.requests[-1]["messages"]
    assert validate_messages(last) is None
    contents = [m["content"] for m in last]
    assert contents[:3] == ["first try", "second try", "third try"]
    assert "partial ans" in contents  # text that arrived before the drop is kept
    events = gs("show", "e", "--format", "json").json()["events"]
    reasons = [e["data"]["reason"] for e in events if e["type"] == "turn/end"]
    assert reasons == ["error", "error", "error", "completed"]
    errors = [e["data"].get("error", "") for e in events if e["type"] == "turn/end"][:3]
    assert all(errors)


def test_error_mid_tool_loop_leaves_a_valid_transcript(gs, fake_api):
    fake_api.script(tool_calls(("get_current_time", "{}"), ("get_current_time", "{}")),
                    *[error(503, "overloaded") for _ in range(3)])
    assert gs("ask", "--tools", "time", "-S", "m", "time please").code == 1
    assert gs("ask", "-S", "m", "again").code == 0
    assert validate_messages(fake_api.requests[-1]["messages"]) is None


def test_connection_refused_is_one_line(gs):
    r = gs("ask", "-S", "x", "hi", env={"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    assert r.code == 1
    assert "127.0.0.1:9" in r.err and "Traceback" not in r.err
    # the prompt is still saved
    shown = gs("show", "x", "--format", "json").json()
    assert shown["messages"] == [{"role": "user", "content": "hi"}]


def test_chat_reads_prompts_from_a_pipe(gs_proc, git):
    # a real process: its stdin is a real pipe, read line by line
    r = gs_proc("chat", "work", input="q1\n/sessions\nq2\n")
    assert r.code == 0, r.err
    assert "echo: q1" in r.out and "echo: q2" in r.out
    assert "* work" in r.out
    assert git("log", "--format=%s", "work").splitlines() == ["turn 2: q2", "turn 1: q1"]
    assert "gs chat work" in r.err


def test_chat_without_session_makes_an_8_hex_id(gs):
    r = gs("chat", input="hello\n")
    assert r.code == 0, r.err
    rows = gs("list", "--json").json()
    assert len(rows) == 1
    sid = rows[0]["id"]
    assert len(sid) == 8 and int(sid, 16) >= 0
    assert f"gs chat {sid}" in r.err


def test_chat_slash_commands(gs):
    script = ("in default\n/new other\nin other\n/open nosuch\n/open work\n/sessions\n/save\n/bogus\n"
              "/help\n/exit\nnever sent\n")
    r = gs("chat", "work", input=script)
    assert r.code == 0, r.err
    assert "no session 'nosuch'" in r.out
    assert "* work" in r.out and "  other" in r.out
    [other] = [line for line in r.out.splitlines() if line.startswith("  other ")]
    assert re.search(r"  2 messages  \d+ seconds? ago +in other$", other), other  # as gs list says when
    assert "saved: work" in r.out
    assert "unknown command /bogus" in r.out
    assert "/open <rev>" in r.out
    assert "never sent" not in r.out
    ids = {row["id"]: row for row in gs("list", "--json").json()}
    assert set(ids) == {"work", "other"}
    assert ids["other"]["title"] == "in other"


def test_continue_resumes_latest(gs, fake_api):
    gs("ask", "-S", "a", "one")
    time.sleep(1.1)  # commit times have one-second resolution
    gs("ask", "-S", "b", "two")
    r = gs("chat", "-c", input="three\n")
    assert r.code == 0, r.err
    assert [m["content"] for m in fake_api.requests[-1]["messages"]] == ["two", "echo: two", "three"]


def test_stdin_that_is_no_utf8_text_is_refused_as_an_attachment_is(gs, gs_proc, fake_api, tmp_path):
    """One rule for a prompt's bytes: piped into gs ask, piped into gs chat, attached."""
    bad = b"from stdin \xff\xfe end\n"
    # a real process: its stdin is a real pipe holding undecodable bytes
    r = gs_proc("ask", "-S", "s", "-", input=bad)
    assert r.code == 1 and r.err.startswith("gs: cannot read stdin: it is not UTF-8 text (byte 11 is not); "
                                            "convert it first"), r.err
    (tmp_path / "bad.txt").write_bytes(bad)
    r = gs("ask", "-a", str(tmp_path / "bad.txt"), "read it")
    assert r.code == 1 and f"attachment {tmp_path / 'bad.txt'}: it is not UTF-8 text (byte 11 is not)" in r.err
    r = gs("ask", "s", input=b"a\0b")
    assert r.code == 1 and "cannot read stdin: it is binary data (byte 1 is NUL)" in r.err, r.err
    assert gs("list", "--json").json() == [] and not fake_api.requests  # nothing sent, nothing saved
    r = gs_proc("chat", "c", input=b"first line\n" + bad + b"never read\n")
    assert r.code == 1 and "cannot read stdin: it is not UTF-8 text (byte 22 is not)" in r.err, r.err
    sent = [m["content"] for m in fake_api.requests[-1]["messages"]]
    assert sent == ["first line"]  # the prompt before it is saved and answered
    assert gs("show", "c", "--format", "json").json()["messages"][0]["content"] == "first line"


def test_list_rows(gs):
    gs("ask", "-S", "alpha", "Title of alpha\nmore")
    gs("ask", "-S", "alpha", "second")
    time.sleep(1.1)  # commit times have one-second resolution
    gs("ask", "-S", "beta", "beta prompt")
    rows = gs("list", "--json").json()
    assert [r["id"] for r in rows] == ["beta", "alpha"]  # newest first
    alpha = rows[1]
    assert alpha["title"] == "Title of alpha" and alpha["turns"] == 2 and alpha["messages"] == 4
    assert len(alpha["commit"]) == 40 and alpha["saved"]
    table = gs("list").out
    assert "alpha" in table and "Title of alpha" in table


def test_sessions_whose_requests_failed_are_counted_not_listed_and_retried(gs, fake_api):
    from gitservers import free_port

    assert gs("ask", "-S", "talk", "a real conversation").code == 0
    down = {"OPENAI_BASE_URL": f"http://127.0.0.1:{free_port()}/v1"}
    failed = []
    for prompt in ("first try", "second try"):
        r = gs("ask", "--new", prompt, env=down)
        assert r.code == 1, r.err
        [sid] = {s["id"] for s in gs("list", "--json").json()} - {"talk", *failed}
        failed.append(sid)
        assert f"the prompt is saved in session {sid}: gs retry {sid} sends it again" in r.err, r.err
    r = gs("list")
    assert r.code == 0 and [line.split()[0] for line in r.out.splitlines()[1:]] == ["talk"], r.out
    assert r.err == (f"(2 sessions with no reply not listed, their requests failed: {failed[1]}, {failed[0]}; "
                     f"gs retry {failed[1]} sends the prompt again, gs rm {failed[1]} puts it away, "
                     "gs list --all lists them)\n"), r.err
    assert {line.split()[0] for line in gs("list", "--all").out.splitlines()[1:]} == {"talk", *failed}
    assert len(gs("list", "--json").json()) == 3  # JSON: every session
    r = gs("retry", failed[0])
    assert r.code == 0 and r.out == "echo: first try\n", r.err
    listed = [line.split()[0] for line in gs("list").out.splitlines()[1:]]
    assert listed[0] == f"{failed[0]}-1" and "talk" in listed and failed[0] not in listed


def test_global_options_are_taken_after_the_command_too(gs, git, tmp_path):
    """As gh takes them (git does not): --repo after the command was "No such option"."""
    other = tmp_path / "other.git"
    r = gs("ask", "-S", "w", "hi", "--repo", str(other))
    assert r.code == 0, r.err
    assert [s["id"] for s in gs("--repo", str(other), "list", "--json").json()] == ["w"]
    assert gs("list", "--json").json() == []  # not in the default repo
    r = gs("list", f"--repo={other}", "--no-color", "--no-pager")
    assert r.code == 0 and r.out.split()[6] == "w", r.out
    assert gs("ask", "-S", "here", "first").code == 0
    r = gs("ask", "here", "--", "--repo", "is this option a prompt?", "--repo", str(other))
    assert r.code == 0, r.err  # after --: the prompt's words, in the default repo
    messages = gs("show", "here", "--format", "json").json()["messages"]
    assert messages[2]["content"] == f"--repo is this option a prompt? --repo {other}"


def test_gs_log_marks_a_turn_that_did_not_complete_without_p(gs, git, repo_path, fake_api):
    from fakeapi import error

    from gitsessions.log.events import make_header
    from gitsessions.store import GitStore
    from gitsessions.writer.opening import open_revision

    assert gs("ask", "-S", "w", "fine").code == 0
    fake_api.script(error(400, "bad request"))
    assert gs("ask", "-S", "w", "fails").code == 1
    with GitStore(repo_path) as store:  # a reply cancelled with Ctrl+C, as the loop saves it
        session, _ = open_revision(store, "w", new_header=lambda sid: make_header(sid))
        session.append("turn/start", {"turn": 3})
        session.append("user/message", {"content": "cancelled"})
        session.end_turn("aborted")
        session.close()
    assert git("log", "-1", "--format=%(trailers:key=Ended,valueonly)", "w").strip() == "aborted"
    lines = gs("log", "w", "--oneline").out.splitlines()
    assert [line.split(" ", 1)[1] for line in lines] == ["turn 3: cancelled [aborted]", "turn 2: fails [error]",
                                                          "turn 1: fine"]
    assert "Ended:  aborted (the turn did not complete)" in gs("log", "w", "-n", "1").out
    assert [row["ended"] for row in gs("log", "w", "--json").json()] == ["aborted", "error", None]
    git("fsck", "--strict")


def test_a_secret_in_a_streamed_reply_is_said_to_be_replaced_in_what_is_saved_once(gs, fake_api):
    from fakeapi import text

    from gitsessions.text import REDACTED_NOTE

    key = "sk-" + "A1b2C3d4" * 4
    fake_api.script(text(f"your key is {key}"), text(f"again: {key}"), text("nothing secret"))
    r = gs("chat", "w", input="one\ntwo\nthree\n")
    assert r.code == 0, r.err
    assert key in r.out and r.out.count(f"({REDACTED_NOTE})") == 1, r.out  # shown as written, said once
    saved = [m["content"] for m in gs("show", "w", "--format", "json").json()["messages"]]
    assert not any(key in m for m in saved) and "[REDACTED" in saved[1]
    fake_api.script(text(f"the key: {key}"), text("plain"))
    r = gs("ask", "-S", "w", "four")
    assert r.code == 0 and f"({REDACTED_NOTE})" in r.err, r.err
    r = gs("ask", "-S", "w", "five")
    assert r.code == 0 and "REDACTED" not in r.err, r.err


def test_log_oneline_and_limit(gs):
    for i in range(3):
        gs("ask", "-S", "w", f"prompt {i}")
    r = gs("log", "w", "-n", "2", "--oneline")
    lines = r.out.splitlines()
    assert len(lines) == 2 and lines[0].endswith("turn 3: prompt 2")


def test_unknown_session_and_bad_id_are_clear_errors(gs):
    gs("ask", "-S", "exists", "x")
    for args in (("show", "nope"), ("log", "nope")):
        r = gs(*args)
        assert r.code == 1 and "no session 'nope'" in r.err and "exists" in r.err
        assert "Traceback" not in r.err
    r = gs("ask", "-S", "bad id!", "x")
    assert r.code == 1 and "invalid session id" in r.err
    r = gs("ask", "-S", "EXISTS", "x")  # not there, not to be made (ids differ not only by case)
    assert r.code == 1 and "no session 'EXISTS'; did you mean 'exists'?" in r.err, r.err


def test_bad_config_is_a_clear_error(gs, tmp_path):
    (tmp_path / "config.yaml").write_text("api_key: [unclosed\n")
    r = gs("list")
    assert r.code == 1 and "config" in r.err and "YAML" in r.err and "Traceback" not in r.err
    assert "<unicode string>" not in r.err and len(r.err.splitlines()) == 1, r.err
    (tmp_path / "config.yaml").write_text("model: gpt-4o\nrender: true\n  tools: read\n")
    r = gs("list")
    assert r.code == 1 and f"{tmp_path / 'config.yaml'}: not valid YAML: line 3, column 8: mapping values are " \
        "not allowed here" in r.err, r.err


def test_config_file_provides_the_provider(gs, fake_api, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    (tmp_path / "config.yaml").write_text(
        f"base_url: {fake_api.base_url}\napi_key: from-config\nmodel: fake-model\n"
        "author: {name: Ada, email: ada@example.com}\nsystem: Be terse.\n")
    r = gs("ask", "-S", "c", "hi")
    assert r.code == 0, r.err
    assert fake_api.requests[0]["model"] == "fake-model"
    assert fake_api.requests[0]["messages"][0] == {"role": "system", "content": "Be terse."}
    r = gs("ask", "-S", "c", "hi again", env={"OPENAI_MODEL": "gpt-4o-mini"})
    assert fake_api.requests[1]["model"] == "gpt-4o-mini"


def test_no_model_configured_names_both_ways_out(gs, monkeypatch):
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    # The local extra is installed in the test venv; a machine without it is simulated by
    # patching the one availability check, in a real gs process.
    code = (
        "import sys\n"
        "import gitsessions.provider.local as local\n"
        "local.local_available = lambda: False\n"
        "sys.argv = ['gs', 'ask', 'n', 'hi']\n"
        "from gitsessions.cli import main\n"
        "main()\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 1
    assert "OPENAI_API_KEY" in proc.stderr and "gitsessions[local]" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_read_commands_do_not_import_the_model_client(gs):
    gs("ask", "-S", "w", "hi")
    code = (
        "import sys\n"
        "sys.argv = ['gs'] + sys.argv[1:]\n"
        "from gitsessions.cli import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "bad = [m for m in ('openai', 'prompt_toolkit', 'llama_cpp', 'httpx2') if m in sys.modules]\n"
        "print('IMPORTED', bad, file=sys.stderr)\n"
    )
    for args in (["list"], ["log", "w"], ["show", "w"], ["--help"]):
        proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
        assert "IMPORTED []" in proc.stderr, (args, proc.stderr)


def test_help_on_every_command(gs):
    for cmd in ("chat", "ask", "list", "log", "show"):
        r = gs(cmd, "--help")
        assert r.code == 0 and "Examples:" in r.out, cmd
    r = gs("--version")
    assert r.code == 0 and r.out.startswith("gitsessions ")


def _plain_git_session(git, repo_path, sid: str, content: bytes) -> None:
    """Write a session branch with plain git plumbing (as another tool or a pull would)."""
    blob = subprocess.run(["git", "-C", str(repo_path), "hash-object", "-w", "--stdin"], input=content,
                          capture_output=True, check=True).stdout.decode().strip()
    tree = subprocess.run(["git", "-C", str(repo_path), "mktree"], input=f"100644 blob {blob}\tsession.jsonl\n",
                          capture_output=True, text=True, check=True).stdout.strip()
    commit = subprocess.run(["git", "-C", str(repo_path), "commit-tree", tree, "-m", "turn 1: damaged"],
                            capture_output=True, text=True, check=True,
                            env={"GIT_AUTHOR_NAME": "x", "GIT_AUTHOR_EMAIL": "x@y", "GIT_COMMITTER_NAME": "x",
                                 "GIT_COMMITTER_EMAIL": "x@y", "PATH": "/usr/bin:/bin"}).stdout.strip()
    git("update-ref", f"refs/heads/{sid}", commit)


def test_a_corrupt_session_is_flagged_and_hides_nothing(gs, git, repo_path):
    assert gs("ask", "-S", "good", "fine").code == 0
    header = b'{"type":"session","version":1,"created":1}\n'
    ev = b'{"seq":%d,"time":1,"type":"user/message","data":{"content":"x"}}\n'
    end = b'{"seq":3,"time":1,"type":"turn/end","data":{}}\n'
    _plain_git_session(git, repo_path, "gap", header + ev % 0 + ev % 2 + end)
    _plain_git_session(git, repo_path, "future", b'{"type":"session","version":99,"created":1}\n')
    rows = {r["id"]: r for r in gs("list", "--json").json()}
    assert set(rows) == {"good", "gap", "future"}
    assert rows["good"]["error"] is None
    assert "line 3" in rows["gap"]["error"] and "seq 2" in rows["gap"]["error"]
    assert "upgrade gitsessions" in rows["future"]["error"]
    assert "unreadable" in gs("list").out or "corrupt" in gs("list").out
    r = gs("show", "gap")
    assert r.code == 1 and "corrupt at line 3" in r.err and "Traceback" not in r.err
    r = gs("ask", "-S", "gap", "more")
    assert r.code == 1 and "corrupt" in r.err
    # never rewritten
    assert git("log", "--format=%s", "gap") == "turn 1: damaged\n"


def test_control_characters_never_break_git_or_the_terminal(gs, git, fake_api):
    fake_api.script(text("red \x1b[31malert\x1b[0m, a NUL \x00 and a bell \x07"))
    r = gs("ask", "-S", "nul", "-", input=b"a\x01b\x1b]0;title\x07 end")
    assert r.code == 0, r.err
    git("fsck", "--strict")  # no NUL in the commit subject or trailers
    assert "\x00" not in git("log", "-1", "--format=%B", "nul")
    shown = gs("show", "nul").out
    assert "\x1b" not in shown and "\x07" not in shown and "^[" in shown
    table = gs("list").out
    assert "\x1b" not in table and "\x00" not in table
    # the stored content itself is exact: only what reaches a terminal is escaped
    data = gs("show", "nul", "--format", "json").json()["messages"]
    assert data[0]["content"] == "a\x01b\x1b]0;title\x07 end" and "\x1b[31m" in data[1]["content"]
    assert "\x00" in data[1]["content"]


def test_repo_path_that_is_not_a_session_repo_is_refused(gs, tmp_path):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    r = gs("--repo", str(folder), "ask", "x", "hi")
    assert r.code == 1 and "cannot use" in r.err and "notes.txt" in r.err
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]  # nothing written
    r = gs("--repo", str(folder / "notes.txt"), "list")
    assert r.code == 1 and "is a file" in r.err and "Traceback" not in r.err


def test_config_typos_are_errors_and_relative_repo_follows_the_config(gs, tmp_path, monkeypatch):
    cfg_dir = tmp_path / "cfg"
    cfg_dir.mkdir()
    cfg = cfg_dir / "config.yaml"
    cfg.write_text("api-key: sk-typo\n")
    monkeypatch.setenv("GS_CONFIG", str(cfg))
    r = gs("list")
    assert r.code == 1 and "unknown key 'api-key'" in r.err and "api_key" in r.err
    cfg.write_text("repo: sessions.git\n")
    monkeypatch.delenv("GS_REPO")
    assert gs("ask", "-S", "w", "hi").code == 0
    assert (cfg_dir / "sessions.git" / "HEAD").exists()


def test_piped_chat_exits_1_when_a_turn_failed(gs, fake_api):
    fake_api.script(error(400, "context too long"))
    r = gs("chat", "p", input="first\nsecond\n")
    assert r.code == 1
    assert "context too long" in r.out and "echo: second" in r.out


@pytest.mark.filterwarnings("error::pytest.PytestUnraisableExceptionWarning")
def test_a_piped_chat_closes_its_reader_of_stdin_when_it_ends(gs):
    """Not whenever the garbage collector finds it: by then stdin is closed, and detaching it failed."""
    import gc

    assert gs("chat", "work", input="hello\n/exit\nnever read\n").code == 0
    gc.collect()
