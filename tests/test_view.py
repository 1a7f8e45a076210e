"""The one event view (``gitsessions.log.view``) and every display that renders it, in-process.

``gs show``, ``gs log -p``, ``gs diff`` and the markdown/html exports must agree on what a
reader sees of a session: each test here builds a log, imports it with ``gs import`` (which
keeps a jsonl export event for event) and reads it back through the real commands, run
in-process with typer's runner.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from gitsessions.cli import app
from gitsessions.cli.display import render
from gitsessions.cli.display.output import Output
from gitsessions.cli.display.rendered import transcript
from gitsessions.log import view
from gitsessions.log.events import encode_log, make_event, make_header
from gitsessions.log.transcript import derive_messages

T = 1_700_000_000_000


def _events(*specs: tuple) -> list:
    """``(type, data)`` or ``(type, data, ignorable)`` tuples -> events with seq and time."""
    return [make_event(i, s[0], s[1], time_ms=T + 1000 * i, ignorable=len(s) > 2 and s[2])
            for i, s in enumerate(specs)]


def _turn(n: int | None, prompt: str, reply: str, **end: str) -> list[tuple]:
    start = {} if n is None else {"turn": n}
    return [("turn/start", start), ("user/message", {"content": prompt}), ("step/start", {"step": 1}),
            ("assistant/message", {"content": reply, "tool_calls": [], "model": "m"}),
            ("step/end", {"step": 1}), ("turn/end", {"reason": "completed", **end} if n is None
                                         else {"turn": n, "reason": "completed", **end})]


def gs(*args: str) -> str:
    """Run gs in-process; return its stdout (the command must succeed)."""
    result = CliRunner().invoke(app, list(args))
    assert result.exit_code == 0, (result.output, result.exception)
    return result.stdout


def _import(tmp_path: Path, sid: str, events: list) -> None:
    path = tmp_path / f"{sid}.jsonl"
    path.write_bytes(encode_log(make_header(sid, created=T), events))
    gs("import", str(path), "--as", sid)


# --------------------------------------------------------------------------- the view itself


def test_items_number_turns_mark_undone_and_skip_plumbing():
    events = _events(*_turn(1, "q1", "a1"), *_turn(None, "q2", "a2"),
                     ("session/undo", {"turn": 2}), ("session/title", {"title": "T"}))
    items = view.items(events)
    assert [type(i).__name__ for i in items] == ["TurnStart", "Message", "Message", "TurnStart", "Message",
                                                 "Message", "Undo", "TitleChange"]
    starts = [i for i in items if isinstance(i, view.TurnStart)]
    assert [(s.turn, s.undone) for s in starts] == [(1, False), (2, True)]  # a start without a number: 1 + 1
    assert [i.turn for i in items] == [1, 1, 1, 2, 2, 2, 2, 2]
    assert items[1] == view.Message(1, T + 1000, 1, "user/message", role="user", text="q1")
    assert items[-2].undone == 2 and items[-1].title == "T"


def test_items_of_tools_notes_and_imported_messages():
    events = _events(
        ("import/message", {"role": "system", "content": "Be terse."}, True),
        ("turn/start", {"turn": 1}), ("user/message", {"content": "time?"}),
        ("assistant/message", {"content": None, "interrupted": True,
                               "tool_calls": [{"id": "c1", "name": "clock", "arguments": "{}"}, "junk"]}),
        ("tool/call", {"id": "c1", "name": "clock"}),
        ("tool/result", {"id": "c1", "name": "clock", "content": "noon", "is_error": True,
                         "error_code": "not_started"}),
        ("assistant/message", {"content": "", "tool_calls": []}),
        ("turn/end", {"turn": 1, "reason": "error", "error": "cut"}),
        ("session/fork", {"from": "w@abc"}), ("compaction/summary", {"summary": "so far"}))
    items = view.items(events)
    imported, start, user, reply, result, empty, end, fork, summary = items
    assert start.turn == 1 and user.text == "time?"
    assert imported.imported and imported.role == "system" and imported.text == "Be terse." and imported.turn == 0
    assert reply.text == "" and reply.interrupted and reply.tool_calls == (view.ShownCall("c1", "clock", "{}"),)
    assert not reply.empty and empty.empty
    assert (result.call_id, result.text, result.is_error, result.error_code) == ("c1", "noon", True, "not_started")
    assert (end.reason, end.error) == ("error", "cut")
    assert fork.details == (("from", "w@abc"),) and summary.text == "so far"
    assert [view.is_message(i) for i in items] == [True, False, True, True, True, True, False, False, False]


def test_a_summary_says_what_the_next_request_sends_beside_it(tmp_path):
    """A summary that keeps prompts, or leaves later messages out of what it covers, said only "summary up to"."""
    specs = [*_turn(1, "q1", "a1"), *_turn(2, "q2", "a2"),
             ("compaction/summary", {"summary": "s1", "kept": [1, 7]}),  # seqs 1 and 7: q1 and q2
             *_turn(3, "q3", "a3"),
             ("compaction/summary", {"summary": "s2", "through": 14})]  # seq 14: q3, so a3 is left out
    events = _events(*specs)
    first, second = [i for i in view.items(events) if isinstance(i, view.Summary)]
    assert (first.upto, first.kept, first.after, first.void) == (2, 2, (), False)
    assert (second.upto, second.kept, second.after, second.void) == (3, 0, ("assistant",), False)
    sent = derive_messages(events)  # what the fields say is what is sent
    assert [m["role"] for m in sent] == ["user", "assistant"] and sent[0]["content"].endswith("s2")
    _import(tmp_path, "w", events)
    shown = gs("show", "w").splitlines()
    assert "(summary of the conversation up to turn 2, sent after the 2 prompts it keeps: s1)" in shown
    assert "(summary of the conversation up to turn 3, then the reply it keeps: s2)" in shown
    log = gs("log", "w", "-p").splitlines()
    assert "    (summary up to turn 2, sent after the 2 prompts it keeps: s1)" in log
    assert "    (summary up to turn 3, then the reply it keeps: s2)" in log
    # a summary that only stands for what came before it says no more than that
    plain = [i for i in view.items(_events(*_turn(1, "q", "a"), ("compaction/summary", {"summary": "s"})))
             if isinstance(i, view.Summary)]
    assert [(i.kept, i.after, i.void) for i in plain] == [(0, (), False)]


def test_a_summary_an_undo_voided_says_it_is_not_sent():
    calls = [{"id": "c", "name": "clock", "arguments": "{}"}]
    events = _events(*_turn(1, "q1", "a1"),
                     ("turn/start", {"turn": 2}), ("user/message", {"content": "q2"}),
                     ("assistant/message", {"content": "", "tool_calls": calls}),
                     ("tool/result", {"id": "c", "name": "clock", "content": "noon"}),
                     ("compaction/summary", {"summary": "s", "through": 7}),  # seq 7: q2; the call comes after
                     ("session/undo", {"turn": 1}))
    [summary] = [i for i in view.items(events) if isinstance(i, view.Summary)]
    assert summary.void and "q1" not in json.dumps(derive_messages(events))
    lines = "".join(render.transcript_lines(events)).splitlines()
    assert "(summary of the conversation up to turn 2, not sent: a turn it covers was undone after it: s)" in lines
    [kept] = [i for i in view.items(events[:-1]) if isinstance(i, view.Summary)]  # before the undo
    assert (kept.after, kept.void) == (("assistant", "tool"), False)
    assert "(summary of the conversation up to turn 2, then the 2 messages it keeps: s)" in \
        "".join(render.transcript_lines(events[:-1])).splitlines()


def test_items_are_frozen():
    item = view.items(_events(("session/title", {"title": "x"})))[0]
    with pytest.raises(AttributeError):
        item.title = "y"  # type: ignore[misc]


# --------------------------------------------------------------------------- every display agrees


def test_imported_messages_show_everywhere(tmp_path):
    """A system prompt an import kept aside was in the exports only, not in show, log -p or diff."""
    (tmp_path / "chat.json").write_text(json.dumps([
        {"role": "system", "content": "You are terse."}, {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"}]))
    gs("import", str(tmp_path / "chat.json"), "--as", "imp")
    assert "system (imported, not sent to the model) › You are terse." in gs("show", "imp").splitlines()
    assert "    system (imported): You are terse." in gs("log", "imp", "-p").splitlines()
    added = json.loads(gs("log", "imp", "-p", "--json"))[0]["added"]
    assert added[0] == {"seq": 0, "turn": 0, "type": "import/message", "role": "system",
                        "content": "You are terse.", "imported": True}
    _import(tmp_path, "other", _events(*_turn(1, "q", "a")))
    diff = gs("diff", "other", "imp")
    assert "+++ only in imp (3 messages)" in diff and "    system (imported): You are terse." in diff
    for fmt in ("markdown", "html"):
        assert "You are terse." in gs("export", "imp", "-f", fmt)


#: Codex's own base prompt, as an import keeps it: the first line and 212 more.
INSTRUCTIONS = "You are Codex, a coding agent based on GPT-5. You and the user share the same workspace.\n" + \
    "\n".join(f"rule {i}" for i in range(1, 213))


def _kept_aside() -> list:
    return _events(("import/message", {"role": "system", "content": INSTRUCTIONS, "name": "codex instructions"}, True),
                   ("turn/start", {"turn": 1}), ("user/message", {"content": "q"}),
                   ("import/message", {"role": "system", "content": "**Listing** I will run ls.",
                                       "name": "codex reasoning"}, True),
                   ("import/message", {"role": "tool", "content": "noon", "name": "clock"}, True),
                   ("import/message", {"role": "developer", "content": "x" * 120}, True),
                   ("assistant/message", {"content": "a", "tool_calls": []}),
                   ("turn/end", {"turn": 1, "reason": "completed"}))


def test_what_an_import_kept_aside_is_one_line_named_by_what_it_is(tmp_path):
    """gs show of a Codex session opened with ~200 lines of Codex's own prompt, each labelled only "system"."""
    start = "You are Codex, a coding agent based on GPT-5. You and the user share the same w…"
    assert len(start) == render.FOLDED_CHARS
    _import(tmp_path, "w", _kept_aside())
    shown = gs("show", "w").splitlines()
    assert shown[:5] == [
        f"codex instructions (imported, not sent to the model) › {start} [212 more lines: gs show --full]",
        "── turn 1 ──", "you › q",
        "codex reasoning (imported, not sent to the model) › **Listing** I will run ls.",  # short: as it is
        "tool clock (imported, not sent to the model) › noon"]
    assert shown[5] == f"developer (imported, not sent to the model) › {'x' * 79}… [41 more characters: gs show --full]"
    assert not [line for line in shown if "rule" in line]
    full = gs("show", "w", "--full")
    assert f"codex instructions (imported, not sent to the model) › {INSTRUCTIONS}\n" in full and "rule 212" in full
    assert f"› {'x' * 120}\n" in full and "gs show --full" not in full
    log = gs("log", "w", "-p").splitlines()
    assert f"    codex instructions (imported): {start} [212 more lines: gs show --full]" in log
    assert "    tool clock (imported): noon" in log and not [line for line in log if "rule" in line]
    added = json.loads(gs("log", "w", "-p", "--json"))[0]["added"]
    assert added[0] == {"seq": 0, "turn": 0, "type": "import/message", "role": "system", "content": INSTRUCTIONS,
                        "imported": True, "name": "codex instructions"}
    assert "### codex instructions · " in gs("export", "w", "-f", "markdown")
    assert '<span class="role">codex reasoning</span>' in gs("export", "w", "-f", "html")


@pytest.mark.parametrize("columns", [120, 70])
def test_the_rendered_transcript_folds_what_an_import_kept_aside_to_one_line(monkeypatch, columns):
    """On a terminal (rich), as in the plain text: one line that fits the width, whole with --full."""
    monkeypatch.setenv("COLUMNS", str(columns))
    monkeypatch.setattr(Output, "color", lambda self, stream=None: True)
    lines = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", "".join(transcript(_kept_aside(), Output()))).splitlines()
    head = "codex instructions (imported, not sent to the model) › You are Codex,"
    assert lines[0].startswith(head) and len(lines[0]) <= columns and lines[1] == "── turn 1 ──"
    if columns == 120:
        assert lines[0].endswith("… [212 more lines: gs show --full]"), lines[0]
    else:  # the label alone nearly fills it: the line is cut at the edge, not wrapped
        assert lines[0].endswith("…"), lines[0]
    assert not [line for line in lines if "rule" in line]
    whole = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", "".join(transcript(_kept_aside(), Output(), full=True)))
    assert "rule 1\n" in whole and "rule 212\n" in whole and "gs show --full" not in whole


def test_gs_show_of_an_imported_codex_session_opens_with_one_line_per_context_message(tmp_path):
    data = Path(__file__).parent / "data" / "codex"
    sid = gs("import", "--from", "codex", *map(str, sorted(data.glob("*.jsonl")))).split()[0]
    shown = gs("show", sid).splitlines()
    assert shown[1:4] == [
        "codex instructions (imported, not sent to the model) › You are Codex, a coding agent.",
        "codex developer context (imported, not sent to the model) › <permissions instructions> "
        "[2 more lines: gs show --full]",
        "codex user context (imported, not sent to the model) › <environment_context> [4 more lines: gs show --full]"]
    assert "  <approval_policy>on-request</approval_policy>" in gs("show", sid, "--full").splitlines()


def test_a_turn_without_a_number_is_numbered_in_every_display(tmp_path):
    """A turn/start another tool wrote without "turn" showed as "turn None" in show and log -p."""
    _import(tmp_path, "w", _events(*_turn(1, "q1", "a1"), ("turn/start", {}), ("user/message", {"content": "q2"}),
                                   ("turn/end", {"reason": "aborted"})))
    shown = gs("show", "w")
    assert "── turn 2 ──" in shown and "None" not in shown
    log = gs("log", "w", "-p")
    assert "    (turn 2 ended: aborted)" in log.splitlines() and "None" not in log
    assert "## Turn 2" in gs("export", "w", "-f", "markdown")


def test_an_interrupted_reply_without_text_is_marked_in_show(tmp_path):
    """gs show dropped the [interrupted] mark of a reply cut before any text; log -p kept it."""
    _import(tmp_path, "w", _events(
        ("turn/start", {"turn": 1}), ("user/message", {"content": "q"}),
        ("assistant/message", {"content": "", "interrupted": True}),
        ("assistant/message", {"content": "", "interrupted": True,
                               "tool_calls": [{"id": "c", "name": "clock", "arguments": "{}"}]}),
        ("turn/end", {"turn": 1, "reason": "interrupted"})))
    lines = gs("show", "w").splitlines()
    assert "assistant › [interrupted]" in lines and "  ⚙ clock({}) [interrupted]" in lines
    log = gs("log", "w", "-p").splitlines()
    assert "    assistant: [interrupted]" in log and "    ⚙ clock({}) [interrupted]" in log


def test_a_fork_event_shows_in_show_and_log(tmp_path):
    _import(tmp_path, "w", _events(*_turn(1, "q", "a"), ("session/fork", {"from": "x@abc"})))
    assert "(fork: from=x@abc)" in gs("show", "w").splitlines()
    assert "    (fork: from=x@abc)" in gs("log", "w", "-p").splitlines()
    assert "forked" in gs("export", "w", "-f", "markdown")


def test_a_permission_decision_is_a_note_in_every_display(tmp_path):
    """``tool/permission`` (who allowed a write or a command) was shown nowhere: it is a short note."""
    edit = {"id": "c1", "name": "edit_file", "arguments": "{}"}
    _import(tmp_path, "w", _events(
        ("turn/start", {"turn": 1}), ("user/message", {"content": "q"}),
        ("assistant/message", {"content": "", "tool_calls": [edit, {**edit, "id": "c2", "name": "run_command"}]}),
        ("tool/permission", {"id": "c1", "name": "edit_file", "answer": "once", "by": "user"}),
        ("tool/call", {"id": "c1", "name": "edit_file"}),
        ("tool/result", {"id": "c1", "name": "edit_file", "content": "edited", "is_error": False}),
        ("tool/permission", {"id": "c2", "name": "run_command", "answer": "deny", "by": "user"}),
        ("tool/result", {"id": "c2", "name": "run_command", "content": "denied", "is_error": True}),
        ("assistant/message", {"content": "ok", "tool_calls": []}), ("turn/end", {"turn": 1, "reason": "completed"}),
        ("turn/start", {"turn": 2}), ("user/message", {"content": "again"}),
        ("assistant/message", {"content": "", "tool_calls": [{**edit, "id": "c3"}]}),
        ("tool/permission", {"id": "c3", "name": "edit_file", "answer": "once", "by": "--yes"}),
        ("tool/permission", {"id": "c4", "name": "write_file", "answer": "deny", "by": "nobody"}),
        ("tool/permission", {"id": "c5", "name": "write_file", "answer": "once", "by": "session"}),
        ("turn/end", {"turn": 2, "reason": "completed"})))
    notes = [i.text for i in view.items(_events(("tool/permission", {"name": 3, "answer": "once", "by": "robot"})))]
    assert notes == ["a tool call allowed by robot"]  # another tool's shape, read tolerantly
    show = gs("show", "w").splitlines()
    assert show[show.index("  ↳ edited") - 1] == "  (edit_file allowed once)"  # indented as its call's lines
    assert ["  (run_command denied)", "  (edit_file allowed by --yes)", "  (write_file denied with no one to ask)",
            "  (write_file allowed for this session, as answered earlier)"] == [
        line for line in show if line.startswith("  (") and not line.startswith("  (edit_file allowed once")]
    log = gs("log", "w", "-p").splitlines()
    assert "    (edit_file allowed once)" in log and "    (run_command denied)" in log
    added = json.loads(gs("log", "w", "-p", "--json"))[-1]["added"]
    note = {"seq": 3, "turn": 1, "type": "tool/permission", "role": "note", "content": "edit_file allowed once"}
    assert note in added
    for fmt in ("markdown", "html"):
        assert "(run_command denied · " in gs("export", "w", "-f", fmt)


def test_every_visible_event_reaches_every_display(tmp_path):
    """One log with every kind of item: each one's text is in show, log -p, diff and both exports."""
    specs = [
        ("import/message", {"role": "developer", "content": "dev-note-1"}, True),
        *_turn(1, "prompt-2", "reply-3"),
        ("turn/start", {"turn": 2}), ("user/message", {"content": "prompt-4"}),
        ("assistant/message", {"content": "", "tool_calls": [{"id": "c", "name": "tool_5", "arguments": "{}"}]}),
        ("tool/call", {"id": "c", "name": "tool_5"}),
        ("tool/result", {"id": "c", "name": "tool_5", "content": "result-6", "is_error": False}),
        ("turn/end", {"turn": 2, "reason": "max-steps"}),
        ("session/title", {"title": "title-7"}), ("session/undo", {"turn": 2}),
        ("compaction/summary", {"summary": "summary-8"}),
    ]
    _import(tmp_path, "w", _events(*specs))
    _import(tmp_path, "empty", _events(*_turn(1, "x", "y")))
    needles = ["dev-note-1", "prompt-2", "reply-3", "prompt-4", "tool_5", "result-6", "max-steps", "title-7",
               "undo", "summary-8"]
    displays = {"show": gs("show", "w"), "log -p": gs("log", "w", "-p"), "diff": gs("diff", "empty", "w"),
                "markdown": gs("export", "w", "-f", "markdown"), "html": gs("export", "w", "-f", "html")}
    for name, text in displays.items():
        missing = [n for n in needles if n not in text]
        assert not missing, (name, missing)


def test_a_tool_result_of_several_lines_stays_under_its_arrow():
    """gs show: a listing a tool returned kept its later lines at column 0, under no turn's indent."""
    events = _events(("turn/start", {"turn": 1}), ("user/message", {"content": "ls"}),
                     ("assistant/message", {"content": None,
                                            "tool_calls": [{"id": "c1", "name": "ls", "arguments": "{}"}]}),
                     ("tool/result", {"id": "c1", "name": "ls", "content": "README.md\nsrc"}))
    lines = "".join(render.transcript_lines(events)).splitlines()
    assert lines[lines.index("  ↳ README.md") + 1] == "    src", lines
