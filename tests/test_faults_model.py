"""Fault injection on the model connection (issue 9): a turn run under each network fault.

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

import pytest
from fakeapi import cut

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


def test_a_reply_cut_mid_stream_is_an_error_not_a_completed_turn(gs, git, fake_api, fast_config):
    """Issue 9 item 1: the server hangs up after a few chunks and the body ends cleanly
    (no finish, no ``data: [DONE]``); that reply was cut, not finished."""
    fake_api.script(cut("Refs are na"))
    r = gs("ask", "work", PROMPT)

    assert r.code == 1, r.err
    line = the_error_line(r.err)
    assert f"the connection to {fake_api.base_url} was lost mid-reply; the partial reply is kept" in line
    assert "turn saved (error)" in r.err
    (turn,) = turns(events_of(git))
    (reply,) = [e["data"] for e in turn if e["type"] == "assistant/message"]
    assert (reply["content"], reply["interrupted"]) == ("Refs are na", True)
    assert turn[-1]["data"]["reason"] == "error"
    git("fsck", "--strict")
    assert gs("ask", "work", "again").code == 0


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
