"""The ``session.jsonl`` format: events, header, JSONL encoding and parsing (gitsessions.log.events)."""

from __future__ import annotations

import json

import pytest

from gitsessions.errors import CorruptSession, InvalidEvent, UnsupportedVersion
from gitsessions.log.events import (
    FORMAT_VERSION,
    KNOWN_TYPES,
    WRITTEN_IGNORABLE,
    Event,
    clean_text,
    clean_value,
    encode_header,
    encode_log,
    make_event,
    make_header,
    parse_log,
)

SID = "work"


def sample_events() -> list[Event]:
    """One complete turn with a tool call, a title and an ignorable extension event."""
    specs = [
        ("turn/start", {"turn": 1}),
        ("user/message", {"content": "Wie parse ich YAML? 🤔\nzweite Zeile \"quoted\" \\ back"}),
        ("step/start", {"step": 1}),
        ("assistant/message", {"content": None, "finish_reason": "tool_calls", "model": "m",
                               "usage": {"prompt_tokens": 12, "completion_tokens": 3},
                               "tool_calls": [{"id": "call_1", "name": "read_file",
                                               "arguments": "{\"path\": \"a.yaml\"}"}],
                               "interrupted": False}),
        ("tool/call", {"id": "call_1", "name": "read_file"}),
        ("tool/result", {"id": "call_1", "name": "read_file", "content": "a: 1\n\tb: [1.5, -2e-7]",
                         "is_error": False}),
        ("step/end", {"step": 1}),
        ("step/start", {"step": 2}),
        ("assistant/message", {"content": "Use `yaml.safe_load`. 日本語 \u2028 \x00 ok",
                               "tool_calls": [], "finish_reason": "stop"}),
        ("step/end", {"step": 2}),
        ("turn/end", {"turn": 1, "reason": "completed"}),
        ("session/title", {"title": "YAML – parsing"}),
    ]
    events = [make_event(i, t, d, time_ms=1_700_000_000_000 + i) for i, (t, d) in enumerate(specs)]
    events.append(make_event(len(events), "plugin/note", {"x": [1, 2.5, None, True]},
                             time_ms=1_700_000_000_999, ignorable=True))
    return events


def header() -> dict:
    return make_header(SID, created=1_700_000_000_000, cwd="/home/ü/proj", generator="gs test")


def log_bytes(*lines: dict | bytes) -> bytes:
    """Join JSON objects (or raw bytes) as ``session.jsonl`` lines, each ending in ``\\n``."""
    out = b""
    for line in lines:
        out += line if isinstance(line, bytes) else json.dumps(line).encode("utf-8") + b"\n"
    return out


def ev(seq: int, type: str = "turn/start", **extra) -> dict:
    obj = {"seq": seq, "time": 1000 + seq, "type": type, "data": {}}
    obj.update(extra)
    return obj


HEADER = {"type": "session", "version": 1, "id": SID, "created": 1}


# -- encoding and round trip ------------------------------------------------------------------


def test_round_trip_is_byte_exact():
    events = sample_events()
    raw = encode_log(header(), events)
    parsed = parse_log(raw, SID)
    assert parsed.header == header()
    assert parsed.events == events
    assert not parsed.dropped_tail
    assert encode_log(parsed.header, parsed.events) == raw
    # One line per event plus the header, "\n" line ends, compact UTF-8 (not \\u escapes).
    assert raw.count(b"\n") == len(events) + 1
    assert raw.endswith(b"\n") and b"\r" not in raw
    assert "🤔".encode() in raw and "日本語".encode() in raw
    assert b"\\u2028" not in raw  # raw U+2028 kept as UTF-8 bytes
    # Line 1 is the header; every event line carries seq, time, type, data.
    first, *rest = raw.split(b"\n")[:-1]
    assert json.loads(first) == header()
    for i, line in enumerate(rest):
        obj = json.loads(line)
        assert obj["seq"] == i and isinstance(obj["time"], int) and obj["type"] == events[i].type
        assert obj["data"] == events[i].data


def test_event_encode_shape():
    e = make_event(3, "turn/end", {"turn": 2, "reason": "completed"}, time_ms=42)
    assert e.encode() == b'{"seq":3,"time":42,"type":"turn/end","data":{"turn":2,"reason":"completed"}}\n'
    x = make_event(4, "ext/thing", {}, time_ms=43, ignorable=True)
    assert x.encode() == b'{"seq":4,"time":43,"type":"ext/thing","data":{},"ignorable":true}\n'


def test_make_event_defaults_time_to_now():
    import time

    before = time.time_ns() // 1_000_000
    e = make_event(0, "turn/start")
    after = time.time_ns() // 1_000_000
    assert before <= e.time <= after
    assert e.data == {}


def test_header_fields_and_encoding():
    h = header()
    assert h["type"] == "session" and h["version"] == FORMAT_VERSION == 1
    assert h["id"] == SID and h["created"] == 1_700_000_000_000 and h["cwd"] == "/home/ü/proj"
    line = encode_header(h)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == h


def test_header_extra_is_cleaned_and_checked():
    h = make_header(SID, created=1, cwd="/tmp/\udcff")
    assert h["cwd"] == "/tmp/\ufffd"
    encode_header(h)  # encodable
    with pytest.raises(InvalidEvent):
        make_header(SID, created=1, bad=float("nan"))


# -- cleaning and refusing values -------------------------------------------------------------


@pytest.mark.parametrize(
    "dirty, clean",
    [
        ("a\ud800b", "a\ufffdb"),  # lone high surrogate
        ("a\udfffb", "a\ufffdb"),  # lone low surrogate
        ("x\udc80\udcff", "x\ufffd\ufffd"),  # surrogateescape-decoded bytes
        ("\ud83d\ude00", "😀"),  # a pair split into two code points is one character
        ("fine ✓", "fine ✓"),
    ],
)
def test_clean_text(dirty, clean):
    assert clean_text(dirty) == clean
    clean_text(dirty).encode("utf-8")


def test_make_event_cleans_surrogates_everywhere():
    e = make_event(0, "user/message", {
        "content": "hi \ud800 there",
        "k\udc80ey": ["\udfff", {"deep": ("tu\ud801ple", 1)}],
    })
    assert e.data == {"content": "hi \ufffd there",
                      "k\ufffdey": ["\ufffd", {"deep": ["tu\ufffdple", 1]}]}
    line = e.encode()  # would raise UnicodeEncodeError if a surrogate survived
    assert "\ufffd".encode() in line
    assert parse_log(encode_header(HEADER) + line, SID).events == [e]


def test_clean_value_does_not_modify_its_input():
    data = {"content": "a\ud800", "list": ["b\udc00"]}
    clean_value(data)
    assert data == {"content": "a\ud800", "list": ["b\udc00"]}


@pytest.mark.parametrize(
    "bad",
    [
        {"x": float("nan")},
        {"x": float("inf")},
        {"x": [1, float("-inf")]},
        {"x": object()},
        {"x": {1, 2}},
        {"x": b"bytes"},
        {1: "int key"},
        {"nested": {(1, 2): "tuple key"}},
        {"nested": [{None: 1}]},
    ],
)
def test_make_event_refuses_non_json(bad):
    with pytest.raises(InvalidEvent):
        make_event(0, "user/message", bad)


@pytest.mark.parametrize("data", ["text", ["list"], 5])
def test_make_event_refuses_non_object_data(data):
    with pytest.raises(InvalidEvent):
        make_event(0, "user/message", data)


@pytest.mark.parametrize("seq", [-1, True, "1", 1.0, None])
def test_make_event_refuses_bad_seq(seq):
    with pytest.raises(InvalidEvent):
        make_event(seq, "turn/start")


@pytest.mark.parametrize("type_", ["turn/begin", "chat/message", "session", "", None, "turnstart"])
def test_unknown_event_types_refused(type_):
    with pytest.raises(InvalidEvent):
        make_event(0, type_, {})


def test_unknown_event_type_allowed_when_ignorable():
    e = make_event(0, "plugin/anything", {"a": 1}, ignorable=True)
    assert e.ignorable and e.to_dict()["ignorable"] is True
    # Known types need no flag, and the flag is omitted from the line when False; those that
    # are a record beside the conversation (a permission decision) are always written with it.
    assert all("ignorable" not in make_event(0, t).to_dict() for t in KNOWN_TYPES - WRITTEN_IGNORABLE)
    assert WRITTEN_IGNORABLE == {"tool/permission"} and make_event(0, "tool/permission").to_dict()["ignorable"] is True
    # Still needs the kind/name shape.
    with pytest.raises(InvalidEvent):
        make_event(0, "noslash", ignorable=True)


# -- parsing: what is tolerated and what is corruption -----------------------------------------


def test_parse_refuses_unknown_type_unless_ignorable():
    ok = parse_log(log_bytes(HEADER, ev(0, "future/thing", ignorable=True), ev(1)), SID)
    assert [e.type for e in ok.events] == ["future/thing", "turn/start"]
    assert ok.events[0].ignorable
    for flag in ({}, {"ignorable": False}, {"ignorable": "true"}, {"ignorable": 1}):
        raw = log_bytes(HEADER, ev(0), ev(1, "future/thing", **flag))
        with pytest.raises(CorruptSession) as exc:
            parse_log(raw, SID)
        assert exc.value.line == 3
        assert "future/thing" in str(exc.value) and "upgrade gitsessions" in str(exc.value)


@pytest.mark.parametrize(
    "tail",
    [
        b'{"seq":2,"time":1,"type":"turn/st',  # cut mid-line, no newline
        b'{"seq":2,"time":1,"type":"user/message","data":{"content":"\xe6\x97',  # mid-UTF-8
        b"\x00\x00\x00",  # zero-filled block after a crash
        b"{",
    ],
)
def test_torn_last_line_is_damage_naming_its_line(tail):
    """A torn tail belongs in a journal; in a committed log it is damage, never dropped quietly."""
    good = log_bytes(HEADER, ev(0), ev(1, "user/message"))
    with pytest.raises(CorruptSession) as exc:
        parse_log(good + tail, SID)
    assert exc.value.line == 4 and "cut off" in exc.value.reason
    assert parse_log(good, SID).dropped_tail is False


@pytest.mark.parametrize("blank", [b"\n", b"  \n", b"\r\n"])
def test_blank_last_line_is_dropped(blank):
    good = log_bytes(HEADER, ev(0), ev(1, "user/message"))
    parsed = parse_log(good + blank, SID)
    assert parsed.dropped_tail and [e.seq for e in parsed.events] == [0, 1]


def test_torn_header_only_is_corrupt():
    with pytest.raises(CorruptSession) as exc:
        parse_log(b'{"type":"session","vers', SID)
    assert exc.value.line == 1


@pytest.mark.parametrize(
    "bad_line",
    [b"not json\n", b'{"seq":1,"time":1,"type":"turn/start"\n', b"\xff\xfe\n", b"\n", b"[1,2]\n"],
)
def test_bad_line_in_the_middle_is_corrupt_with_its_line_number(bad_line):
    raw = log_bytes(HEADER, ev(0), bad_line, ev(1), ev(2))
    with pytest.raises(CorruptSession) as exc:
        parse_log(raw, SID)
    assert exc.value.line == 3
    assert exc.value.session_id == SID
    assert "line 3" in str(exc.value)


@pytest.mark.parametrize(
    "event, what",
    [
        ({"time": 1, "type": "turn/start", "data": {}}, "seq"),
        ({"seq": True, "time": 1, "type": "turn/start", "data": {}}, "seq"),
        ({"seq": 2, "type": "turn/start", "data": {}}, "time"),
        ({"seq": 2, "time": 1, "data": {}}, "type"),
        ({"seq": 2, "time": 1, "type": "turn/start", "data": []}, "data"),
    ],
)
def test_malformed_event_is_corrupt(event, what):
    raw = log_bytes(HEADER, ev(0), ev(1), event, ev(3))
    with pytest.raises(CorruptSession) as exc:
        parse_log(raw, SID)
    assert exc.value.line == 4
    assert what in exc.value.reason


@pytest.mark.parametrize("seqs, line", [([0, 1, 3], 4), ([0, 1, 1, 2], 4), ([1], 2), ([0, 2, 1], 3)])
def test_seq_gap_names_the_line(seqs, line):
    raw = log_bytes(HEADER, *[ev(s) for s in seqs])
    with pytest.raises(CorruptSession) as exc:
        parse_log(raw, SID)
    assert exc.value.line == line
    assert f"line {line}" in str(exc.value)


@pytest.mark.parametrize(
    "raw",
    [
        b"",
        b"\n",
        log_bytes(ev(0)),  # no header at all
        log_bytes({"type": "header", "version": 1}, ev(0)),
        log_bytes({"version": 1}, ev(0)),
        log_bytes([HEADER], ev(0)),
        log_bytes({"type": "session"}, ev(0)),  # no version
        log_bytes({"type": "session", "version": "1"}, ev(0)),
        log_bytes({"type": "session", "version": -1}, ev(0)),
        log_bytes({"type": "session", "version": True}, ev(0)),
        b"garbage\n" + log_bytes(ev(0)),
    ],
)
def test_wrong_or_missing_header_is_corrupt_at_line_1(raw):
    with pytest.raises(CorruptSession) as exc:
        parse_log(raw, SID)
    assert exc.value.line == 1
    assert "line 1" in str(exc.value)


def test_newer_version_asks_for_an_upgrade():
    raw = log_bytes({"type": "session", "version": FORMAT_VERSION + 1, "created": 1},
                    {"seq": 0, "format": "from the future"})
    with pytest.raises(UnsupportedVersion) as exc:
        parse_log(raw, SID)
    assert exc.value.version == FORMAT_VERSION + 1
    assert exc.value.supported == FORMAT_VERSION
    assert "upgrade gitsessions" in str(exc.value)
    assert not isinstance(exc.value, CorruptSession)


def test_older_version_zero_reads():
    parsed = parse_log(log_bytes({"type": "session", "version": 0, "created": 1}, ev(0)), SID)
    assert parsed.header["version"] == 0 and len(parsed.events) == 1


def test_bom_and_crlf_tolerated():
    events = sample_events()
    raw = encode_log(header(), events)
    crlf = b"\xef\xbb\xbf" + raw.replace(b"\n", b"\r\n")
    parsed = parse_log(crlf, SID)
    assert parsed.header == header()
    assert parsed.events == events
    assert not parsed.dropped_tail
    # Mixed line ends are fine too, and a torn CRLF file names the torn line.
    mixed = raw.replace(b"\n", b"\r\n", 3)
    assert parse_log(mixed, SID).events == events
    with pytest.raises(CorruptSession) as exc:
        parse_log(crlf + b'{"seq":', SID)
    assert exc.value.line == len(events) + 2


def test_header_only_log():
    parsed = parse_log(encode_header(HEADER), SID)
    assert parsed.header == HEADER and parsed.events == [] and not parsed.dropped_tail


def test_ten_megabyte_message_round_trips():
    chunk = "line of text ✓ \"q\" \\ 日本\n"
    content = (chunk * (10_000_000 // len(chunk.encode()) + 1))
    assert len(content.encode()) >= 10_000_000
    events = [
        make_event(0, "turn/start", {"turn": 1}, time_ms=1),
        make_event(1, "user/message", {"content": content}, time_ms=2),
        make_event(2, "turn/end", {"turn": 1, "reason": "completed"}, time_ms=3),
    ]
    raw = encode_log(HEADER, events)
    assert raw.count(b"\n") == 4  # the message stays on one line
    parsed = parse_log(raw, SID)
    assert parsed.events[1].data["content"] == content
    assert parsed.events == events
    assert encode_log(parsed.header, parsed.events) == raw


def test_a_line_that_is_no_json_is_reported_before_an_earlier_bad_event():
    """Every line is read as JSON before the events are judged (as when all lines were parsed
    first): a seq gap on line 3 and garbage on line 5 report line 5, whatever the reader's order."""
    raw = log_bytes(HEADER, ev(0), ev(5), ev(2), b"not json\n")
    with pytest.raises(CorruptSession) as exc:
        parse_log(raw, SID)
    assert exc.value.line == 5 and "not valid JSON" in str(exc.value)
    with pytest.raises(CorruptSession) as exc:
        parse_log(log_bytes(HEADER, ev(0), ev(5), ev(2)), SID)
    assert exc.value.line == 3 and "seq 5" in str(exc.value)


def test_parsed_events_share_their_keys_and_types():
    """One string per key and per event type across a log (a 100 MB log holds 100,000 events)."""
    parsed = parse_log(log_bytes(HEADER, *(ev(i, "user/message", data={"content": f"m{i}"}) for i in range(3))), SID)
    first, *rest = parsed.events
    for other in rest:
        assert other.type is first.type
        assert next(iter(other.data)) is next(iter(first.data))
