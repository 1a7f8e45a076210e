"""Importing Codex rollouts: a commit per turn, a compaction, a forked session as a fork.

The fixtures (tests/data/codex/) follow the rollout format as documented and as Codex 0.171
writes it: a ``session_meta`` line, each turn opened by ``turn_context`` and injected
``developer`` / ``<environment_context>`` messages, reasoning with an encrypted part, an
``exec_command`` call and its plain-text output, an ``apply_patch`` custom tool call,
``token_count`` events, a ``compacted`` line, an image and a web search, and line types the
reader must skip (``world_state``, ``token_usage_record``, ``task_*`` events). The second
rollout is a session forked from the first (``forked_from_id``): it repeats the first turn,
then goes its own way.
"""

from __future__ import annotations

import io
import json
import shutil
import subprocess
from pathlib import Path

from fakeapi import validate_messages

from gitsessions.ids import imported_session_id
from gitsessions.log.commits import commit_message
from gitsessions.log.transcript import derive_messages
from gitsessions.store import GitStore
from gitsessions.transfer.readers import codex
from gitsessions.transfer.readers.local_paths import LOCAL_PATH

DATA = Path(__file__).parent / "data" / "codex"
ID = "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
FORK_ID = "0199a1b2-ffff-7e5f-8a9b-000000000001"
MAIN_FILE = DATA / f"rollout-2025-10-06T09-00-00-{ID}.jsonl"
FORK_FILE = DATA / f"rollout-2025-10-06T09-03-20-{FORK_ID}.jsonl"
TITLE = "List the files in this project."
MAIN = imported_session_id("codex", ID, TITLE)
FORK = imported_session_id("codex", FORK_ID, TITLE)
T = 1759741200  # 2025-10-06T09:00:00Z, the session_meta time


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


def test_each_turn_is_a_commit_and_the_forked_session_forks_at_the_shared_turn(gs, git, repo_path):
    r = gs("import", str(MAIN_FILE), str(FORK_FILE))
    assert r.code == 0, r.err
    assert r.out.split() == [MAIN, FORK]
    assert "2 files, 2 sessions written, 4 turns, 0 skipped" in r.err
    git("fsck", "--strict")
    # A commit per turn, dated when its prompt was said; the header commit at session_meta.
    assert git("log", "--format=%at %s", MAIN).splitlines() == [
        f"{T + 121} turn 3: What does main.py do now?",  # its commit opens with the compaction before it
        f"{T + 61} turn 2: Add a docstring to main.py.",
        f"{T + 2} turn 1: {TITLE}",
        f"{T} import: codex {ID}",
    ]
    # The forked session shares the first turn's commit and names it as its lineage.
    turn1 = git("rev-parse", f"{MAIN}~2").strip()
    assert git("merge-base", MAIN, FORK).strip() == turn1
    assert f"Forked-From: {MAIN}@{turn1}" in git("log", "-1", "--format=%B", FORK)
    assert git("log", "-1", "--format=%s", FORK).strip() == "turn 2: Delete main.py instead."
    assert FORK in gs("tree", MAIN).out
    with GitStore(repo_path) as store:
        snap, fork = store.load(MAIN), store.load(FORK)
    assert snap.header["source"] == {"tool": "codex", "id": ID} and "cwd" not in snap.header
    assert fork.header["source"] == {"tool": "codex", "id": ID}  # a fork keeps its origin's header
    events = snap.events
    # Injected context and reasoning summaries are kept, ignorable; each turn's context in its own commit.
    aside = [(e.data["name"], e.ignorable) for e in events if e.type == "import/message"]
    assert aside.count(("codex developer context", True)) == 3 and aside.count(("codex user context", True)) == 3
    assert ("codex reasoning", True) in aside and ("codex web search", True) in aside
    assert events[1].data == {"role": "system", "name": "codex instructions",
                              "content": "You are Codex, a coding agent."}
    assert not any("encrypted" in json.dumps(e.data) or "gAAAA" in json.dumps(e.data) for e in events)
    prompts = [e.data["content"] for e in events if e.type == "user/message"]
    assert prompts == [TITLE, "Add a docstring to main.py.", "What does main.py do now?\n[image not imported]"]
    replies = [e.data for e in events if e.type == "assistant/message"]
    assert [r["model"] for r in replies] == ["gpt-5-codex"] * 5
    assert replies[0]["tool_calls"] == [{"id": "call_ls1", "name": "exec_command", "arguments": '{"cmd": "ls"}'}]
    assert replies[0]["usage"] == {"prompt_tokens": 5120, "completion_tokens": 40, "total_tokens": 5160,
                                   "prompt_tokens_details": {"cached_tokens": 4096},
                                   "completion_tokens_details": {"reasoning_tokens": 12}}
    patch = json.loads(replies[2]["tool_calls"][0]["arguments"])
    assert replies[2]["tool_calls"][0]["name"] == "apply_patch" and "*** Begin Patch" in patch["input"]
    results = [e.data for e in events if e.type == "tool/result"]
    assert [r["id"] for r in results] == ["call_ls1", "call_patch1"]
    assert "README.md\nmain.py" in results[0]["content"]
    summary = [e.data for e in events if e.type == "compaction/summary"]
    assert len(summary) == 1 and "docstring in main.py, which was added" in summary[0]["summary"]
    assert [e.type for e in events].index("compaction/summary") < [e.type for e in events].index("turn/end", 30)
    assert "items of type" not in r.err  # every item of the fixture has a home


def test_the_model_is_sent_the_summary_and_what_follows_it(gs, fake_api):
    assert gs("import", str(MAIN_FILE), str(FORK_FILE)).code == 0
    for sid in (MAIN, FORK):
        fake_api.reset()
        r = gs("ask", "-S", sid, "and now?")
        assert r.code == 0, r.err
        messages = fake_api.requests[-1]["messages"]
        assert validate_messages(messages) is None
        assert messages[-1] == {"role": "user", "content": "and now?"}
        assert not any("environment_context" in str(m.get("content")) for m in messages)
        if sid == MAIN:  # what the compaction covers gives way to the prompts Codex kept and its summary
            assert [m["content"] for m in messages[:2]] == [TITLE, "Add a docstring to main.py."]
            assert messages[2]["content"].startswith("Summary of the conversation so far:\nThe user asked")
            assert not any(m.get("tool_calls") for m in messages)
        else:
            assert [m["tool_call_id"] for m in messages if m["role"] == "tool"] == ["call_ls1", "call_rm"]


def test_the_same_rollouts_again_write_nothing_and_a_resumed_one_fast_forwards(gs, git, tmp_path):
    rollout = _write(tmp_path / MAIN_FILE.name, _lines(MAIN_FILE))
    assert gs("import", str(rollout), str(FORK_FILE)).code == 0
    before = git("for-each-ref", "--format=%(refname) %(objectname)")
    r = gs("import", str(rollout), str(FORK_FILE))
    assert r.code == 0 and r.out == "" and "nothing new" in r.err
    assert git("for-each-ref", "--format=%(refname) %(objectname)") == before
    tip = git("rev-parse", MAIN).strip()
    # `codex exec resume --last "..."` appends the next turn to the same file.
    lines = _lines(rollout)
    context = next(line for line in lines if line["type"] == "turn_context")
    def said(second: int, role: str, kind: str, text: str) -> dict:
        return {"timestamp": f"2025-10-07T10:00:0{second}.000Z", "type": "response_item",
                "payload": {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}}

    more = [dict(context, timestamp="2025-10-07T10:00:00.000Z"), said(1, "user", "input_text", "Thanks!"),
            said(2, "assistant", "output_text", "Welcome."),
            {"timestamp": "2025-10-07T10:00:03.000Z", "type": "event_msg", "payload": {"type": "task_complete"}}]
    _write(rollout, lines + more)
    r = gs("import", str(rollout))
    assert r.code == 0, r.err
    assert r.out.split() == [MAIN] and f"{MAIN}: 1 turn new" in r.err
    assert git("rev-parse", f"{MAIN}^").strip() == tip
    assert git("log", "-1", "--format=%s", MAIN).strip() == "turn 4: Thanks!"
    git("fsck", "--strict")


def test_a_fork_imported_before_its_origin_is_a_session_of_its_own(gs, git):
    r = gs("import", str(FORK_FILE))
    assert r.code == 0, r.err
    assert r.out.split() == [FORK] and f"forked from codex session {ID}" in r.err
    assert "Forked-From" not in git("log", "--format=%B", FORK)
    assert gs("import", str(MAIN_FILE)).out.split() == [MAIN]


def test_a_malformed_line_is_named_and_nothing_of_the_file_is_written(gs, repo_path, tmp_path):
    lines = MAIN_FILE.read_text(encoding="utf-8").splitlines()
    lines[5] = lines[5][:40]
    bad = tmp_path / "rollout-bad.jsonl"
    bad.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = gs("import", str(bad))
    assert r.code == 1 and "cannot import rollout-bad.jsonl" in r.err and "line 6: not JSON" in r.err, r.err
    assert not repo_path.exists()
    no_time = _lines(MAIN_FILE)
    no_time[3]["timestamp"] = "yesterday"
    r = gs("import", str(_write(tmp_path / "rollout-time.jsonl", no_time)))
    assert r.code == 1 and "line 4: \"timestamp\" 'yesterday' is not an ISO 8601 time" in r.err
    r = gs("import", "--from", "codex", str(Path(__file__).parent / "data" / "chatgpt" / "conversations.json"))
    assert r.code == 1 and "not a codex file (it reads as chatgpt)" in r.err


def test_unknown_lines_and_items_are_skipped(gs, repo_path, tmp_path):
    lines = _lines(MAIN_FILE)
    lines.insert(3, {"timestamp": "2025-10-06T09:00:01.500Z", "type": "hologram", "payload": {"x": 1}})
    lines.insert(4, {"timestamp": "2025-10-06T09:00:01.600Z", "type": "response_item",
                     "payload": {"type": "teleport_call", "call_id": "t1"}})
    lines.insert(5, ["not", "an", "object", "but", "a", "future", "line"])
    r = gs("import", str(_write(tmp_path / "rollout-new.jsonl", lines)))
    assert r.code == 1 and "line 6 is an array, not an object" in r.err
    del lines[5]
    r = gs("import", str(_write(tmp_path / "rollout-new.jsonl", lines)))
    assert r.code == 0, r.err
    assert "items of type 'teleport_call' were skipped" in r.err


def test_default_paths_honour_codex_home(tmp_path):
    home, codex_home = tmp_path / "h", tmp_path / "elsewhere"
    for root in (home / ".codex", codex_home):
        day = root / "sessions" / "2025" / "10" / "06"
        day.mkdir(parents=True)
        shutil.copy(MAIN_FILE, day / MAIN_FILE.name)
        (day / "notes.txt").write_text("not a rollout", encoding="utf-8")
    assert codex.default_paths({}, home) == [home / ".codex/sessions/2025/10/06" / MAIN_FILE.name]
    assert codex.default_paths({"CODEX_HOME": str(codex_home)}, home) == [
        codex_home / "sessions/2025/10/06" / MAIN_FILE.name]
    assert codex.default_paths({}, tmp_path / "nobody") == []
    assert codex.sessions_dir({"CODEX_HOME": str(codex_home)}, home) == codex_home / "sessions"


def test_older_rollouts_that_write_the_turn_context_after_the_prompt_keep_their_turns_whole(gs, repo_path, tmp_path):
    lines = [line for line in _lines(MAIN_FILE) if line.get("payload", {}).get("type") not in ("task_started",
                                                                                                 "task_complete")]
    for i in [i for i, line in enumerate(lines) if line["type"] == "turn_context"]:
        lines.insert(i + 3, lines.pop(i))  # after the developer, context and prompt messages (Codex 0.46)
    second = next(i for i, line in enumerate(lines) if i > 5 and line["payload"].get("role") == "developer")
    r = gs("import", str(_write(tmp_path / MAIN_FILE.name, lines[:second])))  # before the second turn was written
    assert r.code == 0 and "1 turn" in r.err, r.err
    r = gs("import", str(_write(tmp_path / MAIN_FILE.name, lines)))
    assert r.code == 0 and f"{MAIN}: 2 turns new" in r.err, r.err  # a fast-forward: the first turn is as it was
    with GitStore(repo_path) as store:
        events = store.load(MAIN).events
    turns = [[e.type for e in events if e.type in ("user/message", "assistant/message")]]
    assert sum(e.type == "turn/start" for e in events) == 3
    assert turns[0] == ["user/message", "assistant/message", "assistant/message", "user/message",
                        "assistant/message", "assistant/message", "user/message", "assistant/message"]


def test_a_last_line_codex_is_still_writing_is_left_for_the_next_import(gs, git, tmp_path):
    text = MAIN_FILE.read_text(encoding="utf-8")
    cut = text.rindex('{"timestamp"')  # the last line, half written
    rollout = tmp_path / MAIN_FILE.name
    rollout.write_text(text[:cut + 30], encoding="utf-8")
    r = gs("import", str(rollout))
    assert r.code == 0, r.err
    assert "its last turn is still going on; it is imported once it is over" in r.err
    assert git("log", "-1", "--format=%s", MAIN).strip() == "turn 2: Add a docstring to main.py."
    tip = git("rev-parse", MAIN).strip()
    rollout.write_text(text, encoding="utf-8")
    r = gs("import", str(rollout))
    assert r.code == 0 and r.out.split() == [MAIN] and f"{MAIN}: 1 turn new" in r.err, r.err
    assert git("rev-parse", f"{MAIN}^").strip() == tip  # a fast-forward, not a fork
    git("fsck", "--strict")


def test_a_turn_codex_has_not_finished_is_left_for_the_next_import(gs, git, tmp_path):
    lines = _lines(MAIN_FILE)
    last_prompt = max(i for i, line in enumerate(lines) if line["payload"].get("role") == "user")
    rollout = _write(tmp_path / MAIN_FILE.name, lines[:last_prompt + 2])  # its prompt and a web search, no reply
    r = gs("import", str(rollout))
    assert r.code == 0 and "its last turn is still going on" in r.err, r.err
    tip = git("rev-parse", MAIN).strip()
    usage = {"timestamp": lines[last_prompt + 1]["timestamp"], "type": "event_msg",
             "payload": {"type": "token_count", "info": None}}
    _write(rollout, [*lines[:last_prompt + 2], usage])  # the file grew, the turn is not over yet
    r = gs("import", str(rollout))  # says why nothing is new: not a turn lost
    assert r.code == 0 and f"nothing new in {rollout.name}\n  note: its last turn is still going on" in r.err, r.err
    _write(rollout, lines)
    r = gs("import", str(rollout))
    assert r.code == 0 and f"{MAIN}: 1 turn new" in r.err and "still going on" not in r.err, r.err
    assert git("rev-parse", f"{MAIN}^").strip() == tip


def test_a_rollout_with_nothing_finished_yet_is_skipped_not_failed(gs, repo_path, tmp_path):
    """Codex writes the rollout as the session goes: a file imported during its first turn is no error."""
    lines = _lines(MAIN_FILE)
    first_reply = next(i for i, line in enumerate(lines) if line["payload"].get("type") == "function_call")
    r = gs("import", str(_write(tmp_path / "rollout-a.jsonl", lines[:first_reply])),
           str(_write(tmp_path / "rollout-b.jsonl", lines[:1])))
    assert r.code == 0 and r.out == "", r.err
    assert f"skipped codex conversation {ID} (its last turn is still going on" in r.err
    assert f"skipped codex conversation {ID} (it holds no prompt yet)" in r.err
    assert "2 files, 0 sessions written, 0 turns, 2 skipped" in r.err
    assert not repo_path.exists()


def test_from_codex_without_a_file_reads_codex_home_and_says_what_it_found(gs, git, tmp_path):
    root = tmp_path / "codex-home"
    day = root / "sessions" / "2025" / "10" / "06"
    day.mkdir(parents=True)
    for rollout in (MAIN_FILE, FORK_FILE):
        shutil.copy(rollout, day / rollout.name)
    r = gs("import", "--from", "codex", env={"CODEX_HOME": str(root)})
    assert r.code == 0, r.err
    assert f"found 2 Codex rollouts in {root / 'sessions'}" in r.err
    assert r.out.split() == [MAIN, FORK]  # the origin first: the fork forks it
    assert gs("import", "--from", "codex", env={"CODEX_HOME": str(root)}).out == ""
    r = gs("import", "--from", "codex", env={"CODEX_HOME": str(tmp_path / "none")})
    assert r.code == 1 and "no Codex folder here" in r.err and "set CODEX_HOME" in r.err


def _line(second: int, kind: str, payload: dict) -> dict:
    """A rollout line written ``second`` s after 2025-10-07 11:00 UTC."""
    return {"timestamp": f"2025-10-07T11:00:{second:02d}.000Z", "type": kind, "payload": payload}


def _said(second: int, role: str, text: str) -> dict:
    """A rollout's message line."""
    part = "output_text" if role == "assistant" else "input_text"
    return _line(second, "response_item", {"type": "message", "role": role, "content": [{"type": part, "text": text}]})


def test_a_remote_compaction_stands_for_what_codex_kept(gs, repo_path, tmp_path, fake_api):
    """Compacted by the model's server (codex-rs compact_remote.rs), the line's ``message`` is
    empty: the messages Codex goes on with are its ``replacement_history``, the summary proper
    an encrypted item. They are what the compaction is sent as, not an empty summary."""
    def turn(second: int, prompt: str, reply: str) -> list[dict]:
        return [_line(second, "turn_context", {"model": "gpt-5-codex"}),
                _line(second, "event_msg", {"type": "task_started"}),
                _said(second, "user", "<environment_context>\n<cwd>/w</cwd>\n</environment_context>"),
                _said(second + 1, "user", prompt), _said(second + 2, "assistant", reply),
                _line(second + 2, "event_msg", {"type": "task_complete"})]

    kept = [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Port the parser to Rust"}]},
            {"type": "compaction", "encrypted_content": "gAAAA-remote-summary"}]
    rid = "0199b000-0000-7000-8000-00000000000c"
    rollout = _write(tmp_path / f"rollout-2025-10-07T11-00-00-{rid}.jsonl", [
        _line(0, "session_meta", {"id": rid, "timestamp": "2025-10-07T11:00:00.000Z", "cwd": "/w"}),
        *turn(1, "Port the parser to Rust", "Ported."),
        _line(10, "compacted", {"message": "", "replacement_history": kept}),
        *turn(20, "Now the tests", "Ported the tests.")])
    r = gs("import", str(rollout))
    assert r.code == 0, r.err
    sid = imported_session_id("codex", rid, "Port the parser to Rust")
    with GitStore(repo_path) as store:
        summary = [e.data["summary"] for e in store.load(sid).events if e.type == "compaction/summary"]
    assert len(summary) == 1 and "user: Port the parser to Rust" in summary[0]
    assert "environment_context" not in summary[0]  # injected context: each turn brings its own
    assert "encrypted" in summary[0] and "gAAAA" not in summary[0]
    with GitStore(repo_path) as store:  # the encrypted summary is kept, ignorable, right after the summary
        events = store.load(sid).events
    at = next(i for i, e in enumerate(events) if e.type == "compaction/summary")
    assert (events[at + 1].type, events[at + 1].ignorable) == ("import/message", True)
    assert events[at + 1].data == {"role": "system", "name": "codex encrypted compaction",
                                   "content": "gAAAA-remote-summary"}
    assert gs("ask", "-S", sid, "and now?").code == 0
    messages = fake_api.requests[-1]["messages"]
    assert validate_messages(messages) is None
    assert "gAAAA" not in json.dumps(messages)
    assert messages[0]["content"].startswith("Summary of the conversation so far:\n")
    assert "Port the parser to Rust" in messages[0]["content"] and "Ported." not in json.dumps(messages)
    assert [m["content"] for m in messages[1:]] == ["Now the tests", "Ported the tests.", "and now?"]


def test_the_context_codex_injects_keeps_its_local_paths_only_with_keep_paths(gs, git, repo_path, tmp_path):
    """The working directory and writable roots Codex tells the model are this machine's paths."""
    lines = _lines(MAIN_FILE)
    context = next(line for line in lines if "<environment_context>" in json.dumps(line))
    block = context["payload"]["content"][0]
    block["text"] = block["text"].replace("</environment_context>", "  <writable_roots>\n    <root>/srv/scratch</root>"
                                          "\n  </writable_roots>\n</environment_context>")
    agents = {"timestamp": context["timestamp"], "type": "response_item", "payload": {
        "type": "message", "role": "user",
        "content": [{"type": "input_text", "text": "# AGENTS.md instructions for /home/user/proj/src\n\nBe brief."}]}}
    lines.insert(lines.index(context) + 1, agents)
    rollout = _write(tmp_path / MAIN_FILE.name, lines)
    assert gs("import", str(rollout)).code == 0
    stored = git("show", f"{MAIN}:session.jsonl")
    assert "/home/user" not in stored and "/srv/scratch" not in stored
    with GitStore(repo_path) as store:
        asides = [e.data["content"] for e in store.load(MAIN).events if e.data.get("name") == "codex user context"]
    assert f"<cwd>{LOCAL_PATH}</cwd>" in asides[0] and f"<root>{LOCAL_PATH}</root>" in asides[0]
    assert "<approval_policy>on-request</approval_policy>" in asides[0]  # the rest of the context stays
    assert asides[1] == f"# AGENTS.md instructions for {LOCAL_PATH}/src\n\nBe brief."
    assert "nothing new" in gs("import", str(rollout)).err
    kept = tmp_path / "kept.git"
    assert gs("import", "--keep-paths", str(rollout), env={"GS_REPO": str(kept)}).code == 0
    shown = subprocess.run(["git", "-C", str(kept), "show", f"{MAIN}:session.jsonl"], capture_output=True, text=True)
    assert "<cwd>/home/user/proj</cwd>" in shown.stdout and "<root>/srv/scratch</root>" in shown.stdout


def _contexts(cwd: str, context: str) -> list[str]:
    """The context asides of a one-turn rollout begun in ``cwd`` whose injected context is ``context``."""
    def line(minute: int, kind: str, payload: dict) -> str:
        return json.dumps({"timestamp": f"2026-03-02T09:{minute:02d}:00.000Z", "type": kind, "payload": payload})

    def said(role: str, text: str) -> dict:
        kind = "output_text" if role == "assistant" else "input_text"
        return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}

    text = "".join(f"{x}\n" for x in (
        line(0, "session_meta", {"id": "s-paths", "timestamp": "2026-03-02T09:00:00.000Z", "cwd": cwd}),
        line(0, "response_item", said("user", context)),
        line(1, "response_item", said("user", "hi")),
        line(2, "response_item", said("assistant", "hello"))))
    conv = codex.read_rollout(io.BytesIO(text.encode()))
    return [e.data["content"] for chunk in conv.branches[0][1] for e in chunk
            if e.data.get("name") == "codex user context"]


def test_a_root_cwd_is_no_path_to_replace_and_every_plain_writable_root_is_replaced():
    """A cwd of ``/`` is in every closing tag: replaced as text it would wreck the context. The older
    plain-text context lists its writable roots on one line: each of them is a local path."""
    xml = "<environment_context>\n  <cwd>/</cwd>\n  <approval_policy>never</approval_policy>\n</environment_context>"
    assert _contexts("/", xml) == [xml.replace("<cwd>/</cwd>", f"<cwd>{LOCAL_PATH}</cwd>")]
    plain = ("<environment_context>\nCurrent working directory: /home/bob/p\n"
             "Writable roots: /home/bob/p, /tmp/bobscratch\n</environment_context>")
    [aside] = _contexts("/home/bob/p", plain)
    assert "/home/bob" not in aside and "/tmp/bobscratch" not in aside
    assert f"Writable roots: {LOCAL_PATH}, {LOCAL_PATH}\n" in aside


def test_a_compaction_inside_a_turn_is_that_turns(gs, repo_path, tmp_path, fake_api):
    """Codex compacts on its own when the context fills, also mid-task: the turn keeps its prompt
    and its answer in one commit, the summary between them, not a turn of its own without a prompt."""
    rid = "0199b000-0000-7000-8000-00000000000d"
    rollout = _write(tmp_path / f"rollout-2025-10-07T11-00-00-{rid}.jsonl", [
        _line(0, "session_meta", {"id": rid, "timestamp": "2025-10-07T11:00:00.000Z", "cwd": "/w"}),
        _line(1, "event_msg", {"type": "task_started"}), _said(1, "user", "Port the parser"),
        _said(2, "assistant", "Ported."), _line(2, "event_msg", {"type": "task_complete"}),
        _line(10, "event_msg", {"type": "task_started"}), _said(10, "user", "Now the tests"),
        _line(11, "response_item", {"type": "function_call", "name": "shell", "call_id": "c1",
                                   "arguments": json.dumps({"command": ["cargo", "test"]})}),
        _line(12, "response_item", {"type": "function_call_output", "call_id": "c1", "output": "ok"}),
        _line(13, "compacted", {"message": "The parser was ported; the tests were run.", "replacement_history": []}),
        _said(14, "assistant", "The tests pass."), _line(14, "event_msg", {"type": "task_complete"})])
    r = gs("import", str(rollout))
    assert r.code == 0, r.err
    sid = imported_session_id("codex", rid, "Port the parser")
    subjects = subprocess.run(["git", "--git-dir", str(repo_path), "log", "--format=%s", sid],
                              capture_output=True, text=True, check=True).stdout.splitlines()
    assert subjects[:2] == ["turn 2: Now the tests", "turn 1: Port the parser"], subjects
    with GitStore(repo_path) as store:
        events = store.load(sid).events
    last = [e.type for e in events[[e.type for e in events].index("turn/end") + 1:]]
    said_types = [t for t in last if t in ("user/message", "compaction/summary", "assistant/message")]
    assert said_types == ["user/message", "assistant/message", "compaction/summary", "assistant/message"], last
    assert gs("ask", "-S", sid, "and now?").code == 0
    messages = fake_api.requests[-1]["messages"]
    assert validate_messages(messages) is None
    assert "The tests pass." in json.dumps(messages) and "The parser was ported" in json.dumps(messages)


def _context(second: int, turn: str) -> list[dict]:
    """The lines Codex 0.171 opens a turn with: its context, the task, what it tells the model."""
    return [_line(second, "turn_context", {"turn_id": turn, "cwd": "/w", "model": "gpt-5-codex",
                                           "approval_policy": "never", "sandbox_policy": {"type": "read-only"}}),
            _line(second, "event_msg", {"type": "task_started", "turn_id": turn}),
            _said(second, "developer", "<permissions instructions>\nread-only\n</permissions instructions>"),
            _said(second, "user", "<environment_context>\n  <cwd>/w</cwd>\n</environment_context>")]


def _usage(second: int, given: int, said: int) -> dict:
    """A ``token_count`` line: the request before it read ``given`` tokens and wrote ``said``."""
    return _line(second, "event_msg", {"type": "token_count", "info": {
        "last_token_usage": {"input_tokens": given, "output_tokens": said, "total_tokens": given + said}}})


def _turn(second: int, prompt: str, reply: str) -> list[dict]:
    """A turn as Codex 0.171 writes it (``codex exec``, ``resume``, the TUI), said from ``second`` on."""
    turn = f"t{second}"
    return [*_context(second, turn), _said(second + 1, "user", prompt), _said(second + 2, "assistant", reply),
            _usage(second + 2, 100, 10), _line(second + 2, "event_msg", {"type": "task_complete", "turn_id": turn}),
            _line(second + 2, "world_state", {"cwd": "/w"})]


#: What Codex 0.171 puts before the summary in ``compacted.message`` and the history it goes on with.
_SUMMARY_LEAD = ("Another language model started to solve this problem and produced a summary of its thinking process. "
                 "Here is the summary produced by the other language model:")


def _compact(second: int, summary: str, prompts: list[str]) -> list[dict]:
    """``/compact`` as Codex 0.171 runs it: a task of its own whose one reply is the summary, then ``compacted``.

    Its ``message`` is the summary after Codex's lead; its ``replacement_history`` (what Codex
    sends from then on) holds the earlier prompts word for word, the context it injects, and
    that message as a user message.
    """
    def user(text: str) -> dict:
        return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}

    history = [*map(user, prompts), user("<environment_context>\n  <cwd>/w</cwd>\n</environment_context>"),
               user(f"{_SUMMARY_LEAD}\n{summary}")]
    message = f"{_SUMMARY_LEAD}\n{summary}"
    return [_line(second, "event_msg", {"type": "task_started", "turn_id": "compact"}),
            _said(second + 1, "assistant", summary), _usage(second + 1, 300, 40),
            _line(second + 1, "compacted", {
                "message": message, "replacement_history": history,
                "replacement_history_metadata": {"user_messages": len(prompts)}, "retained_context": [],
                "context_window_id": "w2", "previous_context_window_id": "w1",
                "latest_token_usage_record": {"input": 300, "output": 40}}),
            _line(second + 1, "world_state", {"cwd": "/w"}),
            _line(second + 1, "turn_context", {"turn_id": "compact", "cwd": "/w", "model": "gpt-5-codex"}),
            _line(second + 1, "event_msg", {"type": "task_complete", "turn_id": "compact"})]


_CID = "0199b000-0000-7000-8000-0000000000c1"
_PROMPTS = ["Port the parser to Rust", "Now the lexer", "Run the tests", "Ship it"]
_SUMMARY = "The parser and the lexer were ported to Rust."


def _compacted_rollout(tmp_path: Path, *, turns: int = 4) -> Path:
    """Four prompts, ``/compact`` after the second: the first ``turns`` of them written."""
    lines = [_line(0, "session_meta", {"id": _CID, "timestamp": "2025-10-07T11:00:00.000Z", "cwd": "/w",
                                       "base_instructions": {"text": "You are Codex."}})]
    for n, prompt in enumerate(_PROMPTS[:turns]):
        if n == 2:
            lines += _compact(21, _SUMMARY, _PROMPTS[:2])
        lines += _turn(1 + 10 * n + (10 if n >= 2 else 0), prompt, f"Done: {prompt.lower()}.")
    return _write(tmp_path / f"rollout-2025-10-07T11-00-00-{_CID}.jsonl", lines)


def test_a_compact_task_is_no_turn_its_summary_opens_the_next_turn_and_covers_the_ones_before(gs, git, repo_path,
                                                                                              tmp_path):
    """``/compact`` is a task of its own in Codex 0.171; its reply is the summary, not a turn's answer."""
    r = gs("import", str(_compacted_rollout(tmp_path)))
    assert r.code == 0, r.err
    sid = imported_session_id("codex", _CID, _PROMPTS[0])
    git("fsck", "--strict")
    assert [s for s in git("log", "--format=%s", sid).splitlines()] == [
        *(f"turn {n}: {prompt}" for n, prompt in reversed(list(enumerate(_PROMPTS, 1)))), f"import: codex {_CID}"]
    with GitStore(repo_path) as store:
        events = store.load(sid).events
    [summary] = [e for e in events if e.type == "compaction/summary"]
    replies = [e.data["content"] for e in events if e.type == "assistant/message"]
    assert replies == [f"Done: {p.lower()}." for p in _PROMPTS]  # the summary is no reply
    prompts = {e.data["content"]: e.seq for e in events if e.type == "user/message"}
    ends = [e.seq for e in events if e.type == "turn/end"]
    # It covers all before it (turns 1-2), keeps the two prompts Codex keeps, and is the model's work.
    assert summary.data == {"summary": f"{_SUMMARY_LEAD}\n{_SUMMARY}", "through": ends[1],
                            "kept": [prompts[p] for p in _PROMPTS[:2]], "model": "gpt-5-codex",
                            "usage": {"prompt_tokens": 300, "completion_tokens": 40, "total_tokens": 340}}
    assert ends[1] < summary.seq < prompts[_PROMPTS[2]]
    # In turn 3's commit, opening it (as the context of a turn does); said alone it is "up to turn 2".
    turn3 = git("log", "-1", "--format=%(trailers:key=Events,valueonly)", f"{sid}~1").strip()
    assert turn3.split("-")[0] == str(summary.seq)
    alone = commit_message(sid, events[:summary.seq + 1], summary.seq)
    assert alone.subject == "compact: the conversation up to turn 2"


def test_a_continued_session_is_sent_the_kept_prompts_the_summary_and_what_follows(gs, repo_path, tmp_path,
                                                                                  fake_api):
    """What Codex itself sends after ``/compact``: its replacement history (the kept prompts, then the summary)."""
    assert gs("import", str(_compacted_rollout(tmp_path))).code == 0
    sid = imported_session_id("codex", _CID, _PROMPTS[0])
    with GitStore(repo_path) as store:
        sent = derive_messages(store.load(sid).events)
    assert [(m["role"], m["content"]) for m in sent] == [
        ("user", _PROMPTS[0]), ("user", _PROMPTS[1]),
        ("user", f"Summary of the conversation so far:\n{_SUMMARY_LEAD}\n{_SUMMARY}"),
        ("user", _PROMPTS[2]), ("assistant", "Done: run the tests."), ("user", _PROMPTS[3]),
        ("assistant", "Done: ship it.")]
    assert gs("ask", "-S", sid, "and now?").code == 0
    messages = fake_api.requests[-1]["messages"]
    assert validate_messages(messages) is None
    assert [m for m in messages if m["role"] != "system"] == [*sent, {"role": "user", "content": "and now?"}]


def test_a_compaction_the_file_ends_with_waits_for_the_turn_it_opens(gs, git, tmp_path):
    """``/compact`` then quit: nothing of it is written until the next turn, whose commit it opens."""
    rollout = _compacted_rollout(tmp_path, turns=2)
    _write(rollout, _lines(rollout) + _compact(21, _SUMMARY, _PROMPTS[:2]))
    r = gs("import", str(rollout))
    assert r.code == 0, r.err
    sid = imported_session_id("codex", _CID, _PROMPTS[0])
    tip = git("rev-parse", sid).strip()
    assert "compaction/summary" not in git("show", f"{sid}:session.jsonl")
    _compacted_rollout(tmp_path)
    r = gs("import", str(rollout))
    assert r.code == 0 and f"{sid}: 2 turns new" in r.err, r.err
    assert git("rev-parse", f"{sid}~2").strip() == tip  # a fast-forward
    git("fsck", "--strict")


def test_an_automatic_compaction_mid_task_keeps_the_turn_and_its_reply(gs, repo_path, tmp_path):
    """The context full mid-task, Codex compacts within the turn: the summary's reply, if written, is no answer."""
    rid = "0199b000-0000-7000-8000-0000000000c2"
    summary = "The lexer was ported; the tests were run."
    rollout = _write(tmp_path / f"rollout-2025-10-07T11-00-00-{rid}.jsonl", [
        _line(0, "session_meta", {"id": rid, "timestamp": "2025-10-07T11:00:00.000Z", "cwd": "/w"}),
        *_context(1, "t1"), _said(2, "user", "Port the lexer"),
        _line(3, "response_item", {"type": "function_call", "name": "exec_command", "call_id": "c1",
                                   "arguments": json.dumps({"cmd": "cargo test"})}),
        _line(4, "response_item", {"type": "function_call_output", "call_id": "c1", "output": "ok"}),
        _said(5, "assistant", summary),
        _line(5, "compacted", {"message": summary, "replacement_history": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Port the lexer"}]}]}),
        _said(6, "assistant", "The tests pass."), _line(6, "event_msg", {"type": "task_complete", "turn_id": "t1"})])
    assert gs("import", str(rollout)).code == 0
    with GitStore(repo_path) as store:
        events = store.load(imported_session_id("codex", rid, "Port the lexer")).events
    said = [(e.type, e.data.get("content", e.data.get("summary"))) for e in events
            if e.type in ("user/message", "assistant/message", "compaction/summary")]
    assert said == [("user/message", "Port the lexer"), ("assistant/message", ""),
                    ("compaction/summary", summary), ("assistant/message", "The tests pass.")]
    assert [m["content"] for m in derive_messages(events)] == [
        "Port the lexer", f"Summary of the conversation so far:\n{summary}", "The tests pass."]


def test_a_session_resumed_in_another_folder_fast_forwards(gs, git, tmp_path):
    """The paths left out of a turn's context are those the lines before it name: a later turn's new
    working directory does not change what an earlier commit holds (the next import would fork it)."""
    rid = "0199b000-0000-7000-8000-0000000000c3"
    agents = _said(1, "user", "# AGENTS.md instructions for /w/sub\n\nBe brief.")
    first = [_line(0, "session_meta", {"id": rid, "timestamp": "2025-10-07T11:00:00.000Z", "cwd": "/w"}),
             *_turn(1, "Look at sub", "Looked.")]
    first.insert(5, agents)
    rollout = _write(tmp_path / f"rollout-2025-10-07T11-00-00-{rid}.jsonl", first)
    assert gs("import", str(rollout)).code == 0
    sid = imported_session_id("codex", rid, "Look at sub")
    tip = git("rev-parse", sid).strip()
    resumed = [{**line, "payload": {**line["payload"], "cwd": "/w/sub"}} if line["type"] == "turn_context" else line
               for line in _turn(30, "Now here", "Here.")]
    _write(rollout, first + resumed)
    r = gs("import", str(rollout))
    assert r.code == 0 and f"{sid}: 1 turn new" in r.err, r.err
    assert git("rev-parse", f"{sid}^").strip() == tip
    stored = git("show", f"{sid}:session.jsonl")
    assert "/w/sub" not in stored and f"instructions for {LOCAL_PATH}/sub" in stored
