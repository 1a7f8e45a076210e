"""Importing Claude.ai's data export: a session per conversation, a commit per prompt.

The fixture (tests/data/claude_ai/) follows the export's documented shape: a conversation
with an attachment whose text Claude.ai extracted, an image file, a thinking block, a web
search (``tool_use`` and ``tool_result`` inside the reply), an artifact call without an id;
an older conversation without ``content`` blocks, without a name, with a prompt sent twice
(the first got no reply); an empty conversation; and ``users.json`` beside it.
"""

from __future__ import annotations

import copy
import json
import zipfile
from pathlib import Path

from fakeapi import validate_messages

from gitsessions.ids import imported_fork_id, imported_session_id
from gitsessions.store import GitStore

DATA = Path(__file__).parent / "data" / "claude_ai"
FIXTURE = DATA / "conversations.json"
REPORT_ID = "28f0e1a2-3b4c-4d5e-9f60-7a8b9c0d1e2f"
REPORT = imported_session_id("claude-ai", REPORT_ID, "Quarterly report summary")
OLD = imported_session_id("claude-ai", "0c1d2e3f-4a5b-4c6d-8e7f-901a2b3c4d5e")
T = 1741964400  # 2025-03-14T15:00:00Z, the report conversation's created_at


def _fixture() -> list:
    return json.loads(FIXTURE.read_text(encoding="utf-8"))


def _export(tmp_path: Path, convs: list) -> Path:
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(convs), encoding="utf-8")
    return path


def test_each_conversation_is_a_session_and_each_prompt_a_commit(gs, git, repo_path):
    r = gs("import", str(FIXTURE))
    assert r.code == 0, r.err
    assert r.out.split() == [REPORT, OLD] and OLD.startswith("claude-ai-")  # no name: the tool's
    assert "1 file, 2 sessions written, 5 turns, 0 skipped" in r.err  # the empty conversation adds nothing
    git("fsck", "--strict")
    assert git("log", "--format=%at %s", REPORT).splitlines() == [
        f"{T + 300} turn 3: Thanks. Make it a table.",
        f"{T + 60} turn 2: How does that compare with the industry?",
        f"{T + 5} turn 1: Summarise the attached report in three bullets.",
        f"{T} import: claude-ai {REPORT_ID}",
    ]
    with GitStore(repo_path) as store:
        report, old = store.load(REPORT), store.load(OLD)
    assert report.header["source"] == {"tool": "claude-ai", "id": REPORT_ID}
    prompt = next(e.data["content"] for e in report.events if e.type == "user/message")
    assert prompt == ("Summarise the attached report in three bullets.\n"
                      "[attachment q3-report.txt (txt, 184 bytes): its text is kept in the log, not sent]\n"
                      "[file chart.png: not imported]")
    aside = {e.data["name"]: e.data["content"] for e in report.events if e.type == "import/message"}
    assert all(e.ignorable for e in report.events if e.type == "import/message")
    assert aside["claude.ai attachment q3-report.txt"].startswith("Q3 revenue rose 12%.")
    assert "revenue, costs, headcount" in aside["claude.ai thinking"]
    replies = [e.data for e in report.events if e.type == "assistant/message"]
    assert [r["content"] for r in replies] == [
        "- Revenue up 12%\n- Costs down 3%\n- Headcount flat (41)", "Let me look that up.",
        "The industry median was 7%, so 12% is well above it.", "", "Here is the table."]
    assert replies[1]["tool_calls"] == [{"id": "toolu_01Web", "name": "web_search",
                                         "arguments": '{"query": "Q3 2024 industry revenue growth"}'}]
    assert replies[3]["tool_calls"][0]["id"] == "toolu_m-a3_0"  # no id in the export: one made from the message
    results = [e.data["content"] for e in report.events if e.type == "tool/result"]
    assert results == ["Industry outlook Q3 — https://example.com/outlook\nMedian growth was 7%.", "OK"]
    assert [e.data["content"] for e in old.events if e.type == "user/message"] == ["bonjour", "bonjour ?"]
    assert [e.data["content"] for e in old.events if e.type == "assistant/message"] == [
        "Bonjour ! Comment puis-je vous aider ?"]


def test_an_imported_conversation_continues_against_the_strict_server(gs, fake_api):
    assert gs("import", str(FIXTURE)).code == 0
    for sid in (REPORT, OLD):
        fake_api.reset()
        r = gs("ask", "-S", sid, "one more")
        assert r.code == 0, r.err
        messages = fake_api.requests[-1]["messages"]
        assert validate_messages(messages) is None
        assert messages[-1] == {"role": "user", "content": "one more"}
        assert not any("Headcount stayed flat" in str(m.get("content")) for m in messages)


def test_again_nothing_new_a_longer_one_fast_forwards_an_edited_one_forks(gs, git, tmp_path):
    convs = _fixture()
    assert gs("import", str(_export(tmp_path, convs))).code == 0
    refs = git("for-each-ref", "--format=%(refname) %(objectname)")
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 0 and r.out == "" and "nothing new in conversations.json" in r.err
    assert git("for-each-ref", "--format=%(refname) %(objectname)") == refs
    tip = git("rev-parse", REPORT).strip()
    grown = copy.deepcopy(convs)
    grown[0]["chat_messages"] += [
        {"uuid": "m-h4", "text": "And as a chart?", "sender": "human", "created_at": "2025-03-15T09:00:00Z",
         "attachments": [], "files": []},
        {"uuid": "m-a4", "text": "I cannot draw here.", "sender": "assistant", "created_at": "2025-03-15T09:00:05Z"}]
    r = gs("import", str(_export(tmp_path, grown)))
    assert r.code == 0, r.err
    assert r.out.split() == [REPORT] and f"{REPORT}: 1 turn new" in r.err
    assert git("rev-parse", f"{REPORT}^").strip() == tip
    # The user edited the third prompt in Claude.ai: the export now holds the new line only.
    edited = copy.deepcopy(convs)
    edited[0]["chat_messages"][4:] = [
        {"uuid": "m-h3b", "text": "Thanks. Make it a chart.", "sender": "human", "created_at": "2025-03-16T09:00:00Z"},
        {"uuid": "m-a3b", "text": "Here is a chart.", "sender": "assistant", "created_at": "2025-03-16T09:00:04Z"}]
    r = gs("import", str(_export(tmp_path, edited)))
    assert r.code == 0, r.err
    fork = imported_fork_id(REPORT, "m-a3b")
    assert r.out.split() == [fork]
    assert git("merge-base", REPORT, fork).strip() == git("rev-parse", f"{REPORT}~2").strip()
    git("fsck", "--strict")


def test_a_malformed_export_names_where_and_writes_nothing(gs, repo_path, tmp_path):
    convs = _fixture()
    convs[0]["chat_messages"][2]["sender"] = "robot"
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 1 and f"conversation 0 ('{REPORT_ID}'), message 2: sender 'robot'" in r.err, r.err
    convs = _fixture()
    convs[1]["created_at"] = "last week"
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 1 and "conversation 1 ('0c1d2e3f" in r.err and "'last week' is not an ISO 8601 time" in r.err
    assert not repo_path.exists()
    r = gs("import", "--from", "claude-ai", str(DATA / "users.json"))
    assert r.code == 1 and "cannot import users.json" in r.err  # not conversations
    r = gs("import", "--from", "claude-ai", str(_export(tmp_path, [])))
    assert r.code == 1 and "it holds no conversation with a prompt" in r.err


def test_the_export_zip_imports_as_its_conversations_json(gs, tmp_path):
    path = tmp_path / "data-2025-03-20-batch-0000.zip"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("users.json", (DATA / "users.json").read_bytes())
        z.writestr("projects.json", "[]")
        z.writestr("conversations.json", FIXTURE.read_bytes())
    r = gs("import", "--from", "claude-ai", str(path))
    assert r.code == 0, r.err
    assert r.out.split() == [REPORT, OLD]
    assert "nothing new" in gs("import", str(FIXTURE)).err


def test_attachments_titles_and_tool_output_are_redacted_before_anything_is_written(gs, git, tmp_path):
    secret = "sk-" + "ant-" + "api03-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6"
    convs = _fixture()[:1]
    convs[0]["name"] = f"key {secret}"
    messages = convs[0]["chat_messages"]
    messages[0]["attachments"][0]["extracted_content"] = f"ANTHROPIC_API_KEY={secret}\n"
    messages[3]["content"][2]["content"][0]["text"] = f"found {secret} online"
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 0, r.err
    sid = r.out.strip()
    dump = git("log", "-p", "--all", "--format=%B") + git("show", f"{sid}:session.jsonl")
    assert secret not in dump and secret not in r.err and secret not in sid
    assert dump.count("[REDACTED:") >= 3


def test_a_last_prompt_without_its_answer_waits_for_the_export_that_holds_it(gs, git, tmp_path):
    """Exported while Claude.ai was answering: the prompt's turn is not closed without its answer,
    so the later export fast-forwards with it rather than forking a copy."""
    convs = _fixture()
    asking = copy.deepcopy(convs)
    del asking[0]["chat_messages"][-1]  # "Thanks. Make it a table." has no answer yet
    lone = {"uuid": "c0ffee00-0000-4000-8000-00000000000c", "name": "Lone", "created_at": "2025-03-17T09:00:00Z",
            "chat_messages": [{"uuid": "n-1", "text": "Only a question", "sender": "human",
                               "created_at": "2025-03-17T09:00:01Z"}]}
    r = gs("import", str(_export(tmp_path, [*asking, lone])))
    assert r.code == 0 and r.out.split() == [REPORT, OLD], r.err
    assert "its last prompt has no answer yet" in r.err
    assert "skipped claude-ai conversation c0ffee00-0000-4000-8000-00000000000c" in r.err
    assert git("log", "-1", "--format=%s", REPORT).strip() == "turn 2: How does that compare with the industry?"
    tip = git("rev-parse", REPORT).strip()
    lone["chat_messages"].append({"uuid": "n-2", "text": "An answer.", "sender": "assistant",
                                  "created_at": "2025-03-17T09:00:05Z"})
    r = gs("import", str(_export(tmp_path, [*convs, lone])))
    assert r.code == 0 and f"{REPORT}: 1 turn new" in r.err, r.err
    lone_id = imported_session_id("claude-ai", lone["uuid"], "Lone")
    assert r.out.split() == [REPORT, lone_id]  # no fork
    assert git("rev-parse", f"{REPORT}^").strip() == tip
    assert git("log", "-1", "--format=%s", REPORT).strip() == "turn 3: Thanks. Make it a table."
    git("fsck", "--strict")


def test_a_conversation_renamed_in_claude_ai_is_retitled_on_the_next_import(gs, git, tmp_path):
    convs = _fixture()
    assert gs("import", str(_export(tmp_path, convs))).code == 0
    report = next(c for c in convs if c["uuid"] == REPORT_ID)
    report["name"] = "Q3 report, short"
    r = gs("import", str(_export(tmp_path, convs)))
    assert r.code == 0 and r.out.split() == [REPORT] and f"{REPORT}: titled 'Q3 report, short'" in r.err, r.err
    assert "nothing new" in gs("import", str(_export(tmp_path, convs))).err
