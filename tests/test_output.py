"""gitsessions/cli/display/output.py and the words of time in tables: git's output conventions
(colour only on a terminal, NO_COLOR, --no-color; the pager's rule; "3 hours ago")."""

from __future__ import annotations

import io
import os
import subprocess

import pytest
from conftest import GS

from gitsessions.cli.display import render
from gitsessions.cli.display.output import DEFAULT_PAGER, Output, styled


class Terminal(io.StringIO):
    """Text written to what says it is a terminal."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize("seconds, words", [
    (0, "0 seconds ago"), (1, "1 second ago"), (89, "89 seconds ago"), (90, "2 minutes ago"),
    (3600, "60 minutes ago"), (3 * 3600, "3 hours ago"), (35 * 3600, "35 hours ago"), (36 * 3600, "2 days ago"),
    (13 * 86400, "13 days ago"), (14 * 86400, "2 weeks ago"), (69 * 86400, "10 weeks ago"),
    (70 * 86400, "2 months ago"), (364 * 86400, "12 months ago"), (365 * 86400, "1 year ago"),
    (500 * 86400, "1 year, 4 months ago"), (1825 * 86400, "5 years ago"), (-5, "in the future"),
])
def test_relative_time_in_gits_words(seconds, words):
    now = 1_800_000_000
    assert render.relative_time(now - seconds, now) == words


def test_colour_only_on_a_terminal_and_never_with_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    line = [("abc1234", "yellow"), (" subject \x1b[31m", "")]
    assert list(styled([line, "plain\x07"], Output(), Terminal())) == ["\x1b[33mabc1234\x1b[0m subject ^[[31m\n",
                                                                        "plain^G\n"]
    plain = ["abc1234 subject ^[[31m\n", "plain^G\n"]
    assert list(styled([line, "plain\x07"], Output(), io.StringIO())) == plain  # not a terminal
    assert list(styled([line, "plain\x07"], Output(no_color=True), Terminal())) == plain
    monkeypatch.setenv("NO_COLOR", "1")
    assert list(styled([line, "plain\x07"], Output(), Terminal())) == plain
    monkeypatch.setenv("NO_COLOR", "")  # no-color.org: set and empty is not set
    assert Output().color(Terminal())
    for dumb in ("dumb", "unknown", "DUMB"):  # the prompt's rule: no escape where the prompt writes none
        monkeypatch.setenv("TERM", dumb)
        assert not Output().color(Terminal()), dumb


def test_the_pager_is_gits_rule(monkeypatch):
    for name in ("GS_PAGER", "PAGER"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr("sys.stdout", Terminal())
    assert Output().pager() == DEFAULT_PAGER.split()
    monkeypatch.setenv("PAGER", "more -s")
    assert Output().pager() == ["more", "-s"]
    monkeypatch.setenv("GS_PAGER", "bat --plain")
    assert Output().pager() == ["bat", "--plain"]
    assert Output(no_pager=True).pager() is None
    for off in ("cat", "", "  "):
        monkeypatch.setenv("GS_PAGER", off)
        assert Output().pager() is None, off
    monkeypatch.setenv("GS_PAGER", "less")
    monkeypatch.setattr("sys.stdout", io.StringIO())  # not a terminal: never paged
    assert Output().pager() is None


def test_list_says_how_long_ago_and_json_keeps_the_time(gs):
    assert gs("ask", "-S", "w", "hi").code == 0
    table = gs("list").out.splitlines()
    assert table[0].split() == ["SESSION", "TURNS", "MSGS", "SAVED", "COMMIT", "TITLE"]
    assert " seconds ago " in table[1] or " second ago " in table[1], table
    assert "\x1b" not in "".join(table)  # captured: not a terminal
    assert gs("list", "--json").json()[0]["saved"][:4].isdigit()
    assert gs("--no-color", "--no-pager", "log", "w", "--oneline").out.endswith("turn 1: hi\n")


def test_render_is_true_or_false(gs, tmp_path):
    (tmp_path / "config.yaml").write_text("render: maybe\n")
    r = gs("list")
    assert r.code == 1 and "render must be true or false" in r.err
    (tmp_path / "config.yaml").write_text("render: false\n")
    assert gs("list").code == 0


@pytest.mark.parametrize("args", [
    ("search", "word"), ("search", "word", "--json"), ("log", "w"), ("log", "-p", "w"), ("list",), ("show", "w"),
    ("log", "--help"), ("help", "log"), ("--help",),
])
@pytest.mark.parametrize("unbuffered", ["", "1"])
def test_a_reader_that_closed_the_pipe_is_no_failure(gs, args, unbuffered):
    """``gs search word | head -1``: the reader went away, which is no failure (and for search no 'no match').

    The read end is closed before gs writes, so every write fails, buffered (a pipe's
    default) or not: before, it was exit 1 (or 0 or 1, by timing, for output that fit the
    pipe).
    """
    for n in range(3):
        assert gs("ask", "-S", "w", f"a word {n}").code == 0
    read, write = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([*GS, *args], stdout=write, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                              env={**os.environ, "PYTHONUNBUFFERED": unbuffered}, timeout=60)
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr.decode()) == (0, "")
