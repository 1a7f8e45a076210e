"""REPL slash commands for history (/open <rev>, /fork, /log, /title, /undo, /sessions), driven through
a pipe: the same loop as the terminal, one line per prompt or command."""

from __future__ import annotations

import time

from fakeapi import validate_messages


def _three_turns(gs):
    for q in ("one", "two", "three"):
        assert gs("ask", "-S", "w", q).code == 0


def test_open_past_revision_forks_only_when_sending(gs, git):
    _three_turns(gs)
    tip = git("rev-parse", "w").strip()
    r = gs("chat", "w", input="/open w~2\n/exit\n")
    assert r.code == 0, r.err
    assert "w-1" in r.out  # says where a message would go
    assert "w-1" not in git("branch", "--format=%(refname:short)")  # nothing sent: no fork
    r = gs("chat", "w", input="/open w~2\nafter one\n/exit\n")
    assert r.code == 0, r.err
    assert git("rev-parse", "w").strip() == tip
    assert git("merge-base", "w", "w-1").strip() == git("rev-parse", "w~2").strip()
    msgs = gs("show", "w-1", "--format", "json").json()["messages"]
    assert [m["content"] for m in msgs if m["role"] == "user"] == ["one", "after one"]
    assert "Forked-From: w@" in git("log", "-1", "--format=%B", "w-1")


def test_chat_on_a_past_revision_with_fork_name(gs, git):
    _three_turns(gs)
    r = gs("chat", "w~1", "--fork", "alt", input="branching\n")
    assert r.code == 0, r.err
    assert "alt" in r.err or "alt" in r.out
    assert git("log", "--format=%s", "alt").splitlines()[:2] == ["turn 3: branching", "fork: alt from w at "
                                                                  + git("rev-parse", "--short=7", "w~1").strip()]
    assert git("log", "--format=%s", "w").splitlines()[0] == "turn 3: three"


def test_fork_log_title_undo(gs, git, fake_api):
    _three_turns(gs)
    script = "/fork copy\n/log\n/title Café ☕ notes\n/undo\nafter undo\n/exit\n"
    r = gs("chat", "w", input=script)
    assert r.code == 0, r.err
    assert "forked w into copy" in r.out
    assert "turn 3: three" in r.out and "turn 1: one" in r.out  # /log
    assert "turn 3 dropped" in r.out
    # the model no longer sees turn 3, but the log keeps it
    sent = fake_api.requests[-1]["messages"]
    assert validate_messages(sent) is None
    assert [m["content"] for m in sent if m["role"] == "user"] == ["one", "two", "after undo"]
    events = gs("show", "copy", "--format", "json").json()["events"]
    assert any(e["type"] == "user/message" and e["data"]["content"] == "three" for e in events)
    assert any(e["type"] == "session/undo" and e["data"]["turn"] == 3 for e in events)
    rows = {row["id"]: row for row in gs("list", "--json").json()}
    assert rows["copy"]["title"] == "Café ☕ notes"
    subjects = git("log", "--format=%s", "copy").splitlines()
    assert subjects[:3] == ["turn 4: after undo", "undo: turn 3", "title: Café ☕ notes"]
    assert git("log", "--format=%s", "w").splitlines()[0] == "turn 3: three"  # untouched
    git("fsck", "--strict")


def test_repl_errors_are_one_line_and_the_loop_goes_on(gs):
    _three_turns(gs)
    script = "/open w~9\n/open nope\n/fork\n/fork w\n/title\nstill here\n/exit\n"
    r = gs("chat", "w", input=script)
    assert r.code == 0, r.err
    assert "has 3 saves" in r.out
    assert "no session 'nope'" in r.out
    assert "usage: /fork" in r.out and "already exists" in r.out and "usage: /title" in r.out
    assert "echo: still here" in r.out
    assert "Traceback" not in r.out + r.err


def test_undo_with_nothing_to_undo(gs):
    r = gs("chat", "fresh", input="/undo\n/exit\n")
    assert r.code == 0 and "no turn to undo" in r.out


def test_sessions_lists_newest_first_with_titles(gs):
    assert gs("ask", "-S", "zeta", "the older one").code == 0
    time.sleep(1.1)  # commit times have one-second resolution
    assert gs("ask", "-S", "alpha", "the newer one").code == 0
    r = gs("chat", "fresh", input="/sessions\n/exit\n")
    assert r.code == 0, r.err
    rows = [line for line in r.out.splitlines() if line[:2] in ("* ", "  ")]
    assert [row.split()[1 if row.startswith("*") else 0] for row in rows] == ["fresh", "alpha", "zeta"]
    assert rows[0] == "* fresh  0 messages  not saved"
    assert rows[1].endswith("  the newer one") and rows[2].endswith("  the older one")
