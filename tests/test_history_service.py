"""The history services (gitsessions/history/reading.py, search.py) in-process, on real repos: sessions are
made by in-process ``gs`` commands and by plain ``git`` plumbing (as another tool or a
pull writes them), then read through the service's functions directly. The commands on
top of it are tested end to end in tests/test_history.py."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fakeapi import text

from gitsessions.errors import CorruptSession, SessionNotFound
from gitsessions.history import reading as history
from gitsessions.history import search
from gitsessions.store import GitStore

HEADER = b'{"type":"session","version":1,"created":1}\n'


def line(seq: int, type_: str, **data) -> bytes:
    return json.dumps({"seq": seq, "time": 1, "type": type_, "data": data}, ensure_ascii=False).encode() + b"\n"


def turn(first_seq: int, n: int, prompt: str, reply: str) -> bytes:
    """The six events of a completed turn ``n`` starting at ``first_seq``."""
    kinds = [("turn/start", {"turn": n}), ("user/message", {"content": prompt}), ("step/start", {"step": 1}),
             ("assistant/message", {"content": reply, "tool_calls": []}), ("step/end", {"step": 1}),
             ("turn/end", {"turn": n, "reason": "completed"})]
    return b"".join(line(first_seq + i, t, **d) for i, (t, d) in enumerate(kinds))


@pytest.fixture
def plain(repo_path: Path, git):
    """``plain(sid, content, parent=None, message=...) -> commit``: a commit made with git plumbing."""

    def commit(sid: str | None, content: bytes, parent: str | None = None, message: str = "made by hand",
               name: str = "session.jsonl") -> str:
        def run(*args: str, data: bytes) -> str:
            return subprocess.run(["git", "-C", str(repo_path), *args], input=data, capture_output=True,
                                  check=True, env={"GIT_AUTHOR_NAME": "x", "GIT_AUTHOR_EMAIL": "x@y",
                                                   "GIT_COMMITTER_NAME": "x", "GIT_COMMITTER_EMAIL": "x@y",
                                                   "PATH": "/usr/bin:/bin"}).stdout.decode().strip()

        blob = run("hash-object", "-w", "--stdin", data=content)
        tree = run("mktree", data=f"100644 blob {blob}\t{name}\n".encode())
        sha = run("commit-tree", tree, *(["-p", parent] if parent else []), "-m", message, data=b"")
        if sid is not None:
            git("update-ref", f"refs/heads/{sid}", sha)
        return sha

    return commit


def opened(repo_path: Path) -> GitStore:
    return GitStore(repo_path)


def asks(gs, sid: str, *prompts: str) -> None:
    for prompt in prompts:
        r = gs("ask", "-S", sid, prompt)
        assert r.code == 0, r.err


# -- lineage and which events a commit added ---------------------------------------------------


def test_fork_origin_is_the_fork_point_only(gs, repo_path):
    asks(gs, "w", "q1", "q2")
    assert gs("fork", "w~1", "alt").code == 0
    asks(gs, "alt", "q3")
    with opened(repo_path) as store:
        w = store.log("w")
        later, fork_commit, *below = store.log("alt")
        assert history.fork_origin(fork_commit) == ("w", w[1].commit)
        assert "Forked-From" in later.message.trailers  # every commit of a fork carries it,
        assert history.fork_origin(later) is None  # but only the first one is the fork point
        assert [history.fork_origin(c) for c in (*below, *w)] == [None] * 3


def test_event_ranges_from_trailers_and_from_blob_counts(gs, repo_path, plain):
    asks(gs, "w", "q1", "q2")
    assert gs("fork", "w", "alt").code == 0
    with opened(repo_path) as store:
        tip, first = store.log("w")
        raw = store.read_raw("w", tip.commit)
    # commits of another tool, without trailers: one adds two events, one drops some
    grown = plain("w", raw + line(12, "session/title", title="t") + line(13, "session/title", title="u"),
                  parent=tip.commit)
    shrunk = plain("w", HEADER + turn(0, 1, "q1", "a1"), parent=grown)
    broken = plain(None, raw, parent=shrunk, name="other.txt")  # no session.jsonl
    with opened(repo_path) as store:
        ranges = history.EventRanges(store, "w")
        assert ranges.of(first) == (0, 6) and ranges.of(tip) == (6, 12)  # Events: 0-5, 6-11
        assert ranges.of(store.commit_info(grown)) == (12, 14)
        assert ranges.of(store.commit_info(shrunk)) == (6, 6)  # fewer events than its parent: none added
        [fork_commit, *_] = store.log("alt")
        assert ranges.of(fork_commit) == (0, 0)  # a fork adds nothing
        with pytest.raises(CorruptSession):
            store.read_raw("w", broken)
        assert ranges.of(store.commit_info(broken)) == (0, 0)  # unreadable: nothing to show


# -- where sessions branch off -------------------------------------------------------------------


def test_branches_name_how_each_session_leaves_a_history(gs, git, repo_path, plain):
    asks(gs, "w", "q1", "q2", "q3")
    assert gs("fork", "w~1", "alt").code == 0
    asks(gs, "alt", "on alt")
    git("update-ref", "refs/heads/same", "w~2")  # a second name for a commit of w
    w1 = git("rev-parse", "w~1").strip()
    with opened(repo_path) as store:
        raw = store.read_raw("w", w1)
    plain("other", raw + line(12, "session/title", title="by hand"), parent=w1)  # no Forked-From
    with opened(repo_path) as store:
        tip = store.resolve("w")
        found = history.branches(store, tip, store.log("w"))
        seen = {b.session_id: (base, b.how, b.turns_since) for base, bs in found.items() for b in bs}
        assert seen == {"alt": (w1, "forked here", 1), "other": (w1, "branches off here", 0),
                        "same": (git("rev-parse", "w~2").strip(), "points here", 0)}
        # from a past revision, the session itself goes on from there
        past = store.resolve("w~1")
        found = history.branches(store, past, store.log("w", start=past.commit))
        assert [(b.session_id, b.how, b.turns_since) for b in found[w1]] == [
            ("alt", "forked here", 1), ("other", "branches off here", 0), ("w", "continues from here", 1)]
        view = history.read_log(store, tip, limit=1, graph=True)
        assert [c.commit for c in view.commits] == [tip.commit]
        assert set(view.branches) == set(found) | {git("rev-parse", "w~2").strip()}  # below the limit too


def test_merge_base_and_diff_of_unrelated_sessions(gs, repo_path):
    asks(gs, "a", "qa")
    asks(gs, "b", "qb1", "qb2")
    assert gs("fork", "b~1", "c").code == 0
    with opened(repo_path) as store:
        a, b, c = (store.resolve(s) for s in ("a", "b", "c"))
        assert history.merge_base(store, a.commit, b.commit) is None
        assert history.merge_base(store, b.commit, c.commit) == store.resolve("b~1").commit
        assert history.diff(store, a, b).base is None
        d = history.diff(store, b, c)
        assert d.base is not None and d.base.commit == store.resolve("b~1").commit
        assert (d.a.revision, d.b.revision) == (b, c)


# -- search --------------------------------------------------------------------------------------


def test_scan_log_matches_any_case_in_messages_only():
    raw = (HEADER + turn(0, 1, "Straße to Paris", "Go STRASSE way") + line(6, "turn/start")
           + line(7, "user/message", content='say "hi" now') + line(8, "tool/result", id="c", content="PARIS")
           + line(9, "session/title", title="paris") + line(10, "user/message", content=["paris"]))
    hits = search.scan_log(raw, "strasse")
    assert [(seq, t, role) for seq, t, role, _ in hits] == [(1, 1, "user"), (3, 1, "assistant")]
    assert hits[0][3] == "Straße to Paris"
    assert [(seq, t, role) for seq, t, role, _ in search.scan_log(raw, "paris")] == [(1, 1, "user"), (8, 2, "tool")]
    assert [h[0] for h in search.scan_log(raw, '"hi"')] == [7]  # quotes are escaped in the file
    assert search.scan_log(raw, "nowhere") == []


def test_scan_log_reads_escaped_non_ascii():
    escaped = json.dumps({"seq": 0, "time": 1, "type": "user/message", "data": {"content": "Café crème"}})
    assert "\\u00e9" in escaped  # as another writer may store it
    [(seq, _turn, role, snippet)] = search.scan_log(HEADER + escaped.encode() + b"\n", "CAFÉ")
    assert (seq, role, snippet) == (0, "user", "Café crème")


def test_search_attributes_dedupes_and_skips_what_it_cannot_read(gs, repo_path, plain, fake_api):
    fake_api.script(*[text("ok") for _ in range(3)])  # replies without the needle
    asks(gs, "w", "find the needle", "second")
    assert gs("fork", "w", "alt").code == 0
    asks(gs, "alt", "another needle")
    plain("bad", HEADER, name="notes.txt")  # a branch without session.jsonl
    with opened(repo_path) as store:
        skipped: list[tuple[str, CorruptSession]] = []
        hits = search.search(store, "NEEDLE", on_skip=lambda sid, exc: skipped.append((sid, exc)))
        # one hit per message: the one w and alt share is w's, where it was written, alt named
        assert [(h.session, h.seq, h.also) for h in hits] == [("w", 1, [("alt", False)]), ("alt", 13, [])]
        assert [sid for sid, _ in skipped] == ["bad"] and isinstance(skipped[0][1], CorruptSession)
        w_first = store.log("w")[-1].commit
        assert {h.commit.commit for h in hits if h.seq == 1} == {w_first}  # the commit that added it
        # each message once, in the session it was written in
        once = search.search(store, "needle", all_revisions=True)
        assert [(h.session, h.seq) for h in once] == [("w", 1), ("alt", 13)]
        with pytest.raises(SessionNotFound):
            search.search(store, "needle", session="nosuch")
        assert search.search(store, "needle", session="w")[0].archived is False
    assert gs("rm", "w").code == 0
    with opened(repo_path) as store:
        with pytest.raises(SessionNotFound):  # archived: only searched with all_revisions
            search.search(store, "needle", session="w")
        [archived] = search.search(store, "find the", session="w", all_revisions=True)
        assert archived.archived and archived.commit is not None
        assert [i.session_id for i in history.list_sessions(store, archived=True)] == ["w"]


# -- the same on every store: git and memory --------------------------------------------------


def test_the_log_and_the_diff_read_the_same_on_any_store(any_store, say):
    store = any_store.store
    say(store, "w", "q1", "q2")
    say(store, "w~1", "q2 again", fork_as="alt")
    with any_store.again() as fresh:
        sessions = {info.session_id: info for info in history.list_sessions(fresh)}
        view = history.read_log(fresh, history.read_revision(fresh, "alt"), graph=True, patch=True)
        both = history.diff(fresh, fresh.resolve("w"), fresh.resolve("alt"))
        w = fresh.log("w")
    assert set(sessions) == {"w", "alt"} and sessions["alt"].message.subject == "turn 2: q2 again"
    assert [c.message.subject for c in view.commits] == ["turn 2: q2 again", "fork: alt from w at " + w[1].commit[:7],
                                                         "turn 1: q1"]
    assert history.fork_origin(view.commits[1]) == ("w", w[1].commit)
    assert [item.text for item in view.added[view.commits[0].commit] if hasattr(item, "text")] == [
        "q2 again", "re: q2 again"]
    assert both.base is not None and both.base.commit == w[1].commit
    assert [i.text for i in both.a.items if hasattr(i, "text")] == ["q2", "re: q2"]
    assert [i.text for i in both.b.items if hasattr(i, "text")] == ["q2 again", "re: q2 again"]


def test_search_finds_the_same_hits_on_any_store_with_and_without_its_index(any_store, say, tmp_path):
    store = any_store.store
    say(store, "w", "where is the YAML parser?", "and the JSON one?")
    say(store, "w~1", "Where is the yaml PARSER now?", fork_as="alt")
    index = tmp_path / "search.sqlite"
    with any_store.again() as fresh:
        scanned = search.search(fresh, "yaml parser")
        indexed = search.search(fresh, "yaml parser", index=index)
        again = search.search(fresh, "yaml parser", index=index)  # the index answers, now built
    assert index.exists()
    found = [(h.session, h.turn, h.role, h.snippet) for h in scanned]
    assert found == [("w", 1, "user", "where is the YAML parser?"),  # session by session, in log order
                     ("w", 1, "assistant", "re: where is the YAML parser?"),
                     ("alt", 2, "user", "Where is the yaml PARSER now?"),
                     ("alt", 2, "assistant", "re: Where is the yaml PARSER now?")]
    for hits in (indexed, again):
        assert [(h.session, h.turn, h.role, h.snippet) for h in hits] == found
    turn_one = next(h for h in scanned if h.session == "w" and h.role == "user")
    assert turn_one.commit is not None and turn_one.commit.message.subject == "turn 1: where is the YAML parser?"
    assert turn_one.also == [("alt", False)]  # the fork holds the same message: one hit, both named
