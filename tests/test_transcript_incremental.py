"""The derived transcript of a growing log is derived incrementally: only the events
appended since the last derivation are read. It must give exactly what a derivation from
scratch gives, on every log the transcript tests use, whatever was appended or taken back."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_transcript import logs

from gitsessions.log.events import Event
from gitsessions.log.transcript import derive_messages, derived, title_of
from gitsessions.log.turns import last_turn, last_turn_start, next_turn, turns_of


def fresh(events: list[Event]) -> list[dict]:
    """Messages derived from scratch: a new list object is never one derived before."""
    return derive_messages(list(events))


def check(growing: list[Event]) -> None:
    assert derive_messages(growing) == fresh(growing)
    log = derived(growing)
    assert (log.turns, log.turn, log.next_turn, log.title) == (
        turns_of(growing), last_turn(growing), next_turn(growing), title_of(growing))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs())
def test_a_log_derived_as_it_grows_gives_what_a_fresh_derivation_gives(log):
    events, _reasons = log
    growing: list[Event] = []
    for ev in events:
        growing.append(ev)
        check(growing)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(logs(), st.data())
def test_events_taken_back_or_appended_in_batches_give_a_fresh_derivation(log, data):
    events, _reasons = log
    growing: list[Event] = []
    at = 0
    while at < len(events):
        step = data.draw(st.integers(1, 5))
        growing.extend(events[at:at + step])
        at += step
        check(growing)
        back = data.draw(st.integers(0, 2))  # a turn taken back (Session pops its last events)
        for _ in range(min(back, len(growing))):
            growing.pop()  # and other events take its place
        if back and data.draw(st.booleans()):
            check(growing)  # else it grows again before the next derivation


def test_an_undo_appended_later_drops_its_turn_from_what_was_derived():
    growing = [Event(0, 0, "turn/start", {"turn": 1}), Event(1, 1, "user/message", {"content": "one"}),
               Event(2, 2, "turn/end", {"turn": 1, "reason": "completed"}),
               Event(3, 3, "turn/start", {"turn": 2}), Event(4, 4, "user/message", {"content": "two"})]
    assert [m["content"] for m in derive_messages(growing)] == ["one", "two"]
    growing.append(Event(5, 5, "session/undo", {"turn": 1}))
    assert [m["content"] for m in derive_messages(growing)] == ["two"] == [m["content"] for m in fresh(growing)]


#: What a ``turn/start`` may say of its number in a log another tool wrote: anything.
turn_values = st.one_of(st.integers(-3, 12), st.booleans(), st.none(), st.text(max_size=2),
                        st.floats(allow_nan=False, allow_infinity=False))


@st.composite
def numbered_logs(draw) -> list[Event]:
    """Events whose turn starts are numbered any way at all: missing, repeated, going back, not integers."""
    events: list[Event] = []
    for _ in range(draw(st.integers(0, 14))):
        kind = draw(st.sampled_from(["turn/start", "turn/start", "user/message", "turn/end", "session/undo",
                                     "session/title"]))
        if kind == "turn/start":
            data = {"turn": draw(turn_values)} if draw(st.booleans()) else {}
        elif kind == "session/undo":
            data = {"turn": draw(st.integers(0, 4))}
        else:
            data = {"content": "p", "title": "t", "reason": "completed"}
        events.append(Event(len(events), len(events), kind, data))
    return events


@settings(max_examples=300, deadline=None)
@given(numbered_logs())
def test_the_derived_transcript_numbers_turns_by_the_one_rule(events):
    # Derivation takes its numbers from log/turns.py: the same for every log, undone turns too,
    # whether derived from scratch or as the log grows
    growing: list[Event] = []
    for ev in events:
        growing.append(ev)
        log = derived(growing)
        assert (log.turns, log.turn, log.next_turn) == (turns_of(growing), last_turn(growing), next_turn(growing))
    scratch = derived(list(events))
    assert (scratch.turns, scratch.turn, scratch.next_turn) == (turns_of(events), last_turn(events), next_turn(events))


@settings(max_examples=200, deadline=None)
@given(numbered_logs())
def test_the_last_turn_begins_where_its_number_is_first_taken(events):
    # usage's "this turn" and the cut-call report read from the last turn/start: the index turns.py gives
    start = last_turn_start(events)
    numbers = turns_of(events)
    if start is None:
        assert "turn/start" not in [e.type for e in events]
    else:
        assert events[start].type == "turn/start" and all(e.type != "turn/start" for e in events[start + 1:])
        assert set(numbers[start:]) == {numbers[start]} and numbers[start] == last_turn(events)
