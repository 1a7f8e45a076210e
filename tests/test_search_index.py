"""``gs search`` through its derived index (gitsessions/history/search_index.py) answers exactly what the
scan of every log answers (gitsessions/history/search.py), on an archive made by in-process ``gs``
commands and by plain ``git`` (forks, archives, a redacted secret, sessions grown, rewritten
and deleted behind gs's back); and when the index cannot be used (damaged, locked, a
read-only repo) the scan answers, the same."""

from __future__ import annotations

import sqlite3
import subprocess
from pathlib import Path

from fakeapi import text
from test_faults_disk import _mount, _umount
from test_history_service import HEADER, asks, opened, plain, turn  # noqa: F401 - plain is a fixture

from gitsessions.history import messages, search
from gitsessions.store import GitStore

SK = "sk-" + "Zq7Xw3Rt9Yp2Lm5Nb8Vc1Kd4" + "Hf6Js0Ga"
QUERIES = ("needle", "NEEDLE", "straße", "STRASSE", "and a", "ok", "reply", "Zq7Xw3Rt9", "nowhere", '"q"')


def index_of(repo_path: Path) -> Path:
    return repo_path / "gs" / "search.sqlite"


def same_as_scan(store: GitStore, index: Path) -> int:
    """Assert every query gives the scan's hits through the index; return how many hits there were."""
    n = 0
    for q in QUERIES:
        for kw in ({}, {"all_revisions": True}, {"session": "w"}):
            scanned = search.search(store, q, **kw)
            assert search.search(store, q, index=index, **kw) == scanned, (q, kw)
            n += len(scanned)
    return n


def indexed_messages(index: Path) -> dict[str, int]:
    with sqlite3.connect(index) as con:
        return dict(con.execute("select name || case archived when 1 then '(archived)' else '' end, sum(n) "
                                "from chunk group by name, archived"))


def messages_at(store: GitStore, sid: str, tip: str) -> int:
    return len(messages.read_messages(messages.body_text(store.read_raw(sid, tip)))[0])


def test_the_index_answers_what_the_scan_answers(gs, repo_path, plain, fake_api, git):  # noqa: F811
    fake_api.script(*[text(r) for r in ("ok", "a reply", "ok", "reply with a needle", "ok", "ok", "ok")])
    asks(gs, "w", "find the needle", "Strasse and Straße", f"my key {SK} and a needle")
    assert gs("fork", "w", "alt").code == 0
    asks(gs, "alt", "another Needle")
    asks(gs, "x", 'a "q" here')
    assert gs("rm", "x").code == 0
    asks(gs, "y", "no needle here")
    index = index_of(repo_path)
    with opened(repo_path) as store:
        assert same_as_scan(store, index) > 10
        assert SK.encode() not in index.read_bytes()  # the stored text is redacted: so is the index
        held = indexed_messages(index)
        assert held == {"w": 6, "alt": 8, "y": 2, "x(archived)": 2}
        w_tip = store.tip("w")

    asks(gs, "w", "one more needle")  # grown by gs: indexed from its new lines
    with opened(repo_path) as store:
        same_as_scan(store, index)
        assert indexed_messages(index)["w"] == 8

    # Rewritten behind gs's back: a child commit whose log is not the old log plus lines, and
    # a branch moved to a commit that is no descendant of the tip indexed.
    with opened(repo_path) as store:
        raw = store.read_raw("w", store.tip("w"))
        edited = raw.replace(b"find the needle", b"find the thread")
        assert edited != raw
        plain("w", edited, parent=store.tip("w"))
        plain("alt", HEADER + turn(0, 1, "fresh start, a NEEDLE", "reply"))
        same_as_scan(store, index)
        assert indexed_messages(index) == {"w": 8, "alt": 2, "y": 2, "x(archived)": 2}
        assert "thread" in search.search(store, "thread", index=index)[0].snippet

    git("update-ref", "-d", "refs/heads/alt")  # deleted: its messages leave the index
    git("update-ref", "refs/heads/w", w_tip)  # moved back: older than what was indexed
    with opened(repo_path) as store:
        same_as_scan(store, index)
        assert indexed_messages(index) == {"w": messages_at(store, "w", w_tip), "y": 2, "x(archived)": 2}
    assert gs("search", "needle").out == gs("search", "needle").out  # the CLI reads the same index


def test_a_damaged_or_locked_index_leaves_the_scan_to_answer(gs, repo_path, fake_api):
    fake_api.script(text("ok"), text("ok"))
    asks(gs, "w", "find the needle")
    index = index_of(repo_path)
    with opened(repo_path) as store:
        same_as_scan(store, index)
        index.write_bytes(b"not a database at all" * 100)  # damaged: rebuilt from git
        same_as_scan(store, index)
        assert indexed_messages(index) == {"w": 2}

    asks(gs, "w", "a second needle")  # stale now, and another process holds the index
    holder = sqlite3.connect(index, isolation_level=None)
    holder.execute("begin exclusive")
    try:
        with opened(repo_path) as store:  # one search: each waits for the holder before it scans
            scanned = search.search(store, "needle")
            assert search.search(store, "needle", index=index) == scanned and len(scanned) == 2
    finally:
        holder.execute("rollback")
        holder.close()
    assert indexed_messages(index) == {"w": 2}  # nothing was written while it was held


def test_a_read_only_repo_is_searched_without_writing_it(gs, repo_path, fake_api, tmp_path):
    fake_api.script(text("ok"), text("ok"))
    asks(gs, "w", "find the needle")
    assert gs("search", "needle").code == 0  # the index is built
    asks(gs, "w", "a second needle")  # and is stale now
    before = index_of(repo_path).read_bytes()
    ro = tmp_path / "ro"
    ro.mkdir()
    _mount("--bind", str(repo_path), str(ro))
    try:
        _mount("-o", "remount,bind,ro", str(ro))
        with GitStore(ro) as store:
            hits = search.search(store, "needle", index=index_of(ro))
            assert hits == search.search(store, "needle") and len(hits) == 2
        r = subprocess.run(["touch", str(ro / "probe")], capture_output=True)
        assert r.returncode != 0  # really read-only
    finally:
        _umount(ro)
    assert index_of(repo_path).read_bytes() == before


def test_a_log_whose_writer_escaped_the_types_is_indexed_as_it_is_scanned(repo_path, plain):  # noqa: F811
    """The index skips parsing lines that cannot be messages; a line spelling its type with
    escapes (JSON allows "user\\u002fmessage") is still read, so the index finds what the scan finds."""
    escaped = turn(0, 1, "a needle", "no").replace(b'"user/message"', b'"user\\u002fmessage"')
    assert b'"user/message"' not in escaped
    with GitStore(repo_path) as store:
        store.repo(create=True)
    plain("w", HEADER + escaped + turn(6, 2, "second needle", "reply"))
    with opened(repo_path) as store:
        assert same_as_scan(store, index_of(repo_path)) > 0
        assert [(h.turn, h.role) for h in search.search(store, "needle", index=index_of(repo_path))] == [
            (1, "user"), (2, "user")]


def test_a_turn_start_spelled_with_escapes_numbers_turns_in_the_scan_too(repo_path, plain):  # noqa: F811
    """The scan parses only lines holding the query, and turn/start lines to number turns: one
    whose writer escaped its type ("turn\\/start", as JSON allows) still counts."""
    second = turn(6, 2, "second needle", "reply").replace(b'"turn/start"', b'"turn\\/start"')
    assert b'"turn/start"' not in second
    with GitStore(repo_path) as store:
        store.repo(create=True)
    plain("w", HEADER + turn(0, 1, "first", "no") + second)
    with opened(repo_path) as store:
        assert [(h.turn, h.role) for h in search.search(store, "needle")] == [(2, "user")]
        assert same_as_scan(store, index_of(repo_path)) > 0


def test_long_logs_are_indexed_in_several_chunks(repo_path, plain, monkeypatch):  # noqa: F811
    """A log of more text than a chunk holds is split: every chunk still finds what the scan finds."""
    monkeypatch.setattr("gitsessions.history.search_index.CHUNK_CHARS", 20)
    with GitStore(repo_path) as store:
        store.repo(create=True)
    plain("w", HEADER + b"".join(turn(6 * k, k + 1, f"needle number {k}", "a reply, and a needle") for k in range(5)))
    index = index_of(repo_path)
    with opened(repo_path) as store:
        assert same_as_scan(store, index) > 10
    assert indexed_messages(index) == {"w": 10}
    with sqlite3.connect(index) as con:
        assert con.execute("select count(*) from chunk").fetchone()[0] == 5  # two messages pass 20 characters
