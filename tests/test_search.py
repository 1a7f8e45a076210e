"""``gs search`` rows: one per message however many forks share it, and the match marked for a terminal."""

from __future__ import annotations

import subprocess

import pexpect
from test_pty import TIMEOUT
from test_pty_render import chat_env, start, unstyled

from gitsessions.cli.history import hit_parts
from gitsessions.history.search import Hit, marked

__all__ = ["chat_env", "start"]  # fixtures shared with test_pty_render


def test_forks_sharing_a_message_make_one_row_naming_them(gs, git):
    assert gs("ask", "-S", "w", "the apples question").code == 0
    for fork in ("w-b", "w-c", "w-a", "a-first"):
        assert gs("fork", "w", fork).code == 0
    assert gs("ask", "-S", "w-b", "more apples").code == 0
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


def test_a_branch_without_a_session_log_is_skipped_in_words(gs, git, repo_path):
    assert gs("ask", "-S", "w", "find the needle").code == 0

    def run(*args: str, data: bytes = b"") -> str:
        return subprocess.run(["git", "-C", str(repo_path), *args], input=data, capture_output=True, check=True,
                              env={"GIT_AUTHOR_NAME": "x", "GIT_AUTHOR_EMAIL": "x@y", "GIT_COMMITTER_NAME": "x",
                                   "GIT_COMMITTER_EMAIL": "x@y", "PATH": "/usr/bin:/bin"}).stdout.decode().strip()
    blob = run("hash-object", "-w", "--stdin", data=b"needle in notes\n")
    tree = run("mktree", data=f"100644 blob {blob}\tnotes.txt\n".encode())
    git("update-ref", "refs/heads/notes", run("commit-tree", tree, "-m", "plain git"))
    r = gs("search", "needle")
    assert r.code == 0 and r.out.startswith("w@"), r.err
    [skipped] = [line for line in r.err.splitlines() if "skipped" in line]
    assert "notes" in skipped and "session.jsonl" in skipped
    assert "b'" not in skipped and "(b" not in skipped, skipped  # no Python bytes repr


def test_the_match_is_bold_red_on_a_terminal_and_plain_with_no_color(gs, start):
    assert gs("ask", "-S", "w", "tell me about APPLES and pears").code == 0
    child = start("search", "apples")
    child.expect(pexpect.EOF, timeout=TIMEOUT)
    shown = child.before
    assert "\x1b[1;31mAPPLES\x1b[0m" in shown, repr(shown)  # git grep's colour for a match
    assert "w@" in unstyled(shown) and "user: tell me about APPLES and pears" in unstyled(shown)
    child = start("search", "apples", NO_COLOR="1")
    child.expect(pexpect.EOF, timeout=TIMEOUT)
    assert "\x1b[" not in child.before and "tell me about APPLES and pears" in child.before


def test_hit_parts_style_the_commit_and_the_match_only():
    hit = Hit("w", False, 1, 2, "user", "…about APPLES and pears", also=[("w-1", False), ("old", True)])
    parts = hit_parts(hit, "apples")
    row = "w@?  turn 2  user: …about APPLES and pears  (also in w-1, old (archived))"
    assert "".join(text for text, _ in parts) == row
    assert [(text, style) for text, style in parts if style] == [("?", "yellow"), ("APPLES", "bold red")]
    assert [style for text, style in hit_parts(hit, "zebra") if style] == ["yellow"]  # no match: nothing in red
