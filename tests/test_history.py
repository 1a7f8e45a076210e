"""History commands end to end: revisions in ``show``/``log``, lineage in ``list``/``log``,
``log -p``, ``log --graph``, ``diff``, ``search``, archive round trips — real ``gs``
processes against the fake API, checked with the real ``git`` CLI."""

from __future__ import annotations

import os
import re

import pytest
from fakeapi import drop, text, tool_calls

from gitsessions.log.commits import commit_message
from gitsessions.log.events import make_event, make_header
from gitsessions.store import GitStore
from gitsessions.writer.opening import open_session


def _three_turns(gs, git, sid: str = "w") -> list[str]:
    """Make session ``sid`` with turns q1, q2, q3 (one gs process); return commits, newest first."""
    r = gs("chat", sid, input="q1\nq2\nq3\n")
    assert r.code == 0, r.err
    commits = git("rev-list", sid).split()
    assert len(commits) == 3
    return commits


def _one_line_error(r, *needles: str) -> None:
    assert r.code == 1, (r.out, r.err)
    assert "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1, r.err
    for needle in needles:
        assert needle in r.err, (needle, r.err)


def test_done_when_fork_ask_show_rm_restore(gs, git):
    """The issue's done-when scenario, checked with plain git at every step."""
    _three_turns(gs, git)
    w_before = git("rev-parse", "w").strip()

    r = gs("fork", "w~1", "alt")
    assert r.code == 0, r.err
    assert git("merge-base", "w", "alt").strip() == git("rev-parse", "w~1").strip()

    r = gs("ask", "-S", "alt", "only on alt")
    assert r.code == 0, r.err
    assert git("rev-parse", "w").strip() == w_before  # a turn on alt leaves w where it was
    assert git("log", "-1", "--format=%s", "alt").strip() == "turn 3: only on alt"

    r = gs("ask", "-S", "w~2", "--fork", "old", "from the start")
    assert r.code == 0, r.err
    assert git("rev-parse", "w").strip() == w_before
    assert git("merge-base", "w", "old").strip() == git("rev-parse", "w~2").strip()
    assert "old" in git("branch", "--format=%(refname:short)").split()

    shown = gs("show", "w~1", "--format", "json").json()
    assert [m["content"] for m in shown["messages"] if m["role"] == "user"] == ["q1", "q2"]
    assert shown["commit"] == git("rev-parse", "w~1").strip()
    assert gs("show", "w~1").out.count("you › ") == 2
    assert gs("show", f"w@{git('rev-parse', 'w~2').strip()[:8]}", "--format", "json").json()["messages"][0][
        "content"] == "q1"
    # jsonl of a past revision is that commit's blob, byte for byte
    assert gs("show", "w^", "--format", "jsonl").out == git("show", "w^:session.jsonl")

    # rm / restore round trip: history intact in plain git while archived
    alt_log = git("log", "--format=%H %s", "alt")
    r = gs("rm", "alt")
    assert r.code == 0, r.err
    assert git("log", "--format=%H %s", "refs/archive/alt") == alt_log
    assert "alt" not in [row["id"] for row in gs("list", "--json").json()]
    archived = gs("list", "--archived", "--json").json()
    assert [row["id"] for row in archived] == ["alt"]
    assert archived[0]["forked_from"] == f"w@{git('rev-parse', 'w~1').strip()}"
    assert archived[0]["turns"] == 3 and archived[0]["commit"] == alt_log.split()[0]
    assert "alt ← w@" in gs("list", "--archived").out
    _one_line_error(gs("log", "alt"), "archived", "gs restore alt")
    r = gs("restore", "alt")
    assert r.code == 0, r.err
    assert git("log", "--format=%H %s", "alt") == alt_log
    assert gs("list", "--archived", "--json").json() == []
    git("fsck", "--strict")


def test_revision_errors_are_one_line_and_name_what_exists(gs, git):
    _three_turns(gs, git)
    for cmd in ("show", "log"):
        _one_line_error(gs(cmd, "nope"), "no session 'nope'", "w")
        _one_line_error(gs(cmd, "w~9"), "bad revision 'w~9'", "w~0 to w~2 exist")
        _one_line_error(gs(cmd, "w~5"), "bad revision 'w~5'")
        _one_line_error(gs(cmd, "w@zzzz"), "bad revision 'w@zzzz'", "hex")
        _one_line_error(gs(cmd, "w@0000"), "no commit 0000", "gs log w")
    _one_line_error(gs("diff", "w", "nope~1"), "no session 'nope'")
    _one_line_error(gs("diff", "w~7", "w"), "w~0 to w~2 exist")
    _one_line_error(gs("search", "q", "--session", "nope"), "no session 'nope'")
    # the revisions that do exist work in show and log alike
    assert gs("log", "w~2", "--oneline").out.splitlines() == [
        f"{git('rev-parse', '--short=7', 'w~2').strip()} turn 1: q1"]
    assert gs("log", "w^^", "--json").json()[0]["commit"] == git("rev-parse", "w~2").strip()


def test_clashing_ids_are_refused(gs, git):
    _three_turns(gs, git)
    assert gs("ask", "-S", "other", "x").code == 0
    _one_line_error(gs("fork", "w~1", "other"), "'other' already exists")
    _one_line_error(gs("fork", "w", "OTHER"), "already exists", "case")
    _one_line_error(gs("rename", "w", "other"), "'other' already exists")
    _one_line_error(gs("ask", "-S", "w~1", "--fork", "other", "hi"), "already exists")
    assert gs("rm", "other").code == 0
    # an archived id stays taken, so a restore can clash only under another id
    _one_line_error(gs("ask", "-S", "other", "a new one"), "already exists", "archived", "gs restore other")
    _one_line_error(gs("fork", "w", "other"), "already exists")
    _one_line_error(gs("restore", "other", "--as", "w"), "'w' already exists")
    _one_line_error(gs("restore", "nothing"), "nothing")
    assert gs("restore", "other", "--as", "other2").code == 0
    # nothing moved
    assert len(git("rev-list", "w").split()) == 3
    assert git("log", "--format=%s", "other2").strip() == "turn 1: x"


def test_unicode_titles_and_lineage_in_list(gs, git):
    _three_turns(gs, git)
    title = "Ünïcødé 🚀 — 日本語 title"
    assert gs("title", "w", title).code == 0
    assert gs("fork", "w~1", "alt").code == 0
    rows = {r["id"]: r for r in gs("list", "--json").json()}
    assert rows["w"]["title"] == title and rows["w"]["forked_from"] is None
    assert rows["alt"]["forked_from"] == f"w@{git('rev-parse', 'w~1').strip()}"
    assert rows["alt"]["title"] == "q1"  # the fork point predates the title
    table = gs("list").out
    assert title in table
    assert re.search(r"^alt ← w@[0-9a-f]{7}\s", table, re.M), table
    assert git("log", "-1", "--format=%s", "w").strip() == f"title: {title}"
    log = gs("log", "w", "-n", "1", "-p").out
    assert f"title: {title}" in log and f"(title: {title})" in log
    entries = gs("log", "alt", "--json").json()
    assert entries[0]["forked_from"] == rows["alt"]["forked_from"] and entries[-1]["forked_from"] is None
    assert "Fork:   from w at" in gs("log", "alt", "-n", "1").out


def test_show_json_is_show_format_json(gs, git):
    """gs list, log and tree took --json; gs show only --format json."""
    _three_turns(gs, git)
    as_json = gs("show", "w~1", "--json")
    assert as_json.code == 0 and as_json.out == gs("show", "w~1", "--format", "json").out
    assert [m["content"] for m in as_json.json()["messages"] if m["role"] == "user"] == ["q1", "q2"]
    assert gs("show", "--json", "--full").out == gs("show", "w", "-f", "json", "--full").out  # the current session
    assert gs("show", "w", "--json", "-f", "json").out == gs("show", "w", "--json").out
    for other in ("jsonl", "text"):
        r = gs("show", "w", "--json", "--format", other)
        assert r.code == 2 and f"--json means --format json: drop --json or --format {other}" in r.err, r.err
        assert "Traceback" not in r.err and not r.out


def test_fork_rename_rm_restore_and_title_say_what_they_did_as_json(gs, git):
    """Each printed its record as a sentence on stderr only: a script had to parse it for the new names."""
    commits = _three_turns(gs, git)

    def record(*args: str) -> dict:
        r = gs(*args, "--json")
        assert r.code == 0 and not r.err, r.err
        return r.json()

    assert record("fork", "w~1", "alt") == {"session": "alt", "commit": git("rev-parse", "alt").strip(),
                                            "forked_from": f"w@{commits[1]}"}
    assert record("rename", "alt", "other") == {"session": "other", "commit": git("rev-parse", "other").strip(),
                                                "renamed_from": "alt"}
    titled = record("title", "other", "A  title\n")
    assert titled == {"session": "other", "title": "A title", "commit": git("rev-parse", "other").strip()}
    assert [r["title"] for r in gs("list", "--json").json() if r["id"] == "other"] == ["A title"]
    assert gs("chat", "w", input="").code == 0 and gs("status", "--json").json()["session"] == "w"
    assert record("rm", "w") == {"session": "w", "archived_as": "w", "commit": commits[0], "current": "other"}
    assert record("restore", "w") == {"session": "w", "commit": commits[0], "restored_from": "w"}
    [past] = [e["rev"] for e in gs("reflog", "w", "--json").json() if e["commit"] == commits[1]]
    assert record("restore", past, "--as", "before") == {
        "session": "before", "commit": git("rev-parse", "before").strip(), "restored_from": past}
    assert git("merge-base", "before", "w").strip() == commits[1]


def test_log_patch_shows_what_each_commit_added(gs, git, fake_api, repo_path):
    fake_api.script(tool_calls(("call_t", "get_current_time", '{"timezone": "UTC"}')), text("It is noon.\nLine two."))
    assert gs("ask", "--tools", "time", "-S", "w", "what time is it?").code == 0
    fake_api.script(drop("half an ans"))
    assert gs("ask", "-S", "w", "this reply breaks").code == 1
    assert gs("ask", "-S", "w", "third").code == 0
    with GitStore(repo_path) as store:
        session = open_session(store, "w")
        try:
            session.undo()
        finally:
            session.close()
    assert gs("fork", "w", "alt").code == 0

    out = gs("log", "w", "-p").out
    blocks = {m.group(1): m.group(2) for m in re.finditer(r"\n    (\S.*)\n\n((?:    .*\n)*)", "\n" + out)}
    assert "(undo: turn 3)" in blocks["undo: turn 3"]
    assert blocks["turn 3: third"].splitlines() == ["    user: third", "    assistant: echo: third"]
    broken = blocks["turn 2: this reply breaks"]
    assert "    user: this reply breaks" in broken
    assert "half an ans [interrupted]" in broken
    assert "(turn 2 ended: error" in broken
    first = blocks["turn 1: what time is it?"].splitlines()
    assert first[0] == "    user: what time is it?"
    assert first[1] == '    ⚙ get_current_time({"timezone": "UTC"})'
    assert first[2].startswith("    ↳ ") and "+00:00" in first[2]
    assert first[3:] == ["    assistant: It is noon.", "               Line two."]
    # each commit's messages, once: nothing repeated from earlier commits
    assert out.count("user: what time is it?") == 1

    # the fork commit adds nothing; the commits below it are w's, with their messages
    alt = gs("log", "alt", "-p", "--oneline").out.splitlines()
    assert alt[0].endswith(f"fork: alt from w at {git('rev-parse', '--short=7', 'w').strip()}")
    assert alt[1].endswith("undo: turn 3")
    entries = gs("log", "alt", "-p", "--json").json()
    assert entries[0]["added"] == []
    assert [i["role"] for i in entries[-1]["added"]] == ["user", "assistant", "tool", "assistant"]
    assert entries[-1]["added"][1]["tool_calls"][0]["name"] == "get_current_time"


def test_graph_marks_where_sessions_forked(gs, git):
    _three_turns(gs, git)
    assert gs("fork", "w~1", "alt").code == 0
    assert gs("ask", "-S", "alt", "alt one").code == 0
    assert gs("ask", "-S", "alt", "alt two").code == 0
    assert gs("fork", "w~2", "early").code == 0
    assert gs("ask", "-S", "unrelated", "x").code == 0
    short = {rev: git("rev-parse", "--short=7", rev).strip() for rev in ("w", "w~1", "w~2")}
    lines = gs("log", "w", "--graph").out.splitlines()
    assert lines[0] == f"* {short['w']} (w) turn 3: q3"
    i = lines.index(f"* {short['w~1']} turn 2: q2")
    assert lines[i - 1] == "|/"
    assert lines[i - 2].startswith("| * alt (forked here, 2 turns since; tip ")
    j = lines.index(f"* {short['w~2']} turn 1: q1")
    early = git("rev-parse", "--short=7", "early").strip()
    assert lines[j - 2:j] == [f"| * early (forked here, 0 turns since; tip {early})", "|/"]
    assert "unrelated" not in "\n".join(lines)
    # from alt's side: w goes on from the fork point
    alt = gs("log", "alt", "--graph").out
    assert "| * w (branches off here, 1 turn since" in alt
    assert f"fork: alt from w at {short['w~1']}" in alt
    data = gs("log", "w", "--graph", "--json").json()
    assert [b["session"] for b in data[1]["branches"]] == ["alt"] and data[1]["branches"][0]["turns_since"] == 2


def test_graph_with_a_hundred_forks(gs, git, repo_path, monkeypatch):
    """100 sessions forked off one 30-commit history: --graph names each fork point once."""
    with GitStore(repo_path) as store:
        events: list = []
        tip = None
        for turn in range(1, 31):
            new = [make_event(len(events), "turn/start", {"turn": turn}),
                   make_event(len(events) + 1, "user/message", {"content": f"prompt {turn}"}),
                   make_event(len(events) + 2, "turn/end", {"turn": turn, "reason": "completed"})]
            events += new
            tip = store.append("w", new, commit_message("w", events, len(events) - 3), expected_tip=tip,
                               header=make_header("w") if tip is None else None)
        history = [c.commit for c in store.log("w")]
        from gitsessions.store import Revision
        from gitsessions.writer.forking import fork
        for i in range(100):
            point = history[i % 30]
            fork(store, Revision("w", point, point == history[0]), f"f{i:03d}")
    r = gs("log", "w", "--graph")  # its speed is measured in benchmarks/, not asserted here
    assert r.code == 0, r.err
    assert r.out.count("(forked here, ") == 100


def test_diff_between_sessions(gs, git):
    _three_turns(gs, git)
    assert gs("fork", "w~1", "alt").code == 0
    assert gs("ask", "-S", "alt", "alt says\nhello").code == 0
    r = gs("diff", "w", "alt")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    base = git("merge-base", "w", "alt").strip()
    assert lines[0] == f"common ancestor: {base[:7]} turn 2: q2"
    minus = lines.index("--- only in w (2 messages)")
    plus = lines.index("+++ only in alt (2 messages)")
    assert minus < plus
    assert "    user: q3" in lines[minus:plus] and "    assistant: echo: q3" in lines[minus:plus]
    assert lines[plus + 1:] == ["  turn 3:", "    user: alt says", "          hello",
                                "    assistant: echo: alt says", "               hello"]
    data = gs("diff", "w", "alt", "--json").json()
    assert data["base"] == base
    assert [m["content"] for m in data["a"]["messages"]] == ["q3", "echo: q3"]
    assert data["b"]["messages"][0] == {"seq": data["b"]["messages"][0]["seq"], "turn": 3, "type": "user/message",
                                        "role": "user", "content": "alt says\nhello"}
    assert data["a"]["commit"] == git("rev-parse", "w").strip()
    # an ancestor has nothing of its own
    r = gs("diff", "w~2", "w", "--json").json()
    assert r["base"] == git("rev-parse", "w~2").strip() and r["a"]["messages"] == [] and r["b"]["count"] == 4
    # sessions with no shared history
    assert gs("ask", "-S", "solo", "alone").code == 0
    r = gs("diff", "w", "solo")
    assert r.out.startswith("no common ancestor") and "--- only in w (6 messages)" in r.out


def test_search_finds_session_turn_commit(gs, git, fake_api):
    fake_api.script(tool_calls(("get_current_time", "{}")), text("Nothing about Pears here."))
    assert gs("ask", "--tools", "time", "-S", "fruit", "tell me about APPLES").code == 0
    assert gs("ask", "-S", "fruit", "and then " + "x" * 60 + " the\nOrange \"quoted\" thing " + "y" * 60).code == 0
    assert gs("ask", "-S", "other", "no match at all").code == 0
    assert gs("ask", "-S", "other", "but apples again").code == 0
    r = gs("search", "apples")
    assert r.code == 0, r.err
    c1 = git("rev-parse", "--short=7", "fruit~1").strip()
    o2 = git("rev-parse", "--short=7", "other").strip()
    assert r.out.splitlines() == [
        f"fruit@{c1}  turn 1  user: tell me about APPLES",
        f"other@{o2}  turn 2  user: but apples again",
        f"other@{o2}  turn 2  assistant: echo: but apples again",
    ]
    hits = gs("search", 'orange "QUOTED', "--json").json()
    assert {h["role"] for h in hits} == {"user", "assistant"}
    user = next(h for h in hits if h["role"] == "user")
    assert set(user) >= {"session", "turn", "commit", "seq", "role", "snippet"}
    assert user["session"] == "fruit" and user["turn"] == 2 and user["commit"] == git("rev-parse", "fruit").strip()
    assert user["snippet"] == "…" + "x" * 35 + " the Orange \"quoted\" thing " + "y" * 32 + "…"
    assert "\n" not in user["snippet"]
    tool = gs("search", "+00:00", "--json").json()
    assert [h["role"] for h in tool] == ["tool"] and tool[0]["turn"] == 1
    assert [h["session"] for h in gs("search", "APPLES", "--session", "other", "--json").json()] == ["other", "other"]
    r = gs("search", "no such text anywhere")
    assert r.code == 1 and r.out == "" and "no match" in r.err
    assert gs("search", "zzqq", "--json").out.strip() == "[]"


def test_search_all_revisions_finds_archived_text(gs, git):
    _three_turns(gs, git)
    assert gs("ask", "-S", "gone", "a secret Zebra fact").code == 0
    assert gs("fork", "w~1", "alt").code == 0
    assert gs("rm", "gone").code == 0
    assert gs("search", "zebra").code == 1
    r = gs("search", "zebra", "--all-revisions", "--json")
    assert r.code == 0, r.err
    assert [(h["session"], h["role"], h["archived"]) for h in r.json()] == [
        ("gone", "user", True), ("gone", "assistant", True)]
    assert r.json()[0]["commit"] == git("rev-parse", "refs/archive/gone").strip()
    assert "gone@" in gs("search", "zebra", "--all-revisions").out
    # q1 is in both w and its fork alt: once per commit with --all-revisions, credited to w
    hits = gs("search", "q1", "--all-revisions", "--json").json()
    assert [(h["session"], h["role"]) for h in hits] == [("w", "user"), ("w", "assistant")]
    assert hits[0]["commit"] == git("rev-parse", "w~2").strip()
    # without --all-revisions too: alt and w both hold q1, which is one message, its fork named
    hits = gs("search", "q1", "--json").json()
    alt = [{"session": "alt", "archived": False}]
    assert [(h["session"], h["role"], h["also"]) for h in hits] == [("w", "user", alt), ("w", "assistant", alt)]
    w1 = git("rev-parse", "--short=7", "w~2").strip()
    assert gs("search", "q1").out.splitlines() == [f"w@{w1}  turn 1  user: q1  (also in alt)",
                                                   f"w@{w1}  turn 1  assistant: echo: q1  (also in alt)"]


def _many_sessions(repo_path, n: int, monkeypatch) -> None:
    monkeypatch.setattr(os, "fsync", lambda fd: None)  # test setup only: a slow disk is not under test
    with GitStore(repo_path) as store:
        store.find = lambda sid: None  # ids are unique by construction; skip the O(n) case check
        for i in range(n):
            sid = f"s{i:04d}"
            events = [
                make_event(0, "turn/start", {"turn": 1}),
                make_event(1, "user/message", {"content": f"question {i} about apples\nand pears"}),
                make_event(2, "assistant/message", {"content": f"answer {i}" + (" NEEDLE" if i % 100 == 7 else ""),
                                                    "tool_calls": []}),
                make_event(3, "turn/end", {"turn": 1, "reason": "completed"}),
            ]
            store.append(sid, events, commit_message(sid, events, 0), expected_tip=None, header=make_header(sid))


def test_search_over_a_thousand_sessions(gs, repo_path, monkeypatch):
    """Finds exactly the sessions that hold the text, any case (its speed is measured in
    benchmarks/, not asserted here)."""
    _many_sessions(repo_path, 1000, monkeypatch)
    r = gs("search", "needle", "--json")
    assert r.code == 0, r.err
    assert sorted(h["session"] for h in r.json()) == [f"s{i:04d}" for i in range(7, 1000, 100)]
    r = gs("search", "APPLES")
    assert r.code == 0 and len(r.out.splitlines()) == 1000


@pytest.mark.parametrize("cmd", ["list", "log", "show", "diff", "search"])
def test_help_has_an_example(gs, cmd):
    r = gs(cmd, "--help")
    assert r.code == 0 and "Examples:" in r.out
