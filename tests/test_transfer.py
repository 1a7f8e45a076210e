"""``gs export`` and ``gs import`` end to end: real gs processes, the fake API, real ``git``; and the
import's writing in-process, on every store backend."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path

import pytest
from fakeapi import drop, error, text, tool_calls, validate_messages

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TRICKY = 'héllo ✓ 😀 "quoted" \'single\' back\\slash\nsecond line\ttab 日本語 <b>&amp;</b>'


def _raw(gs, *args: str, repo: Path | None = None) -> bytes:
    """Run gs and return its stdout bytes (exact, no decoding)."""
    extra = ["--repo", str(repo)] if repo else []
    r = gs(*extra, *args)
    assert r.code == 0, r.err
    return r.raw


def _refs(git) -> str:
    return git("for-each-ref", "--format=%(refname) %(objectname)", check=False)


def _one_line_error(r) -> None:
    assert r.code == 1, (r.code, r.out, r.err)
    assert "Traceback" not in r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("gs: "), r.err


def _import_error(r) -> None:
    """One file refused: one ``gs:`` line saying why, then the run's summary, exit 1."""
    assert r.code == 1, (r.code, r.out, r.err)
    assert "Traceback" not in r.err
    lines = r.err.strip().splitlines()
    assert len(lines) == 2 and lines[0].startswith("gs: "), r.err
    assert lines[1] == "1 file (1 failed), 0 sessions written, 0 turns, 0 skipped", r.err


def _session_with_tools(gs, fake_api, sid: str = "work") -> None:
    assert gs("ask", "-S", sid, TRICKY).code == 0
    fake_api.script(tool_calls(("get_current_time", "{}")), text("done ✓ \\ \"ok\""))
    r = gs("ask", "--tools", "time", "-S", sid, "what time is it? 🕒")
    assert r.code == 0, r.err
    assert gs("ask", "-S", sid, "line one\r\nline two\n\n  indented {\"json\": [1, 2]}").code == 0


# --------------------------------------------------------------------------- round trips


def test_jsonl_and_json_exports_import_exactly(gs, git, fake_api, tmp_path):
    _session_with_tools(gs, fake_api)
    original = gs("show", "work", "--format", "json").json()
    raw = _raw(gs, "show", "work", "--format", "jsonl")
    assert any(m.get("tool_calls") for m in original["messages"])

    out = tmp_path / "work.jsonl"
    r = gs("export", "work", "--format", "jsonl", "-o", str(out))
    assert r.code == 0, r.err
    assert out.read_bytes() == raw == _raw(gs, "export", "work", "--format", "jsonl")

    r = gs("import", str(out), "--as", "copy")
    assert r.code == 0, r.err
    assert r.out.strip() == "copy"
    assert _raw(gs, "show", "copy", "--format", "jsonl") == raw
    copy = gs("show", "copy", "--format", "json").json()
    assert copy["messages"] == original["messages"] and copy["events"] == original["events"]
    assert copy["header"] == original["header"]  # kept as-is; the branch name is the new id

    js = tmp_path / "work.json"
    assert gs("export", "work", "-f", "json", "-o", str(js)).code == 0
    assert gs("import", str(js), "--as", "copy2").code == 0
    assert _raw(gs, "show", "copy2", "--format", "jsonl") == raw
    assert gs("show", "copy2", "--format", "json").json()["messages"] == original["messages"]

    body = git("log", "-1", "--format=%B", "copy")
    assert body.startswith("import: work.jsonl\n")
    for trailer in ("Session: copy", "Turn: 3", "Messages: ", "Imported-From: work.jsonl"):
        assert trailer in body
    assert git("rev-list", "--count", "copy").strip() == "1"  # one commit
    git("fsck", "--strict")

    # into another repo without --as: the id comes from the file
    other = tmp_path / "other.git"
    r = gs("--repo", str(other), "import", str(out))
    assert r.code == 0, r.err
    assert r.out.strip() == "work"
    assert _raw(gs, "show", "work", "--format", "jsonl", repo=other) == raw
    subprocess.run(["git", "-C", str(other), "fsck", "--strict"], check=True, capture_output=True)
    # and the imported session can be continued
    assert gs("--repo", str(other), "ask", "work", "more").code == 0


def test_json_export_is_gs_show_json(gs, fake_api):
    _session_with_tools(gs, fake_api)
    assert _raw(gs, "export", "work", "--format", "json") == _raw(gs, "show", "work", "--format", "json")


def test_export_of_a_past_revision(gs, git, fake_api, repo_path):
    _session_with_tools(gs, fake_api)
    past = _raw(gs, "export", "work~1", "--format", "jsonl")
    assert past == subprocess.run(["git", "-C", str(repo_path), "show", "work~1:session.jsonl"],
                                  capture_output=True, check=True).stdout
    commit = git("rev-parse", "work^").strip()
    assert _raw(gs, "export", f"work@{commit[:8]}", "--format", "jsonl") == past
    md = _raw(gs, "export", "work^", "--format", "markdown").decode()
    assert commit in md and "indented" not in md  # the third turn is not there yet
    r = gs("export", "work~9")
    _one_line_error(r)
    r = gs("export", "nosuch")
    _one_line_error(r)


def test_exported_session_with_an_open_turn_is_closed_on_import(gs, tmp_path):
    assert gs("ask", "-S", "w", "hi").code == 0
    lines = _raw(gs, "show", "w", "--format", "jsonl").splitlines(keepends=True)
    cut = [ln for ln in lines if b'"turn/end"' not in ln and b'"step/end"' not in ln]
    f = tmp_path / "open.jsonl"
    f.write_bytes(b"".join(cut))
    r = gs("import", str(f), "--as", "closed")
    assert r.code == 0, r.err
    assert "unfinished" in r.err
    shown = gs("show", "closed", "--format", "json").json()
    assert shown["events"][-1]["type"] == "turn/end" and shown["events"][-1]["data"]["reason"] == "interrupted"
    assert _raw(gs, "show", "closed", "--format", "jsonl").startswith(b"".join(cut))  # appended, nothing changed


# --------------------------------------------------------------------------- readable exports


def test_markdown_and_html_show_roles_tools_times_and_marks(gs, fake_api, tmp_path):
    _session_with_tools(gs, fake_api)
    assert gs("ask", "-S", "work", "<script>alert('x')</script> & done").code == 0
    fake_api.script(drop("partial ans"))
    assert gs("ask", "-S", "work", "this one breaks").code == 1
    fake_api.script(error(400, "bad request here"))
    assert gs("ask", "-S", "work", "and this one errors").code == 1
    events = gs("show", "work", "--format", "json").json()["events"]
    times = {dt.datetime.fromtimestamp(e["time"] / 1000).astimezone().isoformat(timespec="seconds")
             for e in events if e["type"] in ("user/message", "assistant/message")}
    commit = gs("show", "work", "--format", "json").json()["commit"]

    md = _raw(gs, "export", "work", "--format", "markdown").decode("utf-8")
    assert md.startswith("# " + TRICKY.split("\n")[0])
    assert "work" in md and commit in md
    for needle in ("### user", "### assistant", "tool call", "get_current_time", "tool result",
                   "interrupted", "partial ans", "turn ended: error", "bad request here", "second line",
                   "back\\slash", "😀"):
        assert needle in md, needle
    assert all(t in md for t in times)
    assert "<script>alert('x')</script>" in md  # markdown keeps the text as written

    out = tmp_path / "work.html"
    r = gs("export", "work", "-o", str(out))  # the format follows the suffix
    assert r.code == 0, r.err
    page = out.read_text("utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page and page.rstrip().endswith("</html>")
    assert "<script>" not in page and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert "&lt;b&gt;&amp;amp;&lt;/b&gt;" in page and "&quot;quoted&quot;" in page
    for needle in (">user<", ">assistant<", "get_current_time", "tool result", "interrupted",
                   "turn ended: error", commit, "😀"):
        assert needle in page, needle
    assert all(t in page for t in times)
    assert _raw(gs, "export", "work", "--format", "html") == out.read_bytes()


def test_export_without_o_goes_to_stdout_as_markdown(gs):
    assert gs("ask", "-S", "w", "plain").code == 0
    r = gs("export", "w")
    assert r.code == 0 and r.out.startswith("# plain\n") and r.err == ""


# --------------------------------------------------------------------------- GeekAgent archives


def _expected_messages(messages: list[dict]) -> list[dict]:
    """What gs derives from a chat-completions list (system messages are not sent)."""
    out = []
    for m in messages:
        if m["role"] == "system":
            continue
        msg = {"role": m["role"], "content": m.get("content") or ""}
        if m.get("tool_calls"):
            msg["tool_calls"] = m["tool_calls"]
        if m["role"] == "tool":
            msg = {"role": "tool", "tool_call_id": m["tool_call_id"], "content": m["content"]}
        out.append(msg)
    return out


def test_geekagent_archive_imports_every_non_empty_session(gs, git):
    archive = json.loads((EXAMPLES / "geekagent-sessions.json").read_text("utf-8"))
    r = gs("import", str(EXAMPLES / "geekagent-sessions.json"))
    assert r.code == 0, r.err
    non_empty = [sid for sid, msgs in archive["sessions"].items() if msgs]
    assert r.out.split() == non_empty
    assert "skipped default (empty)" in r.err
    ids = [row["id"] for row in gs("list", "--json").json()]
    assert sorted(ids) == sorted(non_empty)
    for sid in non_empty:
        shown = gs("show", sid, "--format", "json").json()
        assert shown["messages"] == _expected_messages(archive["sessions"][sid]), sid
        assert validate_messages(shown["messages"]) is None
        assert git("log", "-1", "--format=%s", sid).strip() == "import: geekagent-sessions.json"
    work = gs("show", "work", "--format", "json").json()
    kept = [e for e in work["events"] if e["type"] == "import/message"]
    assert kept and kept[0]["ignorable"] is True and kept[0]["data"]["role"] == "system"
    assert [e["data"]["reason"] for e in work["events"] if e["type"] == "turn/end"] == ["completed", "completed"]
    git("fsck", "--strict")


def test_archive_clashes_are_reported_and_never_overwritten(gs, git):
    assert gs("ask", "-S", "Work", "mine, not the archive's").code == 0  # differs only by case
    assert gs("ask", "-S", "notes", "archived one").code == 0
    assert gs("rm", "notes").code == 0
    before = _refs(git)
    r = gs("import", str(EXAMPLES / "geekagent-sessions.json"))
    assert r.code == 1
    assert r.out.split() == ["read-src_2"]  # the rest still imports
    assert "not imported work" in r.err and "'Work'" in r.err
    assert "not imported notes" in r.err and "archive" in r.err
    assert "Traceback" not in r.err
    after = _refs(git)
    for line in before.splitlines():
        assert line in after  # Work and archive/notes untouched
    assert git("rev-parse", "refs/heads/Work") == before.split("refs/heads/Work ")[1].split("\n")[0] + "\n"
    assert gs("show", "Work", "--format", "json").json()["messages"][0]["content"] == "mine, not the archive's"
    # importing again: everything clashes, nothing changes
    again = _refs(git)
    r = gs("import", str(EXAMPLES / "geekagent-sessions.json"))
    assert r.code == 1 and r.out == ""
    assert _refs(git) == again


def test_archive_with_ids_clashing_inside_it(gs, tmp_path):
    f = tmp_path / "sessions.json"
    f.write_text(json.dumps({"current": "a", "sessions": {
        "a": [{"role": "user", "content": "one"}], "A": [{"role": "user", "content": "two"}]}}))
    r = gs("import", str(f))
    assert r.code == 1 and r.out.split() == ["a"] and "not imported A" in r.err


def test_an_unknown_shape_names_every_format_gs_imports(gs, tmp_path):
    f = tmp_path / "u.json"
    f.write_text('{"hello": 1}')
    r = gs("import", str(f))
    assert r.code == 1 and "unknown shape" in r.err, r.err
    for name in ("messages array", "GeekAgent", "ChatGPT", "Claude.ai", "Claude Code", "Codex", "logs.db"):
        assert name in r.err, (name, r.err)


@pytest.mark.parametrize("content, reason", [
    ("{}", "unknown shape"),
    ('{"current": "a", "sessions": []}', "not a valid GeekAgent"),
    ('{"current": "zz", "sessions": {"a": [{"role": "user", "content": "hi"}]}}', "'zz'"),
    ('{"current": 1, "sessions": {"a": []}}', "current"),
    ('{"current": "a", "sessions": {"a": [{"role": "user", "content": "hi"}], "../bad": []}}', "'../bad'"),
    ('{"current": "a", "sessions": {"a": [{"role": "user", "content": "hi"}], "HEAD": [{"role": "user"}]}}',
     "'HEAD'"),
    ('{"current": "a", "sessions": {"a": [{"role": "user", "content": "hi"}], "b": "oops"}}', "'b'"),
    ('{"current": "a", "sessions": {"a": [{"role": "user", "content": "hi"}], "b": [{"content": "x"}]}}',
     "no role"),
    ('{"current": "a", "sessions": {"a": [{"role": "user", "content": "hi"}], "b": [{"role": "bot"}]}}',
     "'bot'"),
    ('{"current": "a", "sessions": {"a": [{"role": "user", "content": "hi"}], "a": []}}', "twice"),
    ('{"current": "a", "sessions": {"a": [{"role": "user", "content": "hi"}]', "not JSON"),
])
def test_malformed_archive_writes_nothing(gs, git, tmp_path, content, reason):
    assert gs("ask", "-S", "existing", "hi").code == 0
    before = _refs(git)
    f = tmp_path / "sessions.json"
    f.write_text(content)
    r = gs("import", str(f))
    _import_error(r)
    assert reason in r.err and "nothing was written" in r.err
    assert _refs(git) == before


def test_malformed_archive_into_an_empty_repo_creates_nothing(gs, repo_path, tmp_path):
    f = tmp_path / "sessions.json"
    f.write_text('{"current": "a", "sessions": {"a": [{"role": "user", "content": "hi"}], "b": [7]}}')
    _import_error(gs("import", str(f)))
    assert not repo_path.exists()


# --------------------------------------------------------------------------- messages arrays


def test_messages_array_import(gs, git):
    msgs = json.loads((EXAMPLES / "messages.json").read_text("utf-8"))
    r = gs("import", str(EXAMPLES / "messages.json"))
    assert r.code == 0, r.err
    sid = r.out.strip()
    assert len(sid) == 8 and int(sid, 16) >= 0
    shown = gs("show", sid, "--format", "json").json()
    assert shown["messages"] == _expected_messages(msgs)
    assert validate_messages(shown["messages"]) is None
    types = [e["type"] for e in shown["events"]]
    assert types[0] == "import/message"  # the system message, kept aside
    assert types.count("turn/start") == 2 and types.count("turn/end") == 2
    assert types.count("step/start") == types.count("step/end") == 3
    assert [e["seq"] for e in shown["events"]] == list(range(len(types)))
    assert git("log", "-1", "--format=%s", sid).strip() == "import: messages.json"
    git("fsck", "--strict")


def test_messages_object_with_unanswered_call_and_odd_shapes(gs, tmp_path):
    f = tmp_path / "req.json"
    f.write_text(json.dumps({"model": "gpt-x", "messages": [
        {"role": "developer", "content": "be brief"},
        {"role": "assistant", "content": "I start."},
        {"role": "user", "content": [{"type": "text", "text": "part one"}, {"type": "image_url", "image_url": {}}]},
        {"role": "tool", "tool_call_id": "nobody", "content": "orphan"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_current_time", "arguments": {"tz": "UTC"}}},
            {"id": "c2", "type": "function", "function": {"name": "other", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "noon"},
        {"role": "user", "content": "next"},
    ]}))
    r = gs("import", str(f), "--as", "odd")
    assert r.code == 0, r.err
    assert "answers no tool call" in r.err and "never answered" in r.err
    shown = gs("show", "odd", "--format", "json").json()
    assert validate_messages(shown["messages"]) is None
    assert [m["role"] for m in shown["messages"]] == ["assistant", "user", "assistant", "tool", "tool", "user"]
    assert shown["messages"][1]["content"] == "part one\n[image_url part not imported]"
    assert shown["messages"][2]["tool_calls"][0]["function"]["arguments"] == '{"tz": "UTC"}'
    reasons = [e["data"]["reason"] for e in shown["events"] if e["type"] == "turn/end"]
    assert reasons == ["completed", "interrupted", "completed"]
    models = {e["data"]["model"] for e in shown["events"] if e["type"] == "assistant/message"}
    assert models == {"gpt-x"}


# --------------------------------------------------------------------------- refusals and hygiene


def test_refusals_are_one_line_and_write_nothing(gs, git, tmp_path):
    assert gs("ask", "-S", "existing", "hi").code == 0
    before = _refs(git)
    cases = {
        "missing.json": (None, "file not found"),
        "text.md": ("# hello\n", "not JSON"),
        "empty.json": ("", "empty"),
        "shape.json": ('{"what": 1}', "unknown shape"),
        "number.json": ("42", "unknown shape"),
        "role.json": ('[{"role": "robot", "content": "x"}]', "'robot'"),
        "content.json": ('[{"role": "user", "content": 5}]', "content"),
        "none.json": ("[]", "no messages"),
        "nan.json": ('[{"role": "user", "content": NaN}]', "NaN"),
        "badjsonl.jsonl": ('{"type":"session","version":1,"id":"x","created":1}\n{"seq":5,"time":1,"type":"turn/start",'
                           '"data":{}}\n', "line 2"),
        "newer.jsonl": ('{"type":"session","version":99,"id":"x","created":1}\n', "upgrade"),
        "badjson.json": ('{"header": {"type": "session", "version": 1}, "events": [{"seq": 0, "type": "nope/x", '
                         '"time": 1, "data": {}}]}', "events[0]"),
    }
    for name, (content, reason) in cases.items():
        f = tmp_path / name
        if content is not None:
            f.write_text(content)
        r = gs("import", str(f))
        _import_error(r)
        assert reason in r.err, (name, r.err)
    f = tmp_path / "ok.json"
    f.write_text('[{"role": "user", "content": "x"}]')
    for args, reason in ((("--as", "bad id!"), "invalid session id"), (("--as", "HEAD"), "HEAD"),
                         (("--as", "EXISTING"), "differ only by case")):
        r = gs("import", str(f), *args)
        _import_error(r)
        assert reason in r.err, r.err
    r = gs("import", str(EXAMPLES / "geekagent-sessions.json"), "--as", "one")
    _import_error(r)
    assert "--as" in r.err
    r = gs("import", str(tmp_path))
    _import_error(r)
    assert _refs(git) == before


def test_own_jsonl_import_refuses_a_taken_id(gs, git, tmp_path):
    assert gs("ask", "-S", "work", "hi").code == 0
    f = tmp_path / "w.jsonl"
    f.write_bytes(_raw(gs, "export", "work", "-f", "jsonl"))
    before = git("rev-parse", "work")
    r = gs("import", str(f))
    _import_error(r)
    assert "already exists" in r.err and "--as" in r.err
    assert git("rev-parse", "work") == before


def test_bom_crlf_bad_bytes_and_lone_surrogates(gs, git, tmp_path):
    f = tmp_path / "dirty.json"
    f.write_bytes(b'\xef\xbb\xbf[\r\n{"role": "user", "content": "caf\xe9 \\ud800 end"},\r\n'
                  b'{"role": "assistant", "content": "ok \\udc00\\ud83d\\ude00"}\r\n]\r\n')
    r = gs("import", str(f), "--as", "dirty")
    assert r.code == 0, r.err
    msgs = gs("show", "dirty", "--format", "json").json()["messages"]
    assert msgs[0]["content"] == "caf\ufffd \ufffd end"
    assert msgs[1]["content"] == "ok \ufffd😀"
    # an exported jsonl with CRLF and a BOM still imports (as clean lines)
    assert gs("ask", "-S", "w", "hello").code == 0
    raw = _raw(gs, "show", "w", "--format", "jsonl")
    g = tmp_path / "crlf.jsonl"
    g.write_bytes(b"\xef\xbb\xbf" + raw.replace(b"\n", b"\r\n"))
    r = gs("import", str(g), "--as", "crlf")
    assert r.code == 0, r.err
    assert _raw(gs, "show", "crlf", "--format", "jsonl") == raw
    git("fsck", "--strict")


def test_ten_megabyte_message_imports_and_exports(gs, git, tmp_path):
    chunk = "line of text ✓ \"q\" \\ 日本 <tag>\n"
    content = chunk * (10_000_000 // len(chunk.encode()) + 1)
    f = tmp_path / "big.json"
    f.write_text(json.dumps([{"role": "user", "content": content}, {"role": "assistant", "content": "ok"}]),
                 encoding="utf-8")
    r = gs("import", str(f), "--as", "big", timeout=120)
    assert r.code == 0, r.err
    raw = _raw(gs, "export", "big", "-f", "jsonl")
    assert len(raw) > 10_000_000
    jl = tmp_path / "big.jsonl"
    jl.write_bytes(raw)
    assert gs("import", str(jl), "--as", "big2", timeout=120).code == 0
    assert _raw(gs, "show", "big2", "--format", "jsonl") == raw
    md = _raw(gs, "export", "big", "-f", "markdown").decode()
    assert content in md
    page = _raw(gs, "export", "big", "-f", "html").decode()
    assert "&lt;tag&gt;" in page and len(page) > 10_000_000
    shown = json.loads(_raw(gs, "export", "big", "-f", "json"))
    assert shown["messages"][0]["content"] == content
    git("fsck", "--strict")


def test_import_reads_stdin(gs):
    r = gs("import", "-", "--as", "piped", input='[{"role": "user", "content": "from a pipe"}]')
    assert r.code == 0, r.err
    assert gs("show", "piped", "--format", "json").json()["messages"][0]["content"] == "from a pipe"


def test_import_reads_a_named_pipe_once(gs, tmp_path):
    # A FIFO (or bash's <(...)) can be read once: a file is read twice (its digest, then its
    # conversations), a pipe is taken whole, as stdin is (it hung on the second open).
    import os
    import threading

    fifo = tmp_path / "piped.json"
    os.mkfifo(fifo)
    body = b'[{"role": "user", "content": "through a fifo"}]'

    def feed() -> None:
        with open(fifo, "wb") as f:
            f.write(body)

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    r = gs("import", str(fifo), "--as", "fifo")
    writer.join(timeout=10)
    assert r.code == 0, r.err
    assert gs("show", "fifo", "--format", "json").json()["messages"][0]["content"] == "through a fifo"


def test_help_has_examples(gs):
    for cmd in ("export", "import"):
        r = gs(cmd, "--help")
        assert r.code == 0 and "Examples:" in r.out, cmd


def test_failing_files_of_one_name_are_told_apart_by_their_path(gs, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for d in ("d1", "d2"):
        (tmp_path / d).mkdir()
        (tmp_path / d / "conversations.json").write_text('{"nope": 1}')
    r = gs("import", "d1/conversations.json", "d2/conversations.json")
    assert r.code == 1, r.err
    assert "cannot import conversations.json (d1/conversations.json)" in r.err
    assert "cannot import conversations.json (d2/conversations.json)" in r.err
    assert r.err.splitlines()[-1] == "2 files (2 failed), 0 sessions written, 0 turns, 0 skipped"


def test_as_is_taken_or_refused_the_same_for_a_file_imported_before(gs, tmp_path):
    # A file imported whole before is passed over by its digest: not with --as, which says where it goes.
    assert gs("ask", "-S", "work", "hi").code == 0
    out = tmp_path / "work.jsonl"
    assert gs("export", "work", "--format", "jsonl", "-o", str(out)).code == 0
    assert gs("import", str(out), "--as", "first").code == 0
    r = gs("import", str(out), "--as", "second")
    assert r.code == 0 and r.out.split() == ["second"], r.err
    transcript = Path(__file__).parent / "data" / "claude_code" / "real" / "projects" / "-home-user-proj"
    cc = next(transcript.glob("*.jsonl"))
    assert gs("import", str(cc)).code == 0
    for _ in range(2):
        r = gs("import", str(cc), "--as", "mine")
        assert r.code == 1 and "--as does not apply to claude-code conversations" in r.err, r.err


# --------------------------------------------------------------------------- on every store


DATA = Path(__file__).resolve().parent / "data"


def test_an_import_writes_the_same_sessions_on_any_store(any_store):
    from gitsessions.log.transcript import derive_messages
    from gitsessions.transfer.export import export_bytes
    from gitsessions.transfer.read import read_import
    from gitsessions.transfer.write import write_import

    store = any_store.store
    export = DATA / "chatgpt" / "conversations.json"
    first = write_import(store, read_import(export.read_bytes(), export.name, path=export))
    again = write_import(store, read_import(export.read_bytes(), export.name, path=export))
    messages = EXAMPLES / "messages.json"
    single = write_import(store, read_import(messages.read_bytes(), messages.name), as_id="imp")
    assert [o for _c, outcomes in first.conversations for o in outcomes] == [
        ("parse-yaml-in-python-f2c95c04", "new", 3), ("parse-yaml-in-python-f2c95c04-bda9d9", "fork", 1),
        ("parse-yaml-in-python-f2c95c04-3e30cb", "fork", 1), ("greeting-12301a74", "new", 1)]
    assert {o[1] for _c, outcomes in again.conversations for o in outcomes} == {"same"}  # held already: nothing new
    with any_store.again() as fresh:
        assert sorted(fresh.session_ids()) == ["greeting-12301a74", "imp", "parse-yaml-in-python-f2c95c04",
                                               "parse-yaml-in-python-f2c95c04-3e30cb",
                                               "parse-yaml-in-python-f2c95c04-bda9d9"]
        assert [c.message.subject for c in fresh.log("greeting-12301a74")] == [
            "turn 1: Say hi", "import: chatgpt 6770ffff-0000-8000-aaaa-bbbbccccdddd"]
        fork_tip = fresh.log("parse-yaml-in-python-f2c95c04-bda9d9")[0]
        assert fork_tip.message.fields.forked_from is not None
        assert fork_tip.message.fields.forked_from.session_id == "parse-yaml-in-python-f2c95c04"
        snap = fresh.load("imp")
        assert [c.message.subject for c in fresh.log("imp")] == ["import: messages.json"]
        assert single.imported[0][:2] == ("imp", snap.commit)
        exported = json.loads(export_bytes(snap, "json"))
    want = [m for m in json.loads(messages.read_text()) if m["role"] != "system"]
    got = [m for m in derive_messages(snap.events) if m["role"] != "system"]
    assert [(m["role"], m.get("content") or "") for m in got] == [(m["role"], m.get("content") or "") for m in want]
    assert exported["messages"] == derive_messages(snap.events)


def test_the_command_line_offers_the_formats_the_transfer_reads_and_writes():
    # typer wants an Enum class for a choice; the lists themselves are transfer's
    from gitsessions.cli.transfer import ExportFormat, ImportFormat
    from gitsessions.transfer.export import EXPORT_FORMATS
    from gitsessions.transfer.read import FORMATS

    assert [f.value for f in ImportFormat] == list(FORMATS)
    assert [f.value for f in ExportFormat] == list(EXPORT_FORMATS)  # md is an alias of markdown, no member
