"""Every move can be undone: git's @{N} and @{DATE} in every REV, gs reflog, gs restore."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from gitsessions.store import GitStore
from gitsessions.store.reflog import parse_reflog
from gitsessions.store.revisions import parse_date

NOW = 1796130000  # 2026-12-01 13:00 UTC


def _git_date(text: str) -> int:
    """What git's approxidate makes of ``text`` at NOW (``--since`` prints it as ``--max-age``)."""
    out = subprocess.run(["git", "rev-parse", f"--since={text}"], capture_output=True, text=True, check=True,
                         env=dict(os.environ, GIT_TEST_DATE_NOW=str(NOW))).stdout
    return int(out.strip().removeprefix("--max-age="))


@pytest.mark.parametrize("text", ["now", "today", "yesterday", "2 hours ago", "2.hours.ago", "1 hour 30 minutes ago",
                                  "3 days ago", "2 weeks ago", "2 months ago", "1 year ago", "2026-11-30",
                                  "2026-11-30 10:00", "2026-11-30 10:00:30"])
def test_dates_read_as_git_reads_them(text: str):
    assert parse_date(text, NOW) == _git_date(text)


@pytest.mark.parametrize("text", ["", "soon", "2 fortnights ago", "hours ago", "2026-13-01", "3 days"])
def test_what_is_no_date_is_none(text: str):
    assert parse_date(text, NOW) is None


def test_a_reflog_line_without_a_message_is_read():
    old, new = "1" * 40, "2" * 40
    entries = parse_reflog(f"{'0' * 40} {old} A U <a@b> 100 +0100\tcommit (initial): x\n"
                           f"{old} {new} A U <a@b> 200 -0230\n"
                           "damaged line\n".encode())
    assert [(e.old, e.new, e.who, e.time, e.tz_offset, e.reason) for e in entries] == [
        (None, old, "A U <a@b>", 100, 3600, "commit (initial): x"), (old, new, "A U <a@b>", 200, -9000, "")]


@pytest.fixture
def three(gs, git, repo_path: Path):
    """work with three saves, its reflog lines three days, one day and one hour old."""
    for prompt in ("one", "two", "three"):
        assert gs("ask", "-S", "work", prompt).code == 0
    log = repo_path / "logs" / "refs" / "heads" / "work"
    now = int(git("log", "-1", "--format=%ct", "work"))
    lines = log.read_text().splitlines()
    assert len(lines) == 3
    out = []
    for line, age in zip(lines, (3 * 86400, 86400, 3600), strict=True):
        head, tab, reason = line.partition("\t")
        parts = head.split(" ")
        parts[-2] = str(now - age)
        out.append(" ".join(parts) + tab + reason + "\n")
    log.write_text("".join(out))
    return gs


@pytest.mark.parametrize("at", ["0", "1", "2", "yesterday", "2 hours ago", "2.days.ago", "1 week ago", "now"])
def test_reflog_revisions_name_what_git_names(three, git, repo_path: Path, at: str):
    with GitStore(repo_path) as store:
        found = store.resolve(f"work@{{{at}}}")
    assert found.commit == git("rev-parse", f"work@{{{at}}}").strip()
    assert found.is_tip == (found.commit == git("rev-parse", "work").strip())


def test_a_reflog_revision_takes_suffixes_and_shows(three, git):
    assert three("show", "work@{1}").out == three("show", "work~1").out
    assert three("show", "work@{1}~1", "--format", "jsonl").out == three("show", "work~2", "--format", "jsonl").out
    assert three("log", "work@{yesterday}", "--oneline").out.splitlines()[0].split()[0] == \
        git("rev-parse", "--short=7", "work@{yesterday}").strip()
    git("fsck", "--strict")
    assert len(git("log", "-g", "--format=%H", "work").split()) == 3


def test_reflog_revisions_that_name_nothing_say_what_exists(three):
    r = three("show", "work@{3}")
    assert r.code == 1 and "only has 3 entries, so work@{0} to work@{2} exist" in r.err and "gs reflog work" in r.err
    r = three("show", "work@{soon}")
    assert r.code == 1 and "work@{yesterday}" in r.err
    r = three("show", "work@{1")
    assert r.code == 1 and "SESSION@{N}" in r.err
    r = three("show", "work@{1}~5")
    assert r.code == 1 and "'work@{1}' has 2 saves" in r.err


def test_an_archived_session_keeps_its_reflog(three, git):
    before = git("rev-parse", "work~1").strip()
    assert three("rm", "work").code == 0
    assert three("show", "work").code == 1  # archived: restore it first
    r = three("show", "work@{2}", "--format", "jsonl")
    assert r.code == 0 and r.out == git("cat-file", "blob", f"{before}:session.jsonl")


def test_gs_reflog_lists_every_move_with_its_reason(three, git):
    assert three("fork", "work~1", "alt").code == 0
    assert three("rename", "work", "main-line").code == 0
    r = three("reflog", "main-line")
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert [line.split()[1] for line in lines] == [f"main-line@{{{i}}}" for i in range(4)]
    assert "renamed work to main-line" in lines[0] and "commit: turn 3: three" in lines[1]
    assert "commit (initial): turn 1: one" in lines[3]
    assert [line.split()[0] for line in lines] == git("log", "-g", "--format=%h", "--abbrev=7", "main-line").split()
    rows = three("reflog", "main-line", "--json", "-n", "2").json()
    tip = git("rev-parse", "main-line").strip()
    assert [(row["rev"], row["commit"]) for row in rows] == [("main-line@{0}", tip), ("main-line@{1}", tip)]
    assert set(rows[0]) == {"rev", "commit", "old", "time", "who", "reason"}
    assert "fork: alt from work" in three("reflog").out  # no SESSION: the current one (alt, forked last)
    git("fsck", "--strict")


def test_restore_brings_a_reflog_entry_back_as_a_session(three, git):
    tip, before = git("rev-parse", "work").strip(), git("rev-parse", "work~1").strip()
    r = three("restore", "work@{1}")
    assert r.code == 0 and "as work-1" in r.err, r.err
    assert git("rev-parse", "work").strip() == tip  # nothing moved
    assert git("rev-parse", "work-1^").strip() == before
    assert three("show", "work-1", "--format", "jsonl").out == three("show", "work~1", "--format", "jsonl").out
    node = three("tree", "work", "--json").json()["children"][0]
    assert (node["id"], node["from_turn"], node["fork_commit"]) == ("work-1", 2, before)
    assert three("restore", "work@{2}", "--as", "first").code == 0
    assert git("rev-parse", "first^").strip() == git("rev-parse", "work~2").strip()
    assert git("reflog", "show", "--format=%gs", "first").split("\n")[0] == "restore: work@{2} as first"  # not a fork
    git("fsck", "--strict")


def test_restore_finds_the_moves_of_an_archived_session(three, git):
    first = git("rev-parse", "work~2").strip()
    assert three("rm", "work").code == 0
    r = three("restore", "work@{3}")
    assert r.code == 0 and "as work-1" in r.err, r.err  # the archive keeps the name work
    assert git("rev-parse", "work-1^").strip() == first
    assert three("restore", "work").code == 0  # the archived session itself comes back as before
    assert git("for-each-ref", "--format=%(refname)", "refs/heads").split() == ["refs/heads/work", "refs/heads/work-1"]
    r = three("restore", "work@{9}")
    assert r.code == 1 and "only has" in r.err
    git("fsck", "--strict")


def test_moves_plain_git_made_are_read_too(three, git, repo_path: Path):
    env = {"GIT_AUTHOR_NAME": "a", "GIT_AUTHOR_EMAIL": "a@b", "GIT_COMMITTER_NAME": "a", "GIT_COMMITTER_EMAIL": "a@b",
           "PATH": os.environ["PATH"]}
    top = subprocess.run(["git", "-C", str(repo_path), "commit-tree", "work^{tree}", "-p", "work", "-m", "by hand"],
                         capture_output=True, text=True, check=True, env=env).stdout.strip()
    before = git("rev-parse", "work").strip()
    subprocess.run(["git", "-C", str(repo_path), "update-ref", "refs/heads/work", top], check=True, env=env)  # no -m
    lines = three("reflog", "work").out.splitlines()
    assert lines[0].startswith(f"{top[:7]} work@{{0}}") and lines[0].endswith("(no reason)")
    with GitStore(repo_path) as store:
        assert store.resolve("work@{1}").commit == before == git("rev-parse", "work@{1}").strip()
    assert three("show", "@{1}").out == three("show", "work@{1}").out  # git's @{1}: the current session's
    assert git("reflog", "show", "--format=%h", "refs/heads/work").split()[:2] == [top[:7], before[:7]]
    git("fsck", "--strict")


def test_an_archived_restore_is_drawn_in_its_family(three):
    assert three("restore", "work@{1}").code == 0
    assert three("rm", "work-1").code == 0
    r = three("tree", "work-1")
    assert r.code == 0, r.err
    assert "work-1  (from work at turn 2)" in r.out and "[archived]" in r.out


def test_a_date_before_the_reflog_began_warns_as_git_does(gs, git):
    assert gs("ask", "-S", "work", "one").code == 0 and gs("ask", "-S", "work", "two").code == 0
    for at in ("yesterday", "1 year ago"):
        r = gs("show", f"work@{{{at}}}", "--format", "jsonl")
        assert r.code == 0, r.err
        assert "the reflog of 'work' only goes back to" in r.err and f"not one from {at}" in r.err, r.err
        assert r.out == gs("show", "work~1", "--format", "jsonl").out  # the oldest state, as git names it
    assert "only goes back" not in gs("show", "work@{now}").err
    r = gs("restore", "work@{yesterday}")
    assert r.code == 0 and "its oldest recorded state" in r.err and "only goes back to" in r.err, r.err
    r = gs("fork", "work@{yesterday}", "old")
    assert r.code == 0 and "only goes back to" in r.err, r.err


def test_restore_says_what_cannot_be_restored(three, git):
    tips = git("for-each-ref")
    r = three("restore", "work@{0}")
    assert r.code == 1 and "it is work as it stands" in r.err and "gs reflog work" in r.err, r.err
    r = three("restore", "work")
    assert r.code == 1 and "'work' is live, not archived" in r.err and "gs restore work@{N}" in r.err, r.err
    r = three("restore", "work~1")
    assert r.code == 1 and "gs restore takes a session id, not a revision" in r.err and "gs fork work~1" in r.err
    r = three("restore", "nothing")
    assert r.code == 1 and "no archived session 'nothing'; none is archived" in r.err, r.err
    r = three("restore", "")
    assert r.code == 1 and "no archived session ''" in r.err, r.err
    assert git("for-each-ref") == tips  # nothing was made


def test_revision_messages_count_right(gs):
    assert gs("ask", "-S", "work", "one").code == 0
    r = gs("show", "work@{0}~1")
    assert r.code == 1 and "'work@{0}' has 1 save, so only work@{0}~0 exists" in r.err, r.err
    r = gs("show", "work@{2}")
    assert r.code == 1 and "only has 1 entry, so only work@{0} exists" in r.err, r.err
