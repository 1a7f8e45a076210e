"""The session store contract, written once and run against every backend unchanged.

``StoreContract`` holds the tests; each backend class below only says how to get "the store
for the next operation" (dulwich's ``RefsContainerTests`` is the model). GitStore runs twice:
with one object for every operation, and with a fresh object per operation (as separate
``gs`` processes see the repository). What only a git repository can show (``git fsck``,
loose objects, lock files, reflogs) stays in test_store.py.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from gitsessions.errors import (
    BadRevision,
    ConcurrentUpdate,
    CorruptSession,
    InvalidEvent,
    InvalidSessionId,
    SessionExists,
    SessionLocked,
    SessionNotFound,
)
from gitsessions.ids import check_free
from gitsessions.log.commits import CommitMessage
from gitsessions.log.events import Event, encode_log, make_event, make_header
from gitsessions.store import GitStore, MemoryStore, SessionStore

T0 = 1_700_000_000_000

Stores = Callable[[], SessionStore]


#: Events no backend may store (a later read would refuse them); the git tests reuse them.
BAD_EVENTS = [
    Event(6, T0, "user/message", {"content": float("nan")}),
    Event(6, T0, "user/message", {"content": float("inf")}),
    Event(6, T0, "user/message", {"content": object()}),
    Event(6, T0, "user/message", {"content": b"bytes"}),
    Event(6, T0, "user/message", {"content": "lone \ud800"}),
    Event(6, T0, "user/message", {1: "int key"}),
    Event(6, T0, "future/kind", {}),  # unknown and not ignorable: unreadable later
    Event(6, T0, "user/message", ["not", "an", "object"]),
    Event(6, "noon", "user/message", {}),
]
BAD_EVENT_IDS = ["nan", "inf", "object", "bytes", "surrogate", "int-key", "unknown-type", "list-data", "str-time"]


class Writer:
    """Tracks one session's events and tip the way a caller of the store does."""

    def __init__(self, stores: Stores, sid: str):
        self.stores = stores
        self.sid = sid
        self.header = make_header(sid, created=T0, cwd="/work", generator="gs test")
        self.events: list[Event] = []
        self.tip: str | None = None
        self.turns = 0

    def turn_events(self, prompt: str, reply: str = "ok") -> list[Event]:
        n = self.turns + 1
        specs = [
            ("turn/start", {"turn": n}),
            ("user/message", {"content": prompt}),
            ("step/start", {"step": 1}),
            ("assistant/message", {"content": reply, "tool_calls": [], "model": "m"}),
            ("step/end", {"step": 1}),
            ("turn/end", {"turn": n, "reason": "completed"}),
        ]
        base = len(self.events)
        return [make_event(base + i, t, d, time_ms=T0 + base + i) for i, (t, d) in enumerate(specs)]

    def message(self, new: list[Event], prompt: str) -> CommitMessage:
        n = self.turns + 1
        return CommitMessage(f"turn {n}: {prompt}", {
            "Session": self.sid, "Turn": str(n), "Model": "m", "Messages": str(2 * n),
            "Events": f"{new[0].seq}-{new[-1].seq}",
        })

    def save_turn(self, prompt: str, reply: str = "ok") -> str:
        new = self.turn_events(prompt, reply)
        commit = self.stores().append(
            self.sid, new, self.message(new, prompt), expected_tip=self.tip,
            header=self.header if self.tip is None else None,
        )
        self.events += new
        self.tip = commit
        self.turns += 1
        return commit

    def raw(self) -> bytes:
        return encode_log(self.header, self.events)


class StoreContract:
    """What every SessionStore does. A subclass provides the ``stores`` fixture."""

    # -- saving and reading ----------------------------------------------------------------

    def test_create_append_load_round_trip(self, stores: Stores):
        w = Writer(stores, "work")
        c1 = w.save_turn("How do I parse YAML? ✓", "Use yaml.safe_load 日本")
        raw1 = w.raw()
        c2 = w.save_turn("and JSON?\nsecond line", "json.loads")
        assert len(c1) == 40 and all(ch in "0123456789abcdef" for ch in c1) and c1 != c2
        assert stores().tip("work") == c2
        snap = stores().load("work")
        assert snap.commit == c2 and snap.session_id == "work"
        assert snap.header == w.header
        assert snap.events == w.events
        assert snap.raw == w.raw()
        assert stores().read_raw("work", c2) == w.raw()
        old = stores().load("work", c1)  # an older commit reads the session as it was then
        assert old.commit == c1 and old.raw == raw1 and old.events == w.events[:6]
        assert snap.raw.startswith(old.raw)  # append only

    def test_load_missing_session(self, stores: Stores):
        with pytest.raises(SessionNotFound):
            stores().load("nope")
        Writer(stores, "other").save_turn("x")
        with pytest.raises(SessionNotFound) as exc:
            stores().load("nope")
        assert "other" in str(exc.value)
        assert stores().tip("nope") is None
        with pytest.raises(CorruptSession):
            stores().load("other", "0" * 40)  # no such commit

    def test_the_session_made_last_is_current(self, stores: Stores):
        assert stores().current() is None
        Writer(stores, "one").save_turn("a")
        two = Writer(stores, "two")
        two.save_turn("b")
        assert stores().current() == "two"
        stores().set_current("one")
        assert stores().current() == "one"
        two.save_turn("c")  # a save of an old session (a recovery, say) leaves HEAD alone
        assert stores().current() == "one"
        stores().rename("one", "uno")
        assert stores().current() == "uno"  # the current session follows its name
        stores().archive("uno")
        assert stores().current() == "two"  # an archived session is no current one: the one saved last is
        stores().archive("two")
        assert stores().current() is None  # none is left

    def test_the_current_session_moves_by_one_policy(self, stores: Stores):
        tip = Writer(stores, "work").save_turn("a")
        assert stores().current() == "work"  # a save that makes a session
        stores().branch_from("aside", tip, CommitMessage("fork"), current=False)
        imported = Writer(stores, "imported")
        new = imported.turn_events("i")
        planned = [(new, imported.message(new, "i"), None)]
        stores().append_many("imported", planned, expected_tip=None, header=imported.header, current=False)
        assert stores().current() == "work"  # a fork and an import told not to leave it
        stores().archive("aside")
        stores().rename("imported", "imports")
        assert stores().current() == "work"  # nor do an archive and a rename of another session
        batch = Writer(stores, "batch")
        new = batch.turn_events("b")
        stores().append_many("batch", [(new, batch.message(new, "b"), None)], expected_tip=None, header=batch.header)
        assert stores().current() == "batch"
        stores().branch_from("fork", tip, CommitMessage("fork"))
        assert stores().current() == "fork"
        stores().rename("fork", "forked")
        assert stores().current() == "forked"
        stores().set_current("gone")  # names no live session (a clone's master, a session renamed by hand)
        assert stores().current() is None
        last = stores().saved_last()
        assert last in ("work", "imports", "batch", "forked")
        assert stores().current_or_last() == last  # what gs chat -c continues
        stores().settle_current()  # what a pull or clone leaves
        assert stores().current() == last and stores().current_or_last() == last
        stores().set_current("work")
        stores().settle_current()
        assert stores().current() == "work"  # a current session stays

    def test_invalid_ids_are_refused(self, stores: Stores):
        for bad in ("", "-x", "a/b", "HEAD", "x" * 65):
            with pytest.raises(InvalidSessionId):
                stores().tip(bad)
        assert stores().archive_ref("a/b") is None

    def test_stale_expected_tip_is_refused(self, stores: Stores):
        w = Writer(stores, "s1")
        c1 = w.save_turn("one")
        c2 = w.save_turn("two")
        stale = Writer(stores, "s1")
        stale.events, stale.tip, stale.turns = list(w.events[:6]), c1, 1
        with pytest.raises(ConcurrentUpdate) as exc:
            stale.save_turn("lost race")
        assert exc.value.expected == c1 and exc.value.found == c2
        assert stores().tip("s1") == c2
        assert [c.commit for c in stores().log("s1")] == [c2, c1]
        assert stores().load("s1").raw == w.raw()
        fresh = Writer(stores, "s1")  # creating it again is refused too
        with pytest.raises(SessionExists):
            fresh.save_turn("again")
        assert stores().tip("s1") == c2

    def test_other_writer_commit_is_never_dropped(self, stores: Stores):
        w = Writer(stores, "shared")
        c1 = w.save_turn("one")
        other = Writer(stores, "shared")
        other.events, other.tip, other.turns = list(w.events), c1, 1
        theirs = other.save_turn("theirs")
        with pytest.raises(ConcurrentUpdate):
            w.save_turn("ours")
        assert stores().tip("shared") == theirs
        assert [c.message.subject for c in stores().log("shared")] == ["turn 2: theirs", "turn 1: one"]

    def test_append_many_is_its_appends_at_once(self, stores: Stores):
        """The same log, log order, author dates and compare-and-swap as one append per commit."""
        w = Writer(stores, "many")
        planned = []
        for i, prompt in enumerate(["one", "two", "three"]):
            new = w.turn_events(prompt)
            planned.append((new, w.message(new, prompt), 1_600_000_000 + i))
            w.events += new
            w.turns += 1
        shas = stores().append_many("many", planned, expected_tip=None, header=w.header)
        assert len(set(shas)) == 3 and stores().tip("many") == shas[-1]
        assert [c.commit for c in stores().log("many")] == shas[::-1]
        assert [c.said[0] for c in stores().log("many")] == [1_600_000_002, 1_600_000_001, 1_600_000_000]
        assert stores().load("many").raw == w.raw()
        assert stores().load("many", shas[0]).events == w.events[:6]
        stale = Writer(stores, "many")
        stale.events, stale.turns = list(w.events[:6]), 1
        new = stale.turn_events("lost race")
        with pytest.raises(ConcurrentUpdate):  # on a tip it is not at: nothing moves
            stores().append_many("many", [(new, stale.message(new, "lost race"), None)], expected_tip=shas[0])
        with pytest.raises(SessionExists):
            stores().append_many("many", planned, expected_tip=None, header=w.header)
        assert stores().tip("many") == shas[-1]
        assert stores().append_many("many", [], expected_tip=shas[-1]) == []

    def test_bad_seq_on_create_writes_nothing(self, stores: Stores):
        w = Writer(stores, "fresh")
        events = w.turn_events("x")
        bad = [make_event(1 + i, e.type, e.data) for i, e in enumerate(events)]
        with pytest.raises(InvalidEvent):
            stores().append("fresh", bad, CommitMessage("x"), expected_tip=None, header=w.header)
        assert stores().tip("fresh") is None
        assert stores().list_sessions() == []
        with pytest.raises(InvalidEvent):  # a new session needs its header
            stores().append("fresh", events, CommitMessage("x"), expected_tip=None)
        assert stores().tip("fresh") is None

    @pytest.mark.parametrize("shift", ["gap", "repeat", "restart", "hole-inside", "swapped"])
    def test_gapped_or_repeated_seq_is_refused(self, stores: Stores, shift):
        w = Writer(stores, "s")
        tip = w.save_turn("one")
        n = len(w.events)
        seqs = {"gap": [n + 1, n + 2], "repeat": [n - 1, n], "restart": [0, 1],
                "hole-inside": [n, n + 2], "swapped": [n + 1, n]}[shift]
        events = [make_event(s, "session/title", {"title": "t"}) for s in seqs]
        with pytest.raises(InvalidEvent) as exc:
            stores().append("s", events, CommitMessage("bad"), expected_tip=tip)
        assert "seq" in str(exc.value)
        assert stores().tip("s") == tip
        assert len(stores().log("s")) == 1

    @pytest.mark.parametrize("event", BAD_EVENTS, ids=BAD_EVENT_IDS)
    def test_non_json_values_are_refused(self, stores: Stores, event):
        w = Writer(stores, "s")
        tip = w.save_turn("one")
        with pytest.raises(InvalidEvent):
            stores().append("s", [event], CommitMessage("bad"), expected_tip=tip)
        assert stores().tip("s") == tip
        assert stores().load("s").events == w.events  # still readable

    def test_non_json_header_is_refused(self, stores: Stores):
        w = Writer(stores, "s")
        w.header["cwd"] = float("nan")
        with pytest.raises(InvalidEvent):
            w.save_turn("x")
        assert stores().tip("s") is None and stores().session_ids() == []

    def test_ignorable_unknown_event_is_stored(self, stores: Stores):
        w = Writer(stores, "s")
        tip = w.save_turn("one")
        ext = make_event(6, "plugin/note", {"n": 1}, ignorable=True)
        c = stores().append("s", [ext], CommitMessage("note"), expected_tip=tip)
        assert stores().load("s", c).events[-1] == ext

    def test_ids_differing_only_by_case(self, stores: Stores):
        Writer(stores, "Work").save_turn("one")
        for other in ("work", "WORK", "Work"):
            with pytest.raises(SessionExists) as exc:
                Writer(stores, other).save_turn("clash")
            assert exc.value.existing == "Work"
        assert stores().find("wOrK") == "Work"
        assert stores().find("play") is None
        assert stores().session_ids() == ["Work"]

    def test_a_taken_id_is_refused_in_the_same_words_wherever_it_is_met(self, stores: Stores):
        Writer(stores, "Work").save_turn("one")
        for sid in ("old", "x", "y"):
            Writer(stores, sid).save_turn(sid)
        stores().archive("old")
        stores().archive("y")
        tip = stores().tip("Work")
        assert tip is not None
        paths = {
            "fork": lambda sid: stores().branch_from(sid, tip, CommitMessage("fork")),
            "rename": lambda sid: stores().rename("x", sid),
            "restore": lambda sid: stores().restore("y", as_id=sid),
            "check": lambda sid: check_free(stores(), sid),
        }
        said = {}
        for what, make in paths.items():
            for sid in ("WORK", "OLD"):
                with pytest.raises(SessionExists) as exc:
                    make(sid)
                said[what, sid] = str(exc.value)
        assert set(said.values()) == {
            "session 'WORK' already exists as 'Work' (ids may not differ only by case); choose another id",
            "session 'OLD' already exists as an archived session (gs restore old brings it back); choose another id",
        }, said
        with pytest.raises(SessionNotFound) as opened:  # opening WORK: Work is the one meant
            check_free(stores(), "WORK", opening=True)
        assert str(opened.value) == "no session 'WORK'; did you mean 'Work'?"
        with pytest.raises(SessionExists):  # an archived id is not to be opened as a new session
            check_free(stores(), "OLD", opening=True)
        check_free(stores(), "WORK", moving="Work")  # its own name in another case
        check_free(stores(), "OLD", moving="archive/old")
        assert stores().session_ids() == ["Work", "x"] and stores().archived_ids() == ["old", "y"]

    # -- listing and history ---------------------------------------------------------------

    def test_list_sessions(self, stores: Stores):
        assert stores().list_sessions() == []
        b = Writer(stores, "beta")
        b.save_turn("b1")
        tip_b = b.save_turn("b2")
        a = Writer(stores, "alpha")
        tip_a = a.save_turn("a1")
        listed = stores().list_sessions()
        assert [s.session_id for s in listed] == ["alpha", "beta"]
        assert stores().session_ids() == ["alpha", "beta"]
        assert [s.tip for s in listed] == [tip_a, tip_b]
        assert listed[1].message.subject == "turn 2: b2"
        assert listed[1].message.trailers["Turn"] == "2"
        assert listed[1].message.trailers["Session"] == "beta"
        assert all(s.error is None and abs(s.time - time.time()) < 60 for s in listed)
        never = Writer(stores, "never")  # a refused create leaves no entry
        with pytest.raises(InvalidEvent):
            stores().append("never", [make_event(5, "turn/start", {"turn": 1})], CommitMessage("x"),
                            expected_tip=None, header=never.header)
        assert [s.session_id for s in stores().list_sessions()] == ["alpha", "beta"]

    def test_log_newest_first_with_parents(self, stores: Stores):
        w = Writer(stores, "s")
        commits = [w.save_turn(f"prompt {i}") for i in range(1, 5)]
        log = stores().log("s")
        assert [c.commit for c in log] == commits[::-1]
        assert [c.parents for c in log] == [[commits[2]], [commits[1]], [commits[0]], []]
        assert [c.message.subject for c in log] == [f"turn {i}: prompt {i}" for i in (4, 3, 2, 1)]
        assert all(abs(c.time - time.time()) < 60 for c in log)
        assert [c.commit for c in stores().log("s", limit=2)] == commits[:1:-1]
        assert [c.commit for c in stores().log("s", start=commits[1])] == commits[1::-1]
        assert [c.commit for c in stores().first_parents(commits[2])] == commits[2::-1]
        assert stores().commit_info(commits[1]) == log[2]
        with pytest.raises(KeyError):
            stores().commit_info("0" * 40)
        with pytest.raises(SessionNotFound):
            stores().log("missing")

    def test_commit_message_and_trailers(self, stores: Stores):
        w = Writer(stores, "s")
        w.save_turn("How do I parse YAML?")
        info = stores().log("s")[0]
        assert info.message.subject == "turn 1: How do I parse YAML?"
        assert info.message.trailers == {"Session": "s", "Turn": "1", "Model": "m", "Messages": "2",
                                         "Events": "0-5"}

    def test_awkward_subjects(self, stores: Stores):
        w = Writer(stores, "s")
        w.save_turn("x" * 200)
        subject = stores().log("s")[0].message.subject
        assert len(subject) <= 72 and subject.startswith("turn 1: xxx")
        ev = make_event(len(w.events), "session/title", {"title": "t"})
        stores().append("s", [ev], CommitMessage("line one\nline two\r\n\tend", {"Turn": "1"}), expected_tip=w.tip)
        assert stores().log("s")[0].message.subject == "line one line two end"

    def test_resolve(self, stores: Stores):
        w = Writer(stores, "s")
        commits = [w.save_turn(f"p{i}") for i in range(1, 5)]
        r = stores().resolve("s")
        assert (r.session_id, r.commit, r.is_tip) == ("s", commits[3], True)
        assert stores().resolve("s~1").commit == commits[2] and not stores().resolve("s~1").is_tip
        assert stores().resolve("s^^").commit == commits[1]
        assert stores().resolve("s~").commit == commits[2]
        assert stores().resolve("s~1^").commit == commits[1]  # suffixes combine
        assert stores().resolve("s~0").is_tip
        assert stores().resolve(f"s@{commits[0][:7]}").commit == commits[0]
        assert stores().resolve(f"s@{commits[3].upper()}").is_tip
        with pytest.raises(BadRevision, match="s~0 to s~3"):
            stores().resolve("s~4")
        with pytest.raises(BadRevision, match="4 to 40 hex"):
            stores().resolve("s@abc")
        unused = next(p for p in ("0000", "1111", "2222", "3333", "4444") if not any(c.startswith(p) for c in commits))
        with pytest.raises(BadRevision, match="no commit"):
            stores().resolve(f"s@{unused}")
        with pytest.raises(BadRevision):
            stores().resolve("s:x")
        with pytest.raises(SessionNotFound):
            stores().resolve("other~1")
        stores().archive("s")
        with pytest.raises(BadRevision, match="gs restore s"):
            stores().resolve("s")

    # -- forks, renames, the archive --------------------------------------------------------

    def test_branch_from_is_a_fork_of_the_same_log(self, stores: Stores):
        w = Writer(stores, "orig")
        c1 = w.save_turn("one")
        w.save_turn("two")
        ev = make_event(len(w.events), "session/title", {"title": "Ti"})
        titled = stores().append("orig", [ev], CommitMessage("title", {"Turn": "2", "Messages": "4", "Title": "Ti"}),
                                 expected_tip=w.tip)
        message = CommitMessage("fork: copy from orig", {"Session": "copy", "Turn": "1", "Messages": "2",
                                                         "Forked-From": f"orig@{c1}"})
        fork = stores().branch_from("copy", c1, message)  # the store writes the message it is given
        assert stores().tip("copy") == fork and fork not in (c1, titled)
        assert stores().load("copy").raw == stores().load("orig", c1).raw
        info = stores().log("copy")[0]
        assert info.parents == [c1]
        assert info.message.subject == "fork: copy from orig"
        assert info.message.trailers == {"Session": "copy", "Turn": "1", "Messages": "2",
                                         "Forked-From": f"orig@{c1}"}
        later = stores().branch_from("copy2", titled, CommitMessage("fork: copy2", {"Forked-From": f"orig@{titled}"}))
        assert stores().load("copy2").raw == stores().load("orig", titled).raw and stores().tip("copy2") == later
        assert stores().tip("orig") == titled  # the original did not move
        for taken in ("copy", "COPY", "orig"):
            with pytest.raises(SessionExists):
                stores().branch_from(taken, c1, CommitMessage("fork"))
        stores().archive("copy2")
        with pytest.raises(SessionExists) as exc:
            stores().branch_from("copy2", c1, CommitMessage("fork"))
        assert exc.value.existing == "archive/copy2"

    def test_rename(self, stores: Stores):
        w = Writer(stores, "old")
        w.save_turn("one")
        tip = w.save_turn("two")
        Writer(stores, "other").save_turn("x")
        stores().rename("old", "new")
        assert stores().tip("old") is None and stores().tip("new") == tip
        assert [c.commit for c in stores().log("new")][0] == tip and len(stores().log("new")) == 2
        assert stores().session_ids() == ["new", "other"]
        stores().rename("new", "NEW")  # only the case changes
        assert stores().session_ids() == ["NEW", "other"]
        with pytest.raises(SessionExists):
            stores().rename("NEW", "Other")
        with pytest.raises(SessionNotFound):
            stores().rename("gone", "x")
        with pytest.raises(InvalidSessionId):
            stores().rename("NEW", "bad/name")
        assert stores().tip("NEW") == tip

    def test_archive_and_restore(self, stores: Stores):
        w = Writer(stores, "s")
        tip = w.save_turn("one")
        assert stores().archive("s") == "s"
        assert stores().tip("s") is None and stores().session_ids() == []
        assert stores().archived_ids() == ["s"] and stores().archive_ref("s") == tip
        assert stores().list_sessions() == []
        rows = stores().archived_sessions()
        assert [(r.session_id, r.tip, r.message.subject, r.error) for r in rows] == [("s", tip, "turn 1: one", None)]
        with pytest.raises(SessionExists):  # an archived id is not free for a fork
            stores().branch_from("s", tip, CommitMessage("fork"))
        second = Writer(stores, "s").save_turn("new life")  # a new session may take the id
        assert stores().archive("s") == "s-2"  # the name is taken in the archive
        assert stores().archived_ids() == ["s", "s-2"]
        assert stores().archive_ref("s-2") == second and stores().archive_ref("s") == tip
        assert stores().restore("s", as_id="s-back") == "s-back"
        assert stores().tip("s-back") == tip and stores().archived_ids() == ["s-2"]
        with pytest.raises(SessionExists):
            stores().restore("s-2", as_id="S-BACK")
        assert stores().restore("s-2", as_id="s") == "s"
        assert stores().tip("s") == second and stores().archive_ref("s-2") is None
        stores().archive("s-back")
        assert stores().restore("s-back") == "s-back"  # by default under its archive name
        with pytest.raises(SessionNotFound):
            stores().restore("nothing")
        with pytest.raises(SessionNotFound):
            stores().archive("nothing")

    # -- the sidecar: journal and writer lock ----------------------------------------------

    def test_journal_round_trip(self, stores: Stores):
        j = stores().journal("s")
        assert not j.exists() and j.read() is None and stores().journaled() == []
        header = make_header("s", created=T0)
        j.begin(None, header)
        j.append_event(make_event(0, "turn/start", {"turn": 1}, time_ms=T0))
        j.append_delta("partial ")
        j.append_delta("reply")
        j.close()
        assert stores().journaled() == ["s"] and stores().journal("s").exists()
        got = stores().journal("s").read()
        assert got is not None
        assert got.base is None and got.header == header and not got.torn
        assert [e.type for e in got.events] == ["turn/start"] and got.partial == "partial reply"
        j2 = stores().journal("s")
        j2.begin("a" * 40, None)  # a fresh journal replaces the old one
        j2.append_event(make_event(5, "turn/start", {"turn": 2}, time_ms=T0))
        j2.append_delta("x")
        j2.append_event(make_event(6, "user/message", {"content": "hi"}, time_ms=T0))
        got = stores().journal("s").read()
        assert got is not None and got.base == "a" * 40 and [e.seq for e in got.events] == [5, 6]
        assert got.partial == ""  # an event supersedes the text streamed before it
        j2.clear()
        assert not stores().journal("s").exists() and stores().journaled() == []
        with pytest.raises(InvalidSessionId):
            stores().journal("a/b")

    def test_writer_lock(self, stores: Stores):
        first = stores().lock("s")
        assert first.try_acquire() and first.held
        second = stores().lock("s")
        assert second.try_acquire() is False and not second.held
        with pytest.raises(SessionLocked) as exc:
            second.acquire()
        assert exc.value.session_id == "s" and "pid" in str(exc.value)
        with stores().lock("t") as other:  # other sessions are not blocked
            assert other.held
        first.release()
        first.release()  # idempotent
        assert second.try_acquire()
        second.release()


# -- the backends --------------------------------------------------------------------------


class _GitStores:
    """Hands out the GitStore for each operation: the same object, or a fresh one every time."""

    def __init__(self, path: Path, reopen: bool):
        self.path = path
        self.reopen = reopen
        self._current: GitStore | None = None
        self._old: list[GitStore] = []

    def __call__(self) -> GitStore:
        if self._current is None or self.reopen:
            if self._current is not None:
                self._old.append(self._current)  # a lock or journal it handed out may still be used
            self._current = GitStore(self.path)
        return self._current

    def close(self) -> None:
        for store in [*self._old, *([self._current] if self._current else [])]:
            store.close()


class TestGitStore(StoreContract):
    @pytest.fixture
    def stores(self, tmp_path: Path) -> Iterator[Stores]:
        s = _GitStores(tmp_path / "repo.git", reopen=False)
        yield s
        s.close()


class TestGitStoreReopened(StoreContract):
    @pytest.fixture
    def stores(self, tmp_path: Path) -> Iterator[Stores]:
        s = _GitStores(tmp_path / "repo.git", reopen=True)
        yield s
        s.close()


class TestMemoryStore(StoreContract):
    @pytest.fixture
    def stores(self) -> Stores:
        store = MemoryStore()
        return lambda: store
