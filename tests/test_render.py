"""gitsessions/cli/display/render.py in-process: what reaches a terminal, the stable JSON rows of
``list``/``log``/``show``, and the text helpers of ``search``. (The display of events is
gitsessions/log/view.py's, tested in tests/test_view.py.)"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path

import pytest

from gitsessions.cli.display import render
from gitsessions.log.commits import CommitMessage
from gitsessions.store import GitStore
from gitsessions.text import clip, dumps, find_folded, fold, iso_time, snippet
from gitsessions.transfer.export import show_object


@pytest.mark.parametrize("raw, shown", [
    ("plain text, tabs\tand\nnewlines", "plain text, tabs\tand\nnewlines"),
    ("\x1b[31mred\x1b[0m", "^[[31mred^[[0m"),
    ("nul \x00 bell \x07 del \x7f", "nul ^@ bell ^G del ^?"),
    ("carriage\rreturn", "carriage^Mreturn"),
    ("csi \x9b2J", "csi ^[2J"),  # the 8-bit CSI some terminals obey
    ("ünïcödé ✓ 😀", "ünïcödé ✓ 😀"),
])
def test_terminal_safe_shows_control_characters(raw, shown):
    assert render.terminal_safe(raw) == shown


def test_times():
    assert iso_time(0) == "1970-01-01T00:00:00+00:00"
    assert iso_time(1_700_000_000, 2 * 3600) == "2023-11-15T00:13:20+02:00"
    assert iso_time(1_700_000_000, -(5 * 3600 + 30 * 60)) == "2023-11-14T16:43:20-05:30"
    local = render.local_time(1_700_000_000)
    assert local == time.strftime("%Y-%m-%d %H:%M", time.localtime(1_700_000_000))


def test_rows_of_list_log_and_show(gs, repo_path: Path):
    assert gs("ask", "-S", "w", "Title line\nmore").code == 0
    assert gs("ask", "-S", "w", "second").code == 0
    assert gs("fork", "w~1", "alt").code == 0
    with GitStore(repo_path) as store:
        [alt_info] = [i for i in store.list_sessions() if i.session_id == "alt"]
        w_log = store.log("w")
        snap = store.load("w")
    row = render.session_row(alt_info)
    assert row == {"id": "alt", "title": "Title line", "turns": 1, "messages": 2,
                   "saved": iso_time(alt_info.time), "commit": alt_info.tip,
                   "forked_from": f"w@{w_log[1].commit}", "error": None}
    # a tip made by another tool: no trailers, no time; and a session that could not be read
    bare = replace(alt_info, message=CommitMessage("made by hand", {}), time=0, error="corrupt at line 2")
    assert render.session_row(bare) == {"id": "alt", "title": "", "turns": 0, "messages": 0, "saved": None,
                                        "commit": alt_info.tip, "forked_from": None, "error": "corrupt at line 2"}
    odd = replace(alt_info, message=CommitMessage("x", {"Turn": "three", "Messages": "4"}))
    assert (render.session_row(odd)["turns"], render.session_row(odd)["messages"]) == (0, 4)

    newest = render.commit_row(w_log[0])
    assert newest["commit"] == w_log[0].commit and newest["parents"] == [w_log[1].commit]
    assert newest["time"] == iso_time(w_log[0].time, w_log[0].tz_offset)
    assert (newest["turn"], newest["subject"], newest["model"]) == (2, "turn 2: second", "gpt-4o-mini")
    assert newest["events"] == "6-11" and newest["forked_from"] is None
    assert newest["trailers"]["Session"] == "w" and newest["trailers"]["Events"] == "6-11"
    assert render.commit_row(replace(w_log[0], message=CommitMessage("by hand", {})))["turn"] is None

    shown = show_object(snap)
    assert set(shown) == {"id", "commit", "header", "events", "messages"}
    assert shown["id"] == "w" and shown["commit"] == w_log[0].commit and shown["header"] == snap.header
    assert [e["seq"] for e in shown["events"]] == list(range(12))
    assert [m["role"] for m in shown["messages"]] == ["user", "assistant", "user", "assistant"]
    text = dumps(shown)
    assert json.loads(text) == shown and "\n  " in text  # indented
    assert dumps({"s": "café ✓"}) == '{\n  "s": "café ✓"\n}'  # UTF-8, not \\u escapes


def test_fold_clip_and_snippet():
    assert fold("  a\n\tb   c \n") == "a b c"
    assert clip("abcdef", 6) == "abcdef" and clip("abcdefg", 6) == "abcde…"
    text = "x" * 100 + " the needle\nhere " + "y" * 100
    start = text.index("needle")
    cut = snippet(text, start, start + 6, context=10)
    assert cut == "…xxxxx the needle here yyyy…"  # 10 characters either side
    assert snippet("short needle", 6, 12) == "short needle"


@pytest.mark.parametrize("text, needle, span", [
    ("Find the NEEDLE here", "needle", (9, 15)),
    ("die Straße hier", "strasse", (4, 10)),  # one character folds to two
    ("STRASSE", "straße".casefold(), (0, 7)),
    ("İstanbul", "i̇stanbul", (0, 8)),
    ("Straße and NEEDLE", "needle", (11, 17)),  # after a character that folded to two
    ("ΑΘΉΝΑ σου", "αθήνα", (0, 5)),  # not ASCII, every character folds to one
    ("nothing", "needle", None),
    ("anything", "", None),
])
def test_find_folded_maps_back_to_the_original_text(text, needle, span):
    assert find_folded(text, needle) == span
    if span:
        assert text[span[0]:span[1]].casefold() == needle


def test_a_session_is_named_by_its_title_or_else_its_own_first_prompt():
    from gitsessions.history.tree import fork_label

    assert fork_label("yaml", None, None) == "yaml"  # a root
    assert fork_label("yaml", "shorter please", "yaml") == "shorter please"  # a fork with its parent's title
    assert fork_label("toml", "shorter please", "yaml") == "toml"  # a fork titled since
    assert fork_label("", "from the past", "yaml") == "from the past"  # every turn it had is undone
    assert fork_label("", None, "yaml") == ""
