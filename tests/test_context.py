"""What the model saw is in the log: the system prompt, the model and the
request options as events, sent with the next request, shown by gs show and gs log, carried
by a fork; /usage and the footer with the server's usage figures; tokens per turn in gs log.

Against the strict test server (tests/fakeapi.py): each request it takes is a valid transcript.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from fakeapi import FakeChatServer, text
from scripted import scripted_env

from gitsessions.chat.tools.toolset import Toolset, expand
from gitsessions.cli.repl.repl import Repl
from gitsessions.config import load_config
from gitsessions.provider.client import OpenAIProvider
from gitsessions.store import GitStore


def _body(fake_api: FakeChatServer, i: int = -1) -> dict:
    return fake_api.requests[i]


def test_system_model_and_options_are_events_sent_with_the_next_request(gs, fake_api, git):
    r = gs("chat", "work", input="/system be terse\nhi\n/model fake-model\n/set temperature 0.5\n"
                                 "/set max_tokens 64\nagain\n")
    assert r.code == 0, r.err
    assert "(model: fake-model from the next turn on)" in r.out
    first, second = _body(fake_api, 0), _body(fake_api, 1)
    assert first["model"] == "gpt-4o-mini" and "temperature" not in first
    assert first["messages"][0] == {"role": "system", "content": "be terse"}
    assert second["model"] == "fake-model"
    assert (second["temperature"], second["max_tokens"]) == (0.5, 64)
    assert second["messages"][0] == {"role": "system", "content": "be terse"}

    subjects = git("log", "--format=%s", "work").splitlines()
    assert subjects[:4] == ["turn 2: again", "options: temperature=0.5 max_tokens=64",
                            "options: temperature=0.5", "model: fake-model"]
    assert "system prompt: be terse" in subjects
    assert "Model: fake-model" in git("log", "-1", "--format=%B", "work")  # the trailer follows the switch
    shown = gs("show", "work")
    assert "(model: fake-model)" in shown.out and "(options: temperature=0.5 max_tokens=64)" in shown.out

    # The next run, and a fork from here, send what the log says: no flag needed.
    fake_api.reset()
    assert gs("ask", "-S", "work", "third").code == 0
    assert (_body(fake_api)["model"], _body(fake_api)["temperature"]) == ("fake-model", 0.5)
    assert gs("ask", "-S", "work~1", "--fork", "other", "from the past").code == 0
    assert (_body(fake_api)["model"], _body(fake_api)["max_tokens"]) == ("fake-model", 64)
    # -m is for this run: it is sent, and the session keeps its own model.
    assert gs("ask", "-m", "gpt-4o-mini", "-S", "work", "once").code == 0
    assert _body(fake_api)["model"] == "gpt-4o-mini"
    assert gs("ask", "-S", "work", "back").code == 0
    assert _body(fake_api)["model"] == "fake-model"


def test_system_on_the_chat_command_line_is_saved_and_sent(gs, fake_api, git):
    r = gs("chat", "pirate", "-s", "Speak like a pirate.", input="hello\n")
    assert r.code == 0, r.err
    assert _body(fake_api)["messages"][0] == {"role": "system", "content": "Speak like a pirate."}
    assert git("log", "--format=%s", "pirate").splitlines()[-1] == "system prompt: Speak like a pirate."
    r = gs("chat", "pirate", input="/system --clear\n/system\nagain\n")
    assert "(system prompt removed)" in r.out and "(no system prompt" in r.out
    assert _body(fake_api)["messages"][0]["role"] == "user"


def test_a_bad_option_or_model_is_refused_saying_what_to_do(gs, fake_api):
    r = gs("chat", "w", input="/set temperature hot\n/set temperature 9\n/set colour 1\n/model a b\nhi\n")
    assert r.code == 0, r.err
    assert "error: temperature takes a number, not 'hot'" in r.out
    assert "error: temperature must be from 0 to 2, not 9" in r.out
    assert "error: no option 'colour'; the options are: temperature, top_p, max_tokens, seed" in r.out
    assert "usage: /model NAME" in r.out
    assert "temperature" not in _body(fake_api)  # nothing refused was saved


def test_models_lists_what_the_server_offers_marking_the_current_one(gs, fake_api):
    r = gs("chat", "w", input="/models\n")
    assert "* gpt-4o-mini\n" in r.out and "  fake-model\n" in r.out


def test_models_of_a_server_that_answers_no_list_is_one_line_and_the_chat_goes_on(gs, fake_api):
    fake_api.models_answer = []  # as some local servers answer GET /models
    r = gs("chat", "w", input="/models\nhi\n")
    assert r.code == 0, (r.code, r.err)
    assert "error: the server at " in r.out and "answered GET /models with no list of models" in r.out, r.out
    assert "Traceback" not in r.out + r.err and "unexpected error" not in r.out + r.err
    assert len(fake_api.requests) == 1  # the chat went on to its turn


def test_usage_shows_the_server_figures_and_gs_log_the_tokens_per_turn(gs, fake_api, tmp_path):
    Path(tmp_path / "config.yaml").write_text("models: {gpt-4o-mini: {context: 1000, price: {input: 1, output: 2}}}\n")
    fake_api.script(text("one", usage={"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}),
                    text("two", usage={"prompt_tokens": 300, "completion_tokens": 50, "total_tokens": 350,
                                       "prompt_tokens_details": {"cached_tokens": 100}}))
    r = gs("chat", "w", input="first\nsecond\n/usage\n")
    assert r.code == 0, r.err
    assert "this turn: 300 prompt (100 cached) + 50 completion = 350 tokens in 1 request · $0.0004" in r.out
    assert "this session: 400 prompt (100 cached) + 70 completion = 470 tokens in 2 requests" in r.out
    assert "context 35% of 1,000" in r.out
    log = gs("log", "w").out
    assert "Tokens: 350" in log and "Tokens: 120" in log
    assert [row["tokens"] for row in gs("log", "w", "--json").json()] == [350, 120]


def test_the_window_is_the_servers_when_the_config_names_none_else_unknown(gs, fake_api):
    r = gs("chat", "w", input="hi\n/usage\n")
    assert "window unknown: set models.NAME.context in config.yaml" in r.out
    fake_api.props = {"default_generation_settings": {"n_ctx": 2048}}
    fake_api.script(text("ok", usage={"prompt_tokens": 500, "completion_tokens": 12, "total_tokens": 512}))
    r = gs("chat", "w", input="more\n/usage\n")
    assert "context 25% of 2,048" in r.out


@pytest.fixture
def store(repo_path: Path):
    with GitStore(repo_path) as s:
        yield s


def test_the_footer_after_each_reply_says_model_context_and_session_tokens(store, fake_api, tmp_path):
    config_file = tmp_path / "config.yaml"
    config_file.write_text("models: {fake-model: {context: 4000}}\n")
    config = load_config({}, config_file)
    fake_api.script(text("a", usage={"prompt_tokens": 900, "completion_tokens": 100, "total_tokens": 1000}),
                    text("b", usage={"prompt_tokens": 1900, "completion_tokens": 100, "total_tokens": 2000}))
    lines = iter(["hi", "/model fake-model", "again"])
    out: list[str] = []
    provider = OpenAIProvider("gpt-4o-mini", "k", fake_api.base_url)
    Repl(store, provider, "w", scripted_env(lines, out, config=config, footer=True)).run()
    footers = [line for line in "".join(out).splitlines() if "tokens this session" in line]
    assert footers == [
        "gpt-4o-mini · context 1,000 tokens (window unknown: set models.NAME.context in config.yaml) · "
        "1,000 tokens this session",
        "fake-model · context 50% of 4,000 · 3,000 tokens this session",
    ]


def test_a_model_that_cannot_call_tools_is_offered_none(store, fake_api):
    """The embedded SmolLM2 never calls tools: its requests carry none."""
    for calls_tools, offered in ((True, True), (False, False)):
        fake_api.reset()
        lines = iter(["hi"])
        provider = OpenAIProvider("gpt-4o-mini", "k", fake_api.base_url, calls_tools=calls_tools)
        Repl(store, provider, f"tools-{calls_tools}",
             scripted_env(lines, toolset=Toolset(expand(["time"])))).run()  # tools asked for: offered or not
        assert ("tools" in _body(fake_api)) is offered


def test_the_user_who_asked_for_tools_is_told_the_model_cannot_call_them():
    from gitsessions.log.request import offered_tools

    tools = [{"type": "function", "function": {"name": "read_file"}}]
    assert offered_tools(True, tools, asked=True) == (tools, None)
    assert offered_tools(False, tools) == ([], None)  # nothing asked: nothing to say
    none, note = offered_tools(False, tools, asked=True)
    assert none == [] and note is not None and "cannot call tools" in note


def test_the_configs_system_prompt_is_logged_as_a_new_sessions_first_event_and_a_clear_stays(
        gs, fake_api, git, tmp_path):
    """Config ``system:`` is what a new session starts with, in its log; the log alone says what is sent."""
    import json

    assert gs("ask", "-S", "old", "before the config").code == 0  # a session an earlier gs saved without one
    (tmp_path / "config.yaml").write_text("system: Be terse.\n")
    assert gs("ask", "-S", "work", "hi").code == 0
    assert _body(fake_api)["messages"][0] == {"role": "system", "content": "Be terse."}
    first = json.loads(git("show", "work:session.jsonl").splitlines()[1])
    assert (first["type"], first["data"]) == ("session/system", {"content": "Be terse."})
    assert "system prompt › Be terse." in gs("show", "work").out

    r = gs("chat", "work", input="/system\n/system --clear\nagain\n/compact\n")
    assert r.code == 0, r.err
    assert "(system prompt: Be terse.)" in r.out and "(system prompt removed)" in r.out
    assert _body(fake_api, -2)["messages"][0]["role"] == "user"  # a clear stays cleared
    assert _body(fake_api)["messages"][0]["role"] == "user"  # the compaction's request too

    assert gs("ask", "-s", "", "-S", "bare", "hi").code == 0  # cleared before it began: nothing to send
    assert _body(fake_api)["messages"][0]["role"] == "user"
    assert "session/system" not in git("show", "bare:session.jsonl")
    assert gs("ask", "-s", "Be kind.", "-S", "kind", "hi").code == 0  # -s replaces the config's
    assert [m["content"] for m in _body(fake_api)["messages"] if m["role"] == "system"] == ["Be kind."]
    assert git("show", "kind:session.jsonl").count("session/system") == 1

    r = gs("chat", "chatted", input="/compact\nhi\n/compact\n")  # the summary request sees what the model saw
    assert r.code == 0, r.err
    assert _body(fake_api)["messages"][0] == {"role": "system", "content": "Be terse."}

    assert "nothing was saved" in gs("chat", "empty", input="/system\n").err  # no turn: no session made
    assert gs("ask", "-S", "old", "after").code == 0  # an older session sends what its log says: no system prompt
    assert _body(fake_api)["messages"][0]["role"] == "user"


def test_usage_prices_each_reply_at_its_own_models_price_and_names_the_unpriced(gs, fake_api, tmp_path):
    Path(tmp_path / "config.yaml").write_text("models: {gpt-4o-mini: {price: {input: 1, output: 2}}}\n")
    fake_api.script(text("one", usage={"prompt_tokens": 1000, "completion_tokens": 500, "total_tokens": 1500}),
                    text("two", usage={"prompt_tokens": 3000, "completion_tokens": 50, "total_tokens": 3050}))
    r = gs("chat", "w", input="first\n/model fake-model\nsecond\n/usage\n")
    assert r.code == 0, r.err
    assert ("this session: 4,000 prompt (0 cached) + 550 completion = 4,550 tokens in 2 requests · $0.0020 "
            "(fake-model: no price)") in r.out  # gpt-4o-mini's reply at its price, not the whole at none
    assert "this turn: 3,000 prompt (0 cached) + 50 completion = 3,050 tokens in 1 request (fake-model: no price)" \
        in r.out
    assert "cost: no price configured for fake-model (models.NAME.price in config.yaml)" in r.out


def test_a_server_that_reports_no_usage_is_said_to_not_zero_tokens(store, fake_api):
    """llama-cpp-python's server (the embedded model's) answers ``usage: null``: say so, not "0 tokens"."""
    fake_api.script(text("a", reports_usage=False), text("b", reports_usage=False))
    lines = iter(["hi", "/usage"])
    out: list[str] = []
    provider = OpenAIProvider("gpt-4o-mini", "k", fake_api.base_url, window=2048)
    Repl(store, provider, "w", scripted_env(lines, out, config=load_config({}, None), footer=True)).run()
    said = "".join(out)
    assert "gpt-4o-mini · window 2,048 · usage not reported by this server\n" in said
    assert "this session: usage not reported by this server (1 reply)" in said
    assert "0 tokens" not in said and "context: no usage reported yet" not in said


def test_a_window_the_provider_was_started_with_is_the_servers(fake_api):
    """The embedded server answers /props 404, but gs started it with its n_ctx: that is its window."""
    assert OpenAIProvider("m", "k", fake_api.base_url).server_window() is None  # the fake tells nothing
    assert OpenAIProvider("m", "k", fake_api.base_url, window=2048).server_window() == 2048


def test_a_cleared_system_prompt_is_shown_as_removed(gs, fake_api, git):
    assert gs("ask", "-s", "Be terse.", "-S", "work", "hi").code == 0
    assert gs("chat", "work", input="/system --clear\n").code == 0
    shown = gs("show", "work").out
    assert "(system prompt removed)" in shown and "system prompt › \n" not in shown
    exported = gs("export", "work", "-f", "markdown").out
    assert "*(system prompt removed · " in exported and "*(no text)*" not in exported
    assert "system prompt removed" in gs("export", "work", "-f", "html").out
    assert git("log", "-1", "--format=%s", "work").strip() == "system prompt removed"


def test_an_option_past_what_a_request_carries_is_refused_with_its_range(gs, fake_api):
    r = gs("chat", "w", input="/set seed 99999999999999999999999\n/set temperature nan\n/set max_tokens 0\n"
                              "/set top_p inf\nhi\n")
    assert r.code == 0, r.err
    assert ("error: seed must be from 0 to 9223372036854775807 (the largest whole number a request carries), "
            "not 99999999999999999999999") in r.out
    assert "error: temperature must be from 0 to 2, not nan" in r.out
    assert "error: max_tokens must be 1 or more, not 0" in r.out
    assert "error: top_p must be from 0 to 1, not inf" in r.out
    assert "JSON" not in r.out
    assert not {"seed", "temperature", "max_tokens", "top_p"} & set(_body(fake_api))  # nothing refused was saved
