"""``gs search`` rows: one per message however many forks share it, and the match marked for a terminal."""

from __future__ import annotations

from gitsessions.search import marked


def test_forks_sharing_a_message_make_one_row_naming_them(gs, git):
    assert gs("ask", "w", "the apples question").code == 0
    for fork in ("w-b", "w-c", "w-a", "a-first"):
        assert gs("fork", "w", fork).code == 0
    assert gs("ask", "w-b", "more apples").code == 0
    assert gs("rm", "w-c").code == 0
    r = gs("search", "apples")
    assert r.code == 0, r.err
    w1, b1 = (git("rev-parse", "--short=7", rev).strip() for rev in ("w", "w-b"))
    assert r.out.splitlines() == [
        f"w@{w1}  turn 1  user: the apples question  (also in a-first, w-a, w-b)",
        f"w@{w1}  turn 1  assistant: echo: the apples question  (also in a-first, w-a, w-b)",
        f"w-b@{b1}  turn 2  user: more apples",
        f"w-b@{b1}  turn 2  assistant: echo: more apples",
    ]
    rows = gs("search", "apples question", "--all-revisions", "--json").json()
    also = ["a-first", "w-a", "w-b", "w-c"]
    assert [(h["session"], [a["session"] for a in h["also"]]) for h in rows] == [("w", also)] * 2
    assert "w-c (archived)" in gs("search", "apples question", "--all-revisions").out


def test_marked_splits_the_snippet_around_the_match_in_any_case_and_spacing():
    assert marked("…tell me about APPLES and pears", "apples") == ("…tell me about ", "APPLES", " and pears")
    assert marked("the Orange quoted thing", "orange\n  QUOTED") == ("the ", "Orange quoted", " thing")
    assert marked("Straße", "STRASSE") == ("", "Straße", "")
    assert marked("no such text", "zebra") == ("no such text", "", "")
