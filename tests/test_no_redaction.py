"""The redactor that replaces nothing (``redact: false``): text and values go through as they are, at once."""

from __future__ import annotations

import ast
import pickle
from pathlib import Path

from gitsessions.log.events import make_event, make_header
from gitsessions.secrets.redact import NO_REDACTION, PATTERNS, Redactor, from_environment
from gitsessions.secrets.redact_many import redact_events
from gitsessions.secrets.redact_stream import StreamRedactor
from gitsessions.store import GitStore

SK = "sk-" + "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6"
TEXT = f"my key is {SK} and password = 'hunter2hunter2'"


def test_it_is_a_redactor_with_nothing_to_look_for():
    assert NO_REDACTION.replaces_nothing and Redactor().replaces_nothing
    assert NO_REDACTION.shapes == [] and NO_REDACTION.secrets == {}
    assert not Redactor({"a-long-secret": "S"}).replaces_nothing
    assert not Redactor(patterns=PATTERNS).replaces_nothing
    assert not from_environment({}).replaces_nothing
    assert pickle.loads(pickle.dumps(NO_REDACTION)).replaces_nothing  # as a worker process gets it


def test_it_changes_nothing():
    assert from_environment({}).text(TEXT) != TEXT  # what it lets through, a redactor would replace
    assert NO_REDACTION.text(TEXT) == TEXT
    value = {"content": TEXT, "list": [TEXT, (1, 2)], TEXT: None}
    assert NO_REDACTION.value(value) is value  # not even copied: what the event holds is what was given
    event = make_event(0, "user/message", {"content": TEXT})
    assert NO_REDACTION.event(event) is event
    events = [event, make_event(1, "assistant/message", {"content": TEXT, "tool_calls": []})]
    assert all(a is b for a, b in zip(redact_events(NO_REDACTION, events), events, strict=True))


def test_a_stream_over_it_holds_nothing_back():
    held = StreamRedactor(from_environment({}))
    assert held.feed("the key: sk-") != "the key: sk-"  # a redactor holds back what may become a secret
    stream = StreamRedactor(NO_REDACTION)
    for chunk in ["the key: sk-", "a1B2c3D4", "e5F6g7H8i9J0k1L2m3N4o5P6", " and more", "x" * 10_000]:
        assert stream.feed(chunk) == chunk
    assert stream.flush() == ""


def test_a_session_without_redaction_journals_streamed_text_at_once_and_keeps_it(repo_path):
    from gitsessions.writer.opening import open_session

    with GitStore(repo_path) as store:
        s = open_session(store, "w", new_header=make_header("w"), redactor=NO_REDACTION)
        try:
            s.append("turn/start", {"turn": 1})
            s.append("user/message", {"content": TEXT})
            s.append("step/start", {"step": 1})
            s.delta("the key: sk-")
            assert store.journal("w").path.read_bytes().endswith(b'{"delta": "the key: sk-"}\n')  # none held
            s.append("assistant/message", {"content": "the key: sk-", "tool_calls": []})
            s.end_turn("completed")
        finally:
            s.close()
        assert store.load("w").events[1].data["content"] == TEXT


def test_nothing_takes_none_for_redaction_off():
    root = Path(__file__).resolve().parents[1]
    optional = []
    for path in (root / "gitsessions").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
                optional += [f"{path.relative_to(root)}: {node.name}({a.arg})" for a in args
                             if a.annotation is not None and ast.unparse(a.annotation) == "Redactor | None"]
    assert not optional, f"redaction off is NO_REDACTION, not None: {optional}"
