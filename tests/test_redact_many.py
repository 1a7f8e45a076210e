"""A conversation's events redacted at once are redacted exactly as one by one."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_redact import IN_TEXT, ORDINARY, SHAPES

from gitsessions.log.events import Event
from gitsessions.secrets.redact import Redactor, from_environment
from gitsessions.secrets.redact_many import redact_events

_ENV_KEY = "sk-envvalue-0123456789abcdef"
_REDACTOR = from_environment({"OPENAI_API_KEY": _ENV_KEY, "DB_PASSWORD": "hunter2hunter2"})
_PIECES = [*IN_TEXT.values(), *ORDINARY, *SHAPES.values(), _ENV_KEY, "hunter2hunter2", "password=", "sk-",
           "api_key: ", "AKIA", "postgres://u:", "@h/db", '"', "=", "-----BEGIN RSA PRIVATE KEY", "plain words"]
_TEXT = st.lists(st.sampled_from(_PIECES), min_size=0, max_size=4).map(" ".join)
_DATA = st.recursive(_TEXT | st.integers(), lambda inner: st.lists(inner, max_size=3)
                     | st.dictionaries(_TEXT, inner, max_size=3), max_leaves=8)


def _events(datas: list) -> list[Event]:
    return [Event(i, 1_700_000_000_000 + i, "message/user", {"content": d}, False) for i, d in enumerate(datas)]


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_DATA, min_size=1, max_size=6))
def test_events_redacted_at_once_are_those_redacted_one_by_one(datas):
    events = _events(datas)
    assert redact_events(_REDACTOR, events) == [_REDACTOR.event(ev) for ev in events]


def test_a_replacement_is_tried_by_the_shapes_after_it_though_the_text_lacked_their_literals():
    # "b" matches only what "a" writes, and the secret only what the variable's value becomes.
    r = Redactor({"hunter2hunter2": "PW"}, {"a": "foo", "b": r"REDACTED:a\]", "c": r"\[REDACTED:PW"})
    events = _events(["say foo", "hunter2hunter2 now", "nothing here"])
    at_once = redact_events(r, events)
    assert at_once == [r.event(ev) for ev in events]
    assert [ev.data["content"] for ev in at_once] == ["say [[REDACTED:b]", "[REDACTED:c]] now", "nothing here"]
    assert at_once[2] is events[2]  # unchanged: the same object


def test_an_event_repeated_is_redacted_once_and_stays_one_object():
    events = _events([f"key {SHAPES['api-key']}", "fine"])
    at_once = redact_events(_REDACTOR, [*events, events[0]])
    assert at_once[0] is at_once[2] and "[REDACTED:api-key]" in at_once[0].data["content"]
