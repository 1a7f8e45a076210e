"""Fault injection on the model connection: a turn run under each network fault.

Each fault is real: a refused port, a TCP reset, a body that ends mid-reply, a stream that
goes silent for longer than the read timeout, a 429 with ``Retry-After``, a 500, an event
that is not JSON — served by the fake API in ``fakeapi.py`` over real sockets. After each:
no traceback, one line saying what happened and what to do, exit status 1, the prompt and
any partial reply kept and marked in the committed log, ``git fsck --strict`` clean, and the
next ``gs ask`` on that session works.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from fakeapi import Reply, cut, drop, endless, error, garbage, reset, stall, text, trickle

from gitsessions.config import load_config
from gitsessions.errors import ConfigError, ProviderError
from gitsessions.provider.client import OpenAIProvider
from gitsessions.provider.wire import TextDelta

PROMPT = "tell me about refs"


@pytest.fixture
def fast_config(tmp_path):
    """A config that makes a stall fail after 1 s and a failed request not retried."""
    (tmp_path / "config.yaml").write_text("timeout: 1\nmax_retries: 0\n", "utf-8")


@pytest.fixture
def refused_url() -> Iterator[str]:
    """A URL whose port is bound but not listening: every connection is refused."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/v1"
    finally:
        sock.close()


def events_of(git, session: str = "work") -> list[dict]:
    """The committed events of ``session`` (``git show <session>:session.jsonl``), header dropped."""
    lines = git("show", f"{session}:session.jsonl").splitlines()
    return [json.loads(line) for line in lines[1:]]


def turns(events: list[dict]) -> list[list[dict]]:
    """The events split into turns (each from ``turn/start`` to ``turn/end``)."""
    out: list[list[dict]] = []
    for event in events:
        if event["type"] == "turn/start":
            out.append([])
        out[-1].append(event)
    return out


def the_error_line(err: str) -> str:
    """The one ``gs: ...`` line on stderr; fails on a traceback or an internal error."""
    assert "Traceback" not in err and "unexpected error" not in err, err
    lines = [line for line in err.splitlines() if line.startswith("gs: ")]
    assert len(lines) == 1, err
    return lines[0]


@dataclass(frozen=True)
class Fault:
    """One fault: the scripted reply (None: the connection is refused), what the user must
    read ({url} is the API's base URL), and the partial reply streamed before it."""

    reply: Reply | None
    message: str
    partial: str = ""


FAULTS = {
    "refused": Fault(None, "could not connect to {url} (connection refused); is the server running? "
                           "check the URL (OPENAI_BASE_URL, or base_url in config.yaml)"),
    "reset-before-first-byte": Fault(reset(), "the connection to {url} was closed before any reply"),
    "reset-mid-stream": Fault(reset("Refs are na"), "the connection to {url} was lost mid-reply; "
                                                    "the partial reply is kept; try again", "Refs are na"),
    "truncated-mid-stream": Fault(drop("Refs are na"), "the connection to {url} was lost mid-reply; "
                                                       "the partial reply is kept; try again", "Refs are na"),
    "stalled-stream": Fault(stall("Refs are", seconds=30),
                            "no data from {url} for 1 second mid-reply; the partial reply is kept; try again",
                            "Refs are"),
    "429-retry-after": Fault(error(429, "Rate limit reached", type="requests", headers={"Retry-After": "7"}),
                             "rate limited by {url} (429: Rate limit reached); retry in 7 seconds"),
    "500": Fault(error(500, "The server had an error", type="server_error"),
                 "the server at {url} failed (500: The server had an error); try again later"),
    "malformed-sse-line": Fault(garbage("data: {not json", after="Refs"),
                                "{url} sent something that is not a chat-completions stream", "Refs"),
    # one line without end, sent as fast as gs reads: read in one pass, refused at its limit
    "endless-event": Fault(endless("Refs are"), "the server at {url} sent one stream event over 32 MiB: that is "
                                                "no chat-completions stream; the partial reply is kept; check the URL",
                           "Refs are"),
    # a byte sooner than the read timeout, forever: no whole event is no progress
    "trickled-event": Fault(trickle("Refs are", 0.1), "{url} kept sending bytes but no whole stream event for "
                                                      "1 second mid-reply; the partial reply is kept; try again",
                            "Refs are"),
    "trickled-http-chunk": Fault(trickle("Refs are", 0.1, in_one_chunk=True),
                                 "{url} kept sending bytes but no whole stream event for 1 second mid-reply; "
                                 "the partial reply is kept; try again", "Refs are"),
}


@pytest.mark.parametrize("name", list(FAULTS))
def test_a_fault_fails_the_turn_keeps_what_arrived_and_the_next_ask_works(
        name, gs, git, fake_api, fast_config, refused_url, monkeypatch):
    fault = FAULTS[name]
    url = fake_api.base_url
    if fault.reply is None:
        url = refused_url
        monkeypatch.setenv("OPENAI_BASE_URL", url)
    else:
        fake_api.script(fault.reply)

    r = gs("ask", "-S", "work", PROMPT)

    assert r.code == 1, r.err
    assert fault.message.format(url=url) in the_error_line(r.err)
    assert "turn saved (error)" in r.err and "turn saved (completed)" not in r.err
    assert r.out.strip() == fault.partial
    (turn,) = turns(events_of(git))
    assert [e["data"]["content"] for e in turn if e["type"] == "user/message"] == [PROMPT]
    replies = [e["data"] for e in turn if e["type"] == "assistant/message"]
    if fault.partial:
        assert [(m["content"], m["interrupted"], m["finish_reason"]) for m in replies] == [
            (fault.partial, True, None)]
    else:
        assert replies == []
    end = turn[-1]
    assert end["type"] == "turn/end" and end["data"]["reason"] == "error"
    assert fault.message.format(url=url) in end["data"]["error"]
    git("fsck", "--strict")

    monkeypatch.setenv("OPENAI_BASE_URL", fake_api.base_url)
    again = gs("ask", "-S", "work", "and branches?")
    assert (again.code, again.out.strip()) == (0, "echo: and branches?"), again.err
    assert [t[-1]["data"]["reason"] for t in turns(events_of(git))] == ["error", "completed"]
    git("fsck", "--strict")


def test_a_reply_cut_mid_stream_is_an_error_not_a_completed_turn(gs, git, fake_api, fast_config):
    """The server hangs up after a few chunks and the body ends cleanly
    (no finish, no ``data: [DONE]``); that reply was cut, not finished."""
    fake_api.script(cut("Refs are na"))
    r = gs("ask", "-S", "work", PROMPT)

    assert r.code == 1, r.err
    line = the_error_line(r.err)
    assert f"the connection to {fake_api.base_url} was lost mid-reply; the partial reply is kept" in line
    assert "turn saved (error)" in r.err
    (turn,) = turns(events_of(git))
    (reply,) = [e["data"] for e in turn if e["type"] == "assistant/message"]
    assert (reply["content"], reply["interrupted"]) == ("Refs are na", True)
    assert turn[-1]["data"]["reason"] == "error"
    git("fsck", "--strict")
    assert gs("ask", "-S", "work", "again").code == 0


@pytest.mark.parametrize("reply, shown", [
    (text("pair: \ud83d\ude00 done", chunk_size=1), "pair: \U0001f600 done"),  # a pair split across chunks
    (text("lone \ud83d here", chunk_size=100), "lone \ufffd here"),
])
def test_surrogates_in_a_streamed_reply_are_well_formed_text(gs, git, fake_api, fast_config, reply, shown):
    """A model's lone surrogate crashed the printing of the reply (exit 70, the reply lost)."""
    fake_api.script(reply)
    r = gs("ask", "-S", "work", PROMPT)
    assert r.code == 0, r.err
    assert r.out.rstrip("\n") == shown
    (turn,) = turns(events_of(git))
    (message,) = [e["data"] for e in turn if e["type"] == "assistant/message"]
    assert message["content"] == shown


def test_a_stream_closed_by_done_without_a_finish_reason_is_complete(gs, git, fake_api, fast_config):
    """Some servers end a reply with ``data: [DONE]`` but never send a ``finish_reason``: that
    reply is whole (only a stream with neither was cut)."""
    fake_api.script(text("all of it", finish_reason=None))
    r = gs("ask", "-S", "work", PROMPT)
    assert r.code == 0, r.err
    (turn,) = turns(events_of(git))
    (reply,) = [e["data"] for e in turn if e["type"] == "assistant/message"]
    assert (reply["content"], reply["interrupted"]) == ("all of it", False)
    assert turn[-1]["data"]["reason"] == "completed"


def test_a_cut_reply_in_chat_is_an_error_and_the_chat_goes_on(gs, git, fake_api, fast_config):
    fake_api.script(cut("Refs are na"))
    r = gs("chat", "work", input=f"{PROMPT}\nand branches?\n")

    assert "Traceback" not in r.err and "unexpected error" not in r.err, r.err
    assert (f"error: the connection to {fake_api.base_url} was lost mid-reply; "
            "the partial reply is kept") in r.out
    assert "echo: and branches?" in r.out  # the chat stayed open for the next prompt
    assert r.code == 1  # a script learns that a prompt got no full reply
    first, second = turns(events_of(git))
    assert [(e["data"]["content"], e["data"]["interrupted"]) for e in first
            if e["type"] == "assistant/message"] == [("Refs are na", True)]
    assert first[-1]["data"]["reason"] == "error"
    assert second[-1]["data"]["reason"] == "completed"
    git("fsck", "--strict")


def test_max_retries_from_config_retries_a_500_before_the_reply(gs, fake_api, tmp_path):
    (tmp_path / "config.yaml").write_text("timeout: 5\nmax_retries: 1\n", "utf-8")
    fake_api.script(error(500, "hiccup", type="server_error"), text("recovered"))
    r = gs("ask", "-S", "work", PROMPT)
    assert (r.code, r.out.strip()) == (0, "recovered"), r.err
    assert len(fake_api.requests) == 2


# --------------------------------------------------------------------------- the provider alone


@pytest.fixture
def provider(fake_api) -> OpenAIProvider:
    """The real provider against the fake API: 1 s timeout, no retries."""
    return OpenAIProvider("gpt-4o-mini", "test-key", fake_api.base_url, timeout_s=1, max_retries=0)


def run(provider: OpenAIProvider) -> tuple[str, object]:
    """Stream one request; return the text that arrived and the outcome (the Completion or
    the ProviderError)."""
    got: list[str] = []
    outcome: object = None
    try:
        for item in provider.stream([{"role": "user", "content": "hi"}]):
            if isinstance(item, TextDelta):
                got.append(item.text)
            else:
                outcome = item
    except ProviderError as exc:
        outcome = exc
    return "".join(got), outcome


@pytest.mark.parametrize(("headers", "when"), [
    ({}, "wait a little and try again"),
    ({"Retry-After": "0.2"}, "retry in 1 second"),
    ({"retry-after-ms": "2500"}, "retry in 3 seconds"),
    ({"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, "retry in 1 second"),  # a date in the past
])
def test_429_says_when_to_retry(fake_api, provider, headers, when):
    fake_api.script(error(429, "slow down", headers=headers))
    _, outcome = run(provider)
    assert isinstance(outcome, ProviderError) and outcome.status == 429
    assert str(outcome) == f"rate limited by {fake_api.base_url} (429: slow down); {when}"


@pytest.mark.parametrize("line", ["data: 42", "data: [1, 2]", 'data: {"object": "nonsense"}'])
def test_an_event_that_is_not_a_chunk_is_not_a_stream(fake_api, provider, line):
    fake_api.script(garbage(line))
    _, outcome = run(provider)
    assert isinstance(outcome, ProviderError)
    assert str(outcome).startswith(f"{fake_api.base_url} sent something that is not a chat-completions stream")
    assert str(outcome).endswith("; check the URL (OPENAI_BASE_URL, or base_url in config.yaml)")


def test_a_finished_stream_is_a_completion(fake_api, provider):
    fake_api.script(text("Refs are names.", chunk_size=3))
    got, outcome = run(provider)
    assert got == "Refs are names."
    assert not isinstance(outcome, ProviderError)
    assert outcome.finish_reason == "stop"


def test_a_cut_before_any_text_says_nothing_is_kept(fake_api, provider):
    fake_api.script(cut())
    got, outcome = run(provider)
    assert got == ""
    assert str(outcome) == f"the connection to {fake_api.base_url} was lost mid-reply; try again"


def test_every_fault_message_is_one_line(fake_api, provider, refused_url):
    for reply in (cut("a"), reset(), reset("a"), stall("a", seconds=30), error(429, "x\ny"),
                  error(500, "multi\nline\nbody"), error(401, "bad key"), garbage()):
        fake_api.script(reply)
        _, outcome = run(provider)
        assert isinstance(outcome, ProviderError), reply
        assert "\n" not in str(outcome) and str(outcome) == str(outcome).strip()
    refused = OpenAIProvider("m", "k", refused_url, timeout_s=1, max_retries=0)
    _, outcome = run(refused)
    assert str(outcome).startswith(f"could not connect to {refused_url}")
    assert "lost" not in str(outcome)



@pytest.mark.parametrize(("text", "problem"), [
    ("timeout: 0\n", "timeout must be a number of seconds"),
    ("timeout: fast\n", "timeout must be a number of seconds"),
    ("max_retries: -1\n", "max_retries must be a whole number"),
    ("max_retries: true\n", "max_retries must be a whole number"),
])
def test_bad_timeout_or_retries_in_config_are_errors(tmp_path, text, problem):
    path = tmp_path / "config.yaml"
    path.write_text(text, "utf-8")
    with pytest.raises(ConfigError, match=problem):
        load_config({}, path)


def test_timeout_and_retries_default_and_read_from_config(tmp_path):
    path = tmp_path / "config.yaml"
    assert (load_config({}, path).timeout, load_config({}, path).max_retries) == (120.0, 2)
    path.write_text("timeout: 2.5\nmax_retries: 0\n", "utf-8")
    assert (load_config({}, path).timeout, load_config({}, path).max_retries) == (2.5, 0)


@pytest.mark.parametrize(("url", "problem"), [
    ("not-a-url", "must start with http:// or https://"),
    ("ftp://example.com/v1", "must start with http:// or https://"),
    ("localhost:11434/v1", "must start with http:// or https://"),
    ("http:///v1", "names no host after http:// (such as http://localhost:11434/v1)"),
])
def test_a_base_url_without_http_is_refused_before_anything_is_saved(gs, repo_path, url, problem):
    r = gs("ask", "hi", env={"OPENAI_BASE_URL": url})
    assert r.code == 1 and r.out == ""
    assert r.err == f"gs: OPENAI_BASE_URL {url!r} {problem}\n"
    assert not repo_path.exists()  # no session made for a prompt that could never be sent


def test_a_base_url_without_http_in_config_is_refused_naming_the_file(gs, tmp_path, repo_path):
    (tmp_path / "config.yaml").write_text("base_url: not-a-url\n", "utf-8")
    r = gs("ask", "hi", env={"OPENAI_BASE_URL": ""})
    assert r.code == 1
    assert r.err == (f"gs: config {tmp_path / 'config.yaml'}: base_url 'not-a-url' must start with "
                     "http:// or https://\n")
    assert not repo_path.exists()
    for good in ("http://localhost:11434/v1", "HTTPS://api.example.com/v1"):
        assert load_config({"OPENAI_BASE_URL": good}, tmp_path / "config.yaml").base_url == good
