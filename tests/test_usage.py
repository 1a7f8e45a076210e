"""Tokens and the context window (gitsessions.log.usage): the config's ``models:``, the sums, the words."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import gitsessions.config
from gitsessions.config import ModelSettings, Price, load_config
from gitsessions.errors import ConfigError
from gitsessions.log.events import Event
from gitsessions.log.usage import (
    UNNAMED,
    Spent,
    Tokens,
    context_used,
    context_window,
    cost,
    footer,
    price_of,
    report,
    spent,
    tokens_by_turn,
    tokens_of,
)


def _config(tmp_path: Path, text: str):
    path = tmp_path / "config.yaml"
    path.write_text(text, "utf-8")
    return load_config({}, path)


def _events(*usages: tuple[int, dict | None]) -> list[Event]:
    """A log of turns: each ``(turn, usage)`` one reply (a new turn/start when the turn number changes)."""
    out: list[Event] = []
    turn = 0
    for n, usage in usages:
        if n != turn:
            out.append(Event(len(out), 0, "turn/start", {"turn": n}))
            out.append(Event(len(out), 0, "user/message", {"content": "q"}))
            turn = n
        out.append(Event(len(out), 0, "assistant/message", {"content": "a", "usage": usage}))
    return out


def test_models_from_the_config_give_the_window_and_the_price(tmp_path):
    config = _config(tmp_path, "models:\n  big: {context: 128000, price: {input: 2.5, output: 10, cached: 1.25}}\n"
                               "  small: {context: 4096}\n")
    assert context_window(config, "big") == 128000
    assert context_window(config, "small", server=8192) == 4096  # the config wins over the server
    assert context_window(config, "other", server=8192) == 8192
    assert context_window(config, "other") is None  # unknown: said, never guessed
    assert config.models["big"].price == Price(2.5, 10.0, 1.25)
    assert config.models["small"].price is None


@pytest.mark.parametrize("text, says", [
    ("models: [a, b]\n", "models must map model names"),
    ("models: {m: {context: -1}}\n", "models.m.context must be a whole number"),
    ("models: {m: {context: 1000, window: 3}}\n", "models.m: models must map"),
    ("models: {m: {price: {input: 1}}}\n", "models.m.price must be"),
    ("models: {m: {price: {input: 1, output: x}}}\n", "models.m.price must be"),
])
def test_a_bad_models_entry_is_refused_saying_its_shape(tmp_path, text, says):
    with pytest.raises(ConfigError, match=says):
        _config(tmp_path, text)


def test_the_config_reads_the_models_and_usage_reads_the_config_never_the_other_way():
    # the settings of config.yaml are the config's; what they give (the window, the cost) is
    # usage's: config.py imports no module of log/, not even for its types
    tree = ast.parse(Path(gitsessions.config.__file__).read_text("utf-8"))
    imported = [("." * node.level) + (node.module or "") for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    assert ".errors" in imported  # what is read is what the file imports
    assert not [name for name in imported if name.startswith((".log", "gitsessions.log"))]
    assert ModelSettings.__module__ == Price.__module__ == "gitsessions.config"


def test_tokens_add_up_by_turn_with_cached_prompt_tokens():
    events = _events((1, {"prompt_tokens": 100, "completion_tokens": 10}),
                     (1, {"prompt_tokens": 120, "completion_tokens": 5,
                          "prompt_tokens_details": {"cached_tokens": 100}}),
                     (2, {"prompt_tokens": 200, "completion_tokens": 20}),
                     (3, None))  # a reply without usage counts nothing
    by_turn = tokens_by_turn(events)
    assert by_turn == {1: Tokens(220, 15, 100, 2), 2: Tokens(200, 20, 0, 1)}
    assert context_used(events) == 220  # the last reply that reported usage
    assert context_used(_events((1, None))) is None


def test_cost_prices_cached_prompt_tokens_apart():
    tokens = Tokens(prompt=1_000_000, completion=500_000, cached=400_000, requests=3)
    assert cost(tokens, Price(2.0, 8.0, 0.5)) == pytest.approx(0.6 * 2 + 0.4 * 0.5 + 0.5 * 8)
    assert cost(tokens, Price(2.0, 8.0)) == pytest.approx(2.0 + 4.0)  # no cached price: as input


def test_the_footer_and_the_report_say_the_share_or_that_the_window_is_unknown():
    events = _events((1, {"prompt_tokens": 900, "completion_tokens": 100}))
    events[-1].data["model"] = "m"
    assert footer("m", events, 4000) == "m · context 25% of 4,000 · 1,000 tokens this session"
    assert "window unknown" in footer("m", events, None)
    lines = report("m", events, 4000, {"m": ModelSettings(price=Price(1.0, 2.0))})
    assert lines[1] == "this turn: 900 prompt (0 cached) + 100 completion = 1,000 tokens in 1 request · $0.0011"
    assert lines[3] == "context 25% of 4,000"
    assert report("m", events, None, {})[-1].startswith("cost: no price configured for m")


def test_each_request_is_priced_at_the_price_of_the_model_that_answered_it():
    """A reply's ``model`` is the server's (a dated snapshot: priced as its base); one naming none is unpriced."""
    events = _events((1, {"prompt_tokens": 1_000_000, "completion_tokens": 0}),
                     (2, {"prompt_tokens": 0, "completion_tokens": 1_000_000}),
                     (3, {"prompt_tokens": 5, "completion_tokens": 5}),
                     (4, {"prompt_tokens": 5, "completion_tokens": 5}))
    replies = [ev for ev in events if ev.type == "assistant/message"]
    for ev, name in zip(replies, ("gpt-4o-2024-08-06", "gpt-4-0613", "local", None), strict=True):
        if name:
            ev.data["model"] = name
    models = {"gpt-4o": ModelSettings(price=Price(2.0, 8.0)), "gpt-4": ModelSettings(price=Price(30.0, 60.0))}
    assert price_of(models, "gpt-4o-mini") is None  # another model, not a snapshot of gpt-4o
    paid = spent(events, models)
    assert paid == Spent(pytest.approx(2.0 + 60.0), 2, ("local", UNNAMED))
    lines = report("gpt-4o", events, None, models)
    assert lines[2].endswith(" · $62.0000 (local, an unnamed model: no price)")
    assert lines[-1] == "cost: no price configured for local, an unnamed model (models.NAME.price in config.yaml)"


def test_a_compaction_request_counts_in_what_the_session_spent_not_in_its_context():
    events = _events((1, {"prompt_tokens": 100, "completion_tokens": 10}))
    events.append(Event(len(events), 0, "compaction/summary",
                        {"summary": "s", "usage": {"prompt_tokens": 110, "completion_tokens": 7}}))
    assert tokens_of(events) == Tokens(210, 17, 0, 2)
    assert context_used(events) == 110  # the summary request read the context; it is not the context


def test_usage_and_the_footer_count_the_same_requests_after_a_compaction():
    """One rule: /usage's session total is the footer's, the summary's request among them."""
    events = _events((1, {"prompt_tokens": 100, "completion_tokens": 10}))
    events.append(Event(len(events), 0, "compaction/summary",
                        {"summary": "s", "usage": {"prompt_tokens": 110, "completion_tokens": 7}}))
    assert footer("m", events, None).endswith(" · 227 tokens this session")
    assert report("m", events, None, {})[2].startswith(
        "this session: 210 prompt (0 cached) + 17 completion = 227 tokens in 2 requests")
    assert sum(tokens_by_turn(events).values(), Tokens()) == tokens_of(events)


def test_the_context_share_after_a_compaction_is_said_to_be_from_before_it():
    events = _events((1, {"prompt_tokens": 900, "completion_tokens": 100}))
    events.append(Event(len(events), 0, "compaction/summary",
                        {"summary": "s", "usage": {"prompt_tokens": 1000, "completion_tokens": 50}}))
    assert report("m", events, 4000, {})[3] == (
        "context 25% of 4,000 before the compaction (the next reply counts what is sent now)")
    for type_, data in (("turn/start", {"turn": 2}), ("user/message", {"content": "q"}),
                        ("assistant/message", {"content": "a",
                                               "usage": {"prompt_tokens": 80, "completion_tokens": 20}})):
        events.append(Event(len(events), 0, type_, data))
    assert report("m", events, 4000, {})[3] == "context 2% of 4,000"
