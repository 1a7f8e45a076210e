"""What only the git session store shows: checked with the real git CLI (fsck, refs, objects).

The backend-neutral contract (save, load, list, log, resolve, fork, rename, archive, journal,
lock) is tests/test_store_contract.py, run against every backend. The class here runs twice:
with one ``GitStore`` object for every operation, and with a fresh ``GitStore`` per operation
(as separate ``gs`` processes would see the repository).
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import GS
from dulwich.objects import Blob
from test_store_contract import BAD_EVENT_IDS, BAD_EVENTS, Writer  # one helper for the store's callers

from gitsessions.errors import (
    ConcurrentUpdate,
    CorruptSession,
    InvalidEvent,
    RepoBusy,
    SessionExists,
    SessionLocked,
    SessionNotFound,
)
from gitsessions.log.commits import COUNTED, CommitMessage, commit_message
from gitsessions.log.events import encode_log, make_event
from gitsessions.store import GitStore, MemoryStore, SessionLock


def git_bytes(repo: Path, *args: str, input: bytes | None = None) -> bytes:
    """Run the real git CLI in ``repo`` and return stdout as bytes (fails on error)."""
    proc = subprocess.run(["git", "-C", str(repo), *args], input=input, capture_output=True)
    assert proc.returncode == 0, f"git {' '.join(args)} failed: {proc.stderr.decode()}"
    return proc.stdout


def object_count(repo: Path) -> int:
    """Loose plus packed objects, as git counts them."""
    if not repo.exists():
        return 0
    stats = dict(
        line.split(": ", 1) for line in git_bytes(repo, "count-objects", "-v").decode().splitlines()
    )
    return int(stats["count"]) + int(stats["in-pack"])


class Stores:
    """Hands out the GitStore for each operation: the same object, or a fresh one every time."""

    def __init__(self, path: Path, reopen: bool):
        self.path = path
        self.reopen = reopen
        self._current: GitStore | None = None
        self.opened = 0

    def __call__(self) -> GitStore:
        if self._current is None or self.reopen:
            self.close()
            self._current = GitStore(self.path)
            self.opened += 1
        return self._current

    def close(self) -> None:
        if self._current is not None:
            self._current.close()
            self._current = None


@pytest.fixture(params=["same-object", "reopened"])
def stores(request, repo_path: Path) -> Iterator[Stores]:
    s = Stores(repo_path, reopen=request.param == "reopened")
    yield s
    s.close()


class TestGitRepository:
    """What a GitStore leaves in git, however many objects or processes share the repository."""

    def test_saves_are_plain_git_commits(self, stores: Stores, repo_path: Path, git):
        """The store side of this round trip is in the contract suite; here git reads it."""
        w = Writer(stores, "work")
        c1 = w.save_turn("How do I parse YAML? ✓", "Use yaml.safe_load 日本")
        raw1 = w.raw()
        c2 = w.save_turn("and JSON?\nsecond line", "json.loads")
        assert git("rev-parse", "refs/heads/work").strip() == c2
        assert git("cat-file", "-t", c2).strip() == "commit"
        snap = stores().load("work")
        assert snap.raw == git_bytes(repo_path, "show", "work:session.jsonl")
        assert snap.raw == git_bytes(repo_path, "show", f"{c2}:session.jsonl")
        # The tree holds exactly one file.
        assert git("ls-tree", "--name-only", c2).split() == ["session.jsonl"]
        assert raw1 == git_bytes(repo_path, "show", f"{c1}:session.jsonl")

    def test_author_time_is_kept_as_both_dates_in_utc(self, stores: Stores, repo_path: Path, git):
        """An import dates each turn by when it was said, as author and committer, in UTC.

        (So that the same import on two machines makes the same commits; see write_commit.)
        """
        said = 1_600_000_000  # 2020-09-13, well before any test run
        ev = make_event(0, "session/title", {"title": "old"}, time_ms=said * 1000)
        tip = stores().append("dated", [ev], CommitMessage("title: old", {"Session": "dated"}), expected_tip=None,
                              header={"type": "session", "version": 1, "id": "dated"}, author_time=said)
        assert git("log", "-1", "--format=%at %ct %ai %ci", tip).split() == [
            str(said), str(said), "2020-09-13", "12:26:40", "+0000", "2020-09-13", "12:26:40", "+0000"]
        git("fsck", "--strict")

    def test_stale_expected_tip_is_refused(self, stores: Stores, repo_path: Path, git):
        w = Writer(stores, "s1")
        c1 = w.save_turn("one")
        c2 = w.save_turn("two")
        before_log = git("log", "--format=%H", "s1")
        before_raw = git_bytes(repo_path, "show", "s1:session.jsonl")
        stale = Writer(stores, "s1")
        stale.events, stale.tip, stale.turns = list(w.events[:6]), c1, 1
        with pytest.raises(ConcurrentUpdate) as exc:
            stale.save_turn("lost race")
        assert exc.value.expected == c1 and exc.value.found == c2
        assert stores().tip("s1") == c2
        assert git("log", "--format=%H", "s1") == before_log
        assert git_bytes(repo_path, "show", "s1:session.jsonl") == before_raw
        # Creating it again is refused too.
        fresh = Writer(stores, "s1")
        with pytest.raises(SessionExists):
            fresh.save_turn("again")
        assert stores().tip("s1") == c2
        git("fsck", "--strict")

    def test_other_writer_commit_is_never_dropped(self, stores: Stores, repo_path: Path, git):
        w = Writer(stores, "shared")
        c1 = w.save_turn("one")
        # Another process (its own GitStore) saves on top of c1 first.
        with GitStore(repo_path) as other_store:
            other = Writer(stores, "shared")
            other.events, other.tip, other.turns = list(w.events), c1, 1
            new = other.turn_events("theirs")
            theirs = other_store.append("shared", new, other.message(new, "theirs"), expected_tip=c1)
        with pytest.raises(ConcurrentUpdate):
            w.save_turn("ours")
        assert stores().tip("shared") == theirs
        assert git("log", "--format=%s", "shared").splitlines() == ["turn 2: theirs", "turn 1: one"]

    def test_bad_seq_on_create_writes_nothing(self, stores: Stores, repo_path: Path):
        w = Writer(stores, "fresh")
        events = w.turn_events("x")
        bad = [make_event(1 + i, e.type, e.data) for i, e in enumerate(events)]
        with pytest.raises(InvalidEvent):
            stores().append("fresh", bad, CommitMessage("x"), expected_tip=None, header=w.header)
        assert object_count(repo_path) == 0
        assert stores().tip("fresh") is None
        assert stores().list_sessions() == []
        # A new session needs its header.
        with pytest.raises(InvalidEvent):
            stores().append("fresh", events, CommitMessage("x"), expected_tip=None)
        assert stores().tip("fresh") is None

    @pytest.mark.parametrize("shift", ["gap", "repeat", "restart", "hole-inside", "swapped"])
    def test_gapped_or_repeated_seq_is_refused(self, stores: Stores, repo_path: Path, git, shift):
        w = Writer(stores, "s")
        tip = w.save_turn("one")
        n = len(w.events)
        seqs = {"gap": [n + 1, n + 2], "repeat": [n - 1, n], "restart": [0, 1],
                "hole-inside": [n, n + 2], "swapped": [n + 1, n]}[shift]
        events = [make_event(s, "session/title", {"title": "t"}) for s in seqs]
        count = object_count(repo_path)
        with pytest.raises(InvalidEvent) as exc:
            stores().append("s", events, CommitMessage("bad"), expected_tip=tip)
        assert "seq" in str(exc.value)
        assert stores().tip("s") == tip
        assert object_count(repo_path) == count
        assert len(git("log", "--format=%H", "s").split()) == 1

    @pytest.mark.parametrize("event", BAD_EVENTS, ids=BAD_EVENT_IDS)
    def test_non_json_values_are_refused(self, stores: Stores, repo_path: Path, event):
        w = Writer(stores, "s")
        tip = w.save_turn("one")
        assert len(w.events) == 6
        count = object_count(repo_path)
        with pytest.raises(InvalidEvent):
            stores().append("s", [event], CommitMessage("bad"), expected_tip=tip)
        assert stores().tip("s") == tip
        assert object_count(repo_path) == count
        stores().load("s")  # still readable

    def test_non_json_header_is_refused(self, stores: Stores, repo_path: Path):
        w = Writer(stores, "s")
        w.header["cwd"] = float("nan")
        with pytest.raises(InvalidEvent):
            w.save_turn("x")
        assert stores().tip("s") is None and object_count(repo_path) == 0

    def test_ids_differing_only_by_case(self, stores: Stores, repo_path: Path, git):
        Writer(stores, "Work").save_turn("one")
        for other in ("work", "WORK", "Work"):
            with pytest.raises(SessionExists) as exc:
                Writer(stores, other).save_turn("clash")
            assert exc.value.existing == "Work"
        assert stores().find("wOrK") == "Work"
        assert stores().find("play") is None
        refs = git("for-each-ref", "--format=%(refname)", "refs/heads").split()
        assert refs == ["refs/heads/Work"]

    def test_list_sessions_survives_foreign_and_damaged_branches(self, stores: Stores, repo_path: Path):
        w = Writer(stores, "good")
        tip = w.save_turn("one")
        # Branches made with plain git that are not valid session ids, and a damaged one.
        git_bytes(repo_path, "update-ref", "refs/heads/feature/x", tip)
        git_bytes(repo_path, "update-ref", "refs/heads/v1.0", tip)
        (repo_path / "refs" / "heads" / "broken").write_text("1" * 40 + "\n")
        listed = {s.session_id: s for s in stores().list_sessions()}
        assert listed["good"].error is None and listed["good"].tip == tip
        assert listed["broken"].error  # listed, with the problem named
        for foreign in ("feature/x", "v1.0"):
            assert foreign not in listed or listed[foreign].error

    def test_a_commit_without_the_log_is_named_in_words(self, stores: Stores, repo_path: Path):
        """Not as Python's bytes repr of the missing name (``b'session.jsonl'``)."""
        Writer(stores, "good").save_turn("one")  # the repo exists
        blob = git_bytes(repo_path, "hash-object", "-w", "--stdin", input=b"notes\n").strip().decode()
        tree = git_bytes(repo_path, "mktree", input=f"100644 blob {blob}\tnotes.txt\n".encode()).strip().decode()
        who = ("-c", "user.name=A", "-c", "user.email=a@example.com")
        commit = git_bytes(repo_path, *who, "commit-tree", tree, "-m", "notes").strip().decode()
        with pytest.raises(CorruptSession) as info:
            stores().read_raw("notes", commit)
        assert f"commit {commit[:12]} has no session.jsonl;" in str(info.value), str(info.value)
        assert "b'" not in str(info.value)

    def test_log_newest_first_with_parents(self, stores: Stores, git):
        w = Writer(stores, "s")
        commits = [w.save_turn(f"prompt {i}") for i in range(1, 5)]
        log = stores().log("s")
        assert [c.commit for c in log] == commits[::-1]
        assert [c.parents for c in log] == [[commits[2]], [commits[1]], [commits[0]], []]
        assert [c.message.subject for c in log] == [f"turn {i}: prompt {i}" for i in (4, 3, 2, 1)]
        git_view = [line.split() for line in git("log", "--format=%H %P", "s").splitlines()]
        assert git_view == [[c.commit, *c.parents] for c in log]
        assert [int(t) for t in git("log", "--format=%ct", "s").split()] == [c.time for c in log]
        assert [c.commit for c in stores().log("s", limit=2)] == commits[:1:-1]
        assert [c.commit for c in stores().log("s", start=commits[1])] == commits[1::-1]
        with pytest.raises(SessionNotFound):
            stores().log("missing")

    def test_commit_message_and_trailers(self, stores: Stores, repo_path: Path, git):
        w = Writer(stores, "s")
        w.save_turn("How do I parse YAML?")
        assert git("log", "-1", "--format=%s", "s").strip() == "turn 1: How do I parse YAML?"
        body = git("log", "-1", "--format=%B", "s")
        proc = subprocess.run(["git", "-C", str(repo_path), "interpret-trailers", "--parse"],
                              input=body, capture_output=True, text=True, check=True)
        assert proc.stdout.splitlines() == ["Session: s", "Turn: 1", "Model: m", "Messages: 2", "Events: 0-5"]
        assert git("log", "-1", "--format=%(trailers:key=Events,valueonly)", "s").strip() == "0-5"
        assert git("log", "-1", "--format=%an <%ae>", "s").strip() == "gitsessions <gitsessions@localhost>"
        assert git("log", "-1", "--format=%cn <%ce>", "s").strip() == "gitsessions <gitsessions@localhost>"
        info = stores().log("s")[0]
        assert info.message.trailers == {"Session": "s", "Turn": "1", "Model": "m", "Messages": "2", "Events": "0-5"}

    def test_awkward_subjects(self, stores: Stores, repo_path: Path, git):
        w = Writer(stores, "s")
        w.save_turn("x" * 200)
        subject = git("log", "-1", "--format=%s", "s").strip()
        assert len(subject) <= 72 and subject.startswith("turn 1: xxx")
        # A subject with line breaks (a CommitMessage built by any caller) stays one line, in the
        # commit and in the reflog.
        tip = w.tip
        ev = make_event(len(w.events), "session/title", {"title": "t"})
        c = stores().append("s", [ev], CommitMessage("line one\nline two\r\n\tend", {"Turn": "1"}),
                            expected_tip=tip)
        assert git("log", "-1", "--format=%s", c).strip() == "line one line two end"
        assert stores().log("s")[0].message.subject == "line one line two end"
        reflog = git("reflog", "show", "--format=%gs", "refs/heads/s").splitlines()
        assert len(reflog) == 2
        assert "line two" in reflog[0] and "\r" not in reflog[0]
        git("fsck", "--strict")

    def test_fsck_strict_after_several_saves(self, stores: Stores, repo_path: Path, git):
        w = Writer(stores, "s")
        w.save_turn("plain")
        w.save_turn("big", "x" * 1_000_000)
        w.save_turn("unicode ✓ 日本 😀", "reply \u2028")
        Writer(stores, "t").save_turn("another session")
        proc = subprocess.run(["git", "-C", str(repo_path), "fsck", "--strict", "--full"],
                              capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        assert "error" not in proc.stderr and "warning" not in proc.stderr
        assert git("log", "--format=%s", "s").splitlines() == [
            "turn 3: unicode ✓ 日本 😀", "turn 2: big", "turn 1: plain"]

    def test_reflog_lists_the_saves(self, stores: Stores, git):
        w = Writer(stores, "s")
        for i in range(1, 4):
            w.save_turn(f"p{i}")
        entries = git("reflog", "show", "--format=%H %gs", "s").splitlines()
        assert len(entries) == 3
        assert entries[0].split(" ", 1) == [w.tip, "commit: turn 3: p3"]
        assert entries[-1].endswith("commit (initial): turn 1: p1")
        assert git("rev-parse", "s@{2}").strip() == git("rev-list", "--max-parents=0", "s").strip()

    def test_a_batch_and_a_fork_say_their_moves_in_the_saves_words(self, stores: Stores, git):
        one, many = Writer(stores, "one"), Writer(stores, "many")
        one.save_turn("p1")
        planned = []
        for i in range(1, 4):
            new = many.turn_events(f"q{i}")
            planned.append((new, many.message(new, f"q{i}"), None))
            many.events += new
            many.turns += 1
        stores().append_many("many", planned[:1], expected_tip=None, header=many.header)
        stores().append_many("many", planned[1:], expected_tip=stores().tip("many"))
        stores().branch_from("alt", one.tip, CommitMessage("fork: alt from one", {}))
        said = {sid: git("reflog", "show", "--format=%gs", sid).splitlines() for sid in ("one", "many", "alt")}
        assert said["one"] == ["commit (initial): turn 1: p1"]
        assert said["many"] == ["import: 2 commits, the last commit: turn 3: q3", "commit (initial): turn 1: q1"]
        assert said["alt"] == ["branch: fork: alt from one"]

    def test_repo_config(self, stores: Stores, repo_path: Path, git):
        assert not repo_path.exists()
        Writer(stores, "s").save_turn("x")
        assert git("config", "--get", "core.looseCompression").strip() == "1"
        assert git("config", "--get", "gc.auto").strip() == "0"
        assert git("config", "--get", "core.bare").strip() == "true"
        assert git("rev-parse", "--is-bare-repository").strip() == "true"

    @pytest.mark.parametrize("existing", [True, False])
    def test_stale_ref_lock_is_cleared(self, stores: Stores, repo_path: Path, git, existing):
        w = Writer(stores, "s")
        other = Writer(stores, "other")
        other.save_turn("creates the repo")
        if existing:
            w.save_turn("one")
        lock = repo_path / "refs" / "heads" / "s.lock"
        lock.write_bytes(b"0" * 40 + b"\n")
        old = time.time() - 3600
        os.utime(lock, (old, old))
        started = time.monotonic()
        tip = w.save_turn("after a crash")
        assert time.monotonic() - started < 4
        assert not lock.exists()
        assert git("rev-parse", "refs/heads/s").strip() == tip
        assert stores().load("s").events == w.events
        git("fsck", "--strict")

    def test_stale_object_lock_is_cleared(self, stores: Stores, repo_path: Path, git):
        """A process killed while writing a loose object leaves ``objects/xx/<sha>.lock``; the
        next save of the same bytes (a recovery rebuilds them exactly) must not fail forever."""
        w = Writer(stores, "s")
        w.save_turn("one")
        new = w.turn_events("two")
        blob = Blob.from_string(encode_log(w.header, w.events + new))
        sha = blob.id.decode()
        lock = repo_path / "objects" / sha[:2] / f"{sha[2:]}.lock"
        lock.parent.mkdir(exist_ok=True)
        lock.write_bytes(b"x\x9c partial zlib")
        old = time.time() - 3600
        os.utime(lock, (old, old))
        tip = w.save_turn("two")
        assert not lock.exists()
        assert git("rev-parse", "s:session.jsonl").strip() == sha
        assert stores().load("s").raw == w.raw()
        assert tip == stores().tip("s")
        git("fsck", "--strict")

    def test_committed_log_without_final_newline(self, stores: Stores, repo_path: Path, git):
        """A session committed by another tool whose last line lacks its newline still reads, and
        the next save does not glue two events onto one line."""
        w = Writer(stores, "ext")
        w.events = w.turn_events("written by hand")
        w.turns = 1
        w.tip = commit_with_git(repo_path, "ext", w.raw().rstrip(b"\n"))
        assert stores().load("ext").events == w.events
        w.save_turn("next")
        snap = stores().load("ext")
        assert snap.events == w.events
        assert snap.raw == git_bytes(repo_path, "show", "ext:session.jsonl")
        assert all(json.loads(line) for line in snap.raw.splitlines())

    def test_committed_log_with_trailing_blank_line(self, stores: Stores, repo_path: Path, git):
        """A blank last line is dropped as a torn tail; the event before it must survive it."""
        w = Writer(stores, "ext")
        w.events = w.turn_events("written by hand")
        w.turns = 1
        w.tip = commit_with_git(repo_path, "ext", w.raw() + b"\n")
        snap = stores().load("ext")
        assert snap.events == w.events
        assert snap.raw == w.raw()
        w.save_turn("next")
        snap = stores().load("ext")  # would be CorruptSession (seq gap) if the cut lost a line
        assert snap.events == w.events
        assert snap.raw == w.raw()

    def test_committed_log_with_torn_tail(self, stores: Stores, repo_path: Path, git):
        """A torn last line in a commit is damage: reported with its line, never dropped by a save."""
        w = Writer(stores, "ext")
        w.events = w.turn_events("hand")
        w.turns = 1
        w.tip = commit_with_git(repo_path, "ext", w.raw() + b'{"seq":6,"ti')
        with pytest.raises(CorruptSession) as exc:
            stores().load("ext")
        assert exc.value.line == len(w.events) + 2
        with pytest.raises(CorruptSession):
            w.save_turn("next")
        assert stores().tip("ext") == w.tip
        assert [s.error is not None for s in stores().list_sessions()] == [True]

    def test_corrupt_committed_log_is_reported(self, stores: Stores, repo_path: Path):
        w = Writer(stores, "bad")
        events = w.turn_events("x")
        raw = encode_log(w.header, events).replace(b'"seq":2', b'"seq":9')
        commit_with_git(repo_path, "bad", raw)
        with pytest.raises(CorruptSession) as exc:
            stores().load("bad")
        assert exc.value.line == 4


# -- the list-row cache (gs/rows) -------------------------------------------------------------


def _rows_file(repo: Path) -> Path:
    return repo / "gs" / "rows"


def _listed(store: GitStore) -> list[tuple]:
    return [(s.session_id, s.tip, s.time, s.message, s.error) for s in store.list_sessions()]


def _by_hand(repo: Path, branch: str, raw: bytes, message: str) -> str:
    """Move ``branch`` to a commit of ``raw`` made with plain git (behind gs's back) on its tip."""
    blob = git_bytes(repo, "hash-object", "-w", "--stdin", input=raw).decode().strip()
    tree = git_bytes(repo, "mktree", input=f"100644 blob {blob}\tsession.jsonl\n".encode()).decode().strip()
    parent = git_bytes(repo, "rev-parse", f"refs/heads/{branch}").decode().strip()
    proc = subprocess.run(["git", "-C", str(repo), "commit-tree", tree, "-p", parent, "-m", message],
                          capture_output=True, text=True, check=True,
                          env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x",
                               "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"})
    git_bytes(repo, "update-ref", f"refs/heads/{branch}", proc.stdout.strip())
    return proc.stdout.strip()


def test_list_rows_are_kept_by_save_and_list_and_rebuilt_when_missing(repo_path: Path):
    """A save keeps its tip's row and a list the rows it read; without the file the list is the same."""
    a, b = Writer(Stores(repo_path, True), "a"), Writer(Stores(repo_path, True), "b")
    a.save_turn("one")
    b.save_turn("two")
    with GitStore(repo_path) as store:
        assert set(store.state.rows.read()) == {a.tip, b.tip}  # the saves kept them
        first = _listed(store)
    _rows_file(repo_path).unlink()
    with GitStore(repo_path) as store:
        assert _listed(store) == first  # read from git
        assert set(store.state.rows.read()) == {a.tip, b.tip}  # and kept again
        assert _listed(store) == first  # now from the cache
    assert [(sid, turns) for sid, _, _, m, _ in first for turns in [m.fields.turn]] == [("a", 1), ("b", 1)]


def test_a_tip_moved_behind_gs_is_checked_though_its_session_has_a_row(repo_path: Path):
    """The cache is keyed by commit: a new tip (plain git) is read and its log checked; a damaged
    one is flagged on every list and never kept; a liar's trailers lose to its log for good."""
    good, bad = Writer(Stores(repo_path, True), "good"), Writer(Stores(repo_path, True), "bad")
    good.save_turn("one")
    bad.save_turn("one")
    with GitStore(repo_path) as store:
        store.list_sessions()
    torn = _by_hand(repo_path, "bad", bad.raw() + b'{"seq":6,"ti', "turn 2: torn\n\nTurn: 2\nMessages: 4\n")
    liar = _by_hand(repo_path, "good", good.raw(), "turn 9: no\n\nSession: good\nTurn: 9\nMessages: 99\n")
    for _ in range(2):
        with GitStore(repo_path) as store:
            listed = {s.session_id: s for s in store.list_sessions()}
            assert listed["bad"].tip == torn and listed["bad"].error  # flagged each time
            assert torn not in store.state.rows.read()
            assert (listed["good"].tip, listed["good"].error) == (liar, None)
            assert (listed["good"].message.fields.turn, listed["good"].message.fields.messages) == (1, 2)
            store.load("good")  # verified now: its trailers would be trusted, its row is the log's
    assert git_bytes(repo_path, "rev-parse", "refs/heads/good").decode().strip() == liar


def test_damaged_and_stale_rows(repo_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A line cut short (a full disk) or not a row is skipped; rows of old tips go when they pile up."""
    w = Writer(Stores(repo_path, True), "w")
    for i in range(5):
        w.save_turn(f"p{i}")
    with GitStore(repo_path) as store:
        truth = _listed(store)
    rows = _rows_file(repo_path)
    assert len(rows.read_bytes().splitlines()) == 5  # one per save: four are stale
    with rows.open("ab") as f:
        f.write(b'["%s", 1, "x", {"Turn": 7}]\n[1, 2]\nnot json\n["%s", 1, "turn' % (w.tip.encode(), w.tip.encode()))
    with GitStore(repo_path) as store:
        assert _listed(store) == truth
    monkeypatch.setattr("gitsessions.store.state.ListRows.SLACK_LINES", 0)
    with GitStore(repo_path) as store:
        assert _listed(store) == truth
    assert [json.loads(line)[0] for line in rows.read_bytes().splitlines()] == [w.tip]  # rewritten
    w.save_turn("after")  # appends to the rewritten file
    with GitStore(repo_path) as store:
        assert store.list_sessions()[0].message.fields.turn == 6
    assert [json.loads(line)[0] for line in rows.read_bytes().splitlines()][1:] == [w.tip]


_LISTER = """
import sys
from gitsessions.store import GitStore
from gitsessions.store.state import ListRows
ListRows.SLACK_LINES = 0  # rewrite the file whenever stale rows outnumber live ones
for _ in range(int(sys.argv[2])):
    with GitStore(sys.argv[1]) as store:
        assert all(s.error is None for s in store.list_sessions())
"""


def test_lists_and_saves_at_once_leave_whole_rows(repo_path: Path, tmp_path: Path):
    """Processes listing while another saves (each appending rows, some rewriting the file) lose
    nothing but speed: every line stays a whole row, and the list is what git says."""
    writers = [Writer(Stores(repo_path, True), f"s{k}") for k in range(3)]
    for w in writers:
        w.save_turn("start")
    _rows_file(repo_path).unlink()
    script = tmp_path / "lister.py"
    script.write_text(_LISTER)
    listers = [subprocess.Popen([sys.executable, str(script), str(repo_path), "15"]) for _ in range(3)]
    for i in range(8):
        for w in writers:
            w.save_turn(f"turn {i}")
    assert [p.wait(timeout=120) for p in listers] == [0, 0, 0]
    for line in _rows_file(repo_path).read_bytes().splitlines():
        assert len(json.loads(line)) == 4
    assert not list((repo_path / "gs").glob(".rows-*"))  # no rewrite left its copy behind
    with GitStore(repo_path) as store:
        cached = _listed(store)
    _rows_file(repo_path).unlink()
    with GitStore(repo_path) as store:
        assert _listed(store) == cached
        assert [s.message.fields.turn for s in store.list_sessions()] == [9, 9, 9]


def commit_with_git(repo: Path, branch: str, raw: bytes) -> str:
    """Commit ``raw`` as ``session.jsonl`` on a new branch with the git CLI (repo created if needed)."""
    if not repo.exists():
        with GitStore(repo) as s:
            s.repo(create=True)
    blob = git_bytes(repo, "hash-object", "-w", "--stdin", input=raw).decode().strip()
    tree = git_bytes(repo, "mktree", input=f"100644 blob {blob}\tsession.jsonl\n".encode()).decode().strip()
    env_commit = subprocess.run(
        ["git", "-C", str(repo), "commit-tree", tree, "-m", "turn 1: by hand"],
        capture_output=True, text=True,
        env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@x",
             "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@x"},
    )
    assert env_commit.returncode == 0, env_commit.stderr
    commit = env_commit.stdout.strip()
    git_bytes(repo, "update-ref", f"refs/heads/{branch}", commit)
    return commit


# -- the writer lock --------------------------------------------------------------------------


def test_lock_blocks_a_second_holder_in_the_same_process(repo_path: Path):
    store = GitStore(repo_path)
    first = store.lock("s")
    assert first.try_acquire() and first.held
    second = store.lock("s")
    assert second.try_acquire() is False and not second.held
    with pytest.raises(SessionLocked) as exc:
        second.acquire()
    message = str(exc.value)
    assert f"pid {os.getpid()}" in message and socket.gethostname() in message
    assert exc.value.session_id == "s"
    info = json.loads((repo_path / "gs" / "locks" / "s.lock").read_text())
    assert info["pid"] == os.getpid() and info["host"] == socket.gethostname()
    assert abs(info["started"] / 1000 - time.time()) < 60
    # Other sessions are not blocked.
    with store.lock("t") as other:
        assert other.held
    first.release()
    first.release()  # idempotent
    assert second.try_acquire()
    second.release()


def test_a_writer_refused_while_the_holder_names_itself_is_told_who_holds_it(repo_path: Path, monkeypatch):
    """The holder writes its name right after it takes the lock: a writer started with it reads the file again."""
    from gitsessions.store import lock as lock_module

    store = GitStore(repo_path)
    first = store.lock("caseR")
    assert first.try_acquire()
    path = repo_path / "gs" / "locks" / "caser.lock"
    named = path.read_text()
    path.write_text("")  # the moment between the holder's flock and its name
    monkeypatch.setattr(lock_module.time, "sleep", lambda _s: path.write_text(named))  # ...which comes next
    with pytest.raises(SessionLocked) as exc:
        store.lock("caser").acquire()
    said = str(exc.value)  # the one wording of a case clash, whether or not the holder's first save landed
    assert said.startswith("no session 'caser'; did you mean 'caseR'? (session 'caseR' is being written by "
                           f"pid {os.getpid()} on "), said
    assert said.endswith("once it is done, 'gs chat caseR' goes on from where it ends)"), said  # no advice to
    # read or fork 'caseR': its first save may not have landed
    first.release()


LOCK_CHILD = """
import sys, time
from gitsessions.store import SessionLock
lock = SessionLock(sys.argv[1], "s")
lock.acquire()
print("locked", flush=True)
time.sleep(120)
"""


def test_lock_of_a_dead_process_is_taken_over(repo_path: Path):
    path = repo_path / "gs" / "locks" / "s.lock"
    child = subprocess.Popen([sys.executable, "-c", LOCK_CHILD, str(path)], stdout=subprocess.PIPE,
                             text=True, cwd=Path(__file__).resolve().parents[1])
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "locked"
        mine = SessionLock(path, "s")
        assert mine.try_acquire() is False
        with pytest.raises(SessionLocked) as exc:
            mine.acquire()
        assert f"pid {child.pid}" in str(exc.value)
        os.kill(child.pid, signal.SIGKILL)
        child.wait(timeout=10)
        assert path.exists()  # the file stays behind; the kernel dropped the lock
        assert mine.try_acquire()
        assert json.loads(path.read_text())["pid"] == os.getpid()
        mine.release()
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()


def test_a_folder_holding_part_of_a_repo_is_completed_into_one(repo_path: Path, git):
    """A killed first save (or hooks/ put there first) left folders dulwich's init refused to
    make again: every save of that repo then failed with an internal error."""
    (repo_path / "hooks").mkdir(parents=True)
    (repo_path / "refs" / "heads").mkdir(parents=True)
    w = Writer(Stores(repo_path, reopen=False), "work")
    w.save_turn("one")
    git("fsck", "--strict")
    assert git("log", "--format=%s", "work").strip() == "turn 1: one"
    assert not (repo_path / "gs" / "init-staging").exists()


@pytest.mark.parametrize("name", ["init", "repack"])
def test_a_session_named_like_a_lock_of_the_repo_saves_and_packs(gs_env, repo_path, name):
    # The repo's own locks are not in gs/locks/, whose file names are session ids: a first save
    # of a session named "init" waited forever for the lock it held itself.
    for args in (["ask", "-S", name, "hi"], ["ask", "-S", name, "again"], ["gc"]):
        run = subprocess.run([*GS, *args], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
        assert run.returncode == 0, (args, run.stderr)
    assert subprocess.run(["git", "--git-dir", str(repo_path), "log", "--format=%s", name],
                          capture_output=True, text=True, check=True).stdout.split("\n")[0] == "turn 2: again"


def test_a_tip_listed_from_its_log_takes_only_the_counts_from_it():
    w = Writer(lambda: MemoryStore(), "w")
    events = w.turn_events("hello")
    by_hand = CommitMessage("made by plain git", {"Session": "w", "Turn": "9", "Title": "wrong", "Custom": "x"})
    counted = by_hand.counted("w", events)
    assert counted.subject == "made by plain git"
    assert counted.trailers == {"Session": "w", "Custom": "x", "Turn": "1", "Messages": "2", "Title": "hello"}
    assert {k: counted.trailers[k] for k in COUNTED} == {
        k: v for k, v in commit_message("w", events).trailers.items() if k in COUNTED}


def test_a_git_lock_another_process_holds_means_one_thing_per_kind_of_write(tmp_path: Path, monkeypatch):
    """lock.py is where a held ``.lock`` is translated: waited out then refused, or left to the next run."""
    from dulwich.errors import ChecksumMismatch
    from dulwich.file import FileLocked

    from gitsessions.store import lock

    held = tmp_path / "w.lock"
    held.write_text("")
    tries: list[int] = []

    def locked() -> None:
        tries.append(1)
        raise FileLocked(str(tmp_path / "w"), str(held))

    monkeypatch.setattr(lock, "REF_LOCK_WAIT_S", 0.05)  # a live holder, waited out for less long
    with pytest.raises(ConcurrentUpdate) as refused:
        lock.wait_out(locked, refused=lambda: ConcurrentUpdate("refs/heads/w", None, lock.REF_HELD))
    assert len(tries) > 1 and held.exists()  # tried again, and a live holder's lock is left alone
    assert "found locked by an" in str(refused.value)
    with pytest.raises(RepoBusy) as busy:
        lock.wait_out(locked)
    assert str(tmp_path / "w") in str(busy.value) and "run the command again" in str(busy.value)
    old = time.time() - 3600
    os.utime(held, (old, old))  # what a dead process left

    def once_held() -> str:
        if held.exists():
            raise FileLocked(str(tmp_path / "w"), str(held))
        return "written"

    assert lock.wait_out(once_held) == "written" and not held.exists()
    held.write_text("")
    assert lock.unless_held(locked) is False and lock.unless_held(lambda: None) is True
    assert lock.unless_same_pack(locked) is None and lock.unless_same_pack(lambda: {"ref": None}) == {"ref": None}

    def same_pack() -> None:
        raise ChecksumMismatch(b"a" * 40, b"b" * 40)

    assert lock.unless_same_pack(same_pack) is None
