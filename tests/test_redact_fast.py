"""The shapes' fast paths find what searching every text with every regex finds.

A shape's regex runs only where a match may start (its literal starts, the high-entropy
rule's runs), and a conversation's strings are tried only by the shapes whose literals they
hold. The reference here is the slow way: every shape's regex searched over every string.
"""

from __future__ import annotations

import dataclasses
import random
import sys
from pathlib import Path

import pytest
from test_redact import IN_TEXT, ORDINARY, SHAPES

from gitsessions.log.events import Event
from gitsessions.secrets import redact_stream
from gitsessions.secrets.detectors import Shape
from gitsessions.secrets.redact import Redactor, from_environment
from gitsessions.secrets.redact_many import redact_events
from gitsessions.secrets.redact_stream import StreamRedactor
from gitsessions.secrets.regex_form import LazyPattern
from gitsessions.secrets.scan import Scan

_ROOT = Path(__file__).resolve().parent.parent


def _slow(shape: Shape) -> Shape:
    """The shape searched with its regex over the whole of every text (no literals known, no runs)."""
    if shape.near is not None:  # tried around its keywords, as before: not what the fast paths change
        return shape
    return dataclasses.replace(shape, known_form=shape.form._replace(starts=None, inner=None), runs=None)


def _slow_redactor(fast: Redactor) -> Redactor:
    slow = Redactor(fast.secrets)
    slow._shapes = [_slow(shape) for shape in fast.shapes]
    return slow


def _corpus(seed: int) -> list[str]:
    """Strings as a conversation holds them: code and prose, secrets among them, text past ASCII."""
    rng = random.Random(seed)
    code = [p.read_text() for p in sorted((_ROOT / "gitsessions").glob("*.py"))]
    pieces = [*IN_TEXT.values(), *ORDINARY, *SHAPES.values(), "café — naïve ✓ 🙂", "\ud800", "ſecret",
              "A" * 30, "Q2xhdWRlIENvZGUgdHJhbnNjcmlwdA" * 3, "ghp_" + "x" * 36, "sk-" + "a" * 10,
              "AKIA" + "ABCDEFGHIJKLMNOP", "token = 'x'", "\n", " "]
    out = []
    for _ in range(60):
        text = rng.choice(code)
        start = rng.randrange(len(text))
        chunk = text[start:start + rng.randrange(20, 3000)]
        for _ in range(rng.randrange(4)):
            at = rng.randrange(len(chunk) + 1)
            chunk = chunk[:at] + rng.choice(pieces) + chunk[at:]
        out.append(chunk)
    return out


def _events(strings: list[str]) -> list[Event]:
    return [Event(i, 1_700_000_000_000 + i, "tool/result", {"content": s, "meta": {"name": s[:12], "n": i}}, False)
            for i, s in enumerate(strings)]


def test_a_conversation_redacted_fast_is_redacted_as_by_every_regex_over_every_text():
    fast = from_environment({"DB_PASSWORD": "hunter2hunter2"})
    slow = _slow_redactor(fast)
    changed = 0
    for seed in range(8):
        events = _events(_corpus(seed))
        got = redact_events(fast, events)
        assert got == [slow.event(ev) for ev in events], seed
        changed += sum(a is not b for a, b in zip(got, events, strict=True))
    assert changed  # the corpus holds secrets: the comparison is not of texts left alone


def test_each_shape_finds_the_same_spans_as_its_regex_searched_over_the_text():
    shapes = from_environment({}).shapes
    for text in [*_corpus(99), *IN_TEXT.values(), *SHAPES.values(), "x" * 5 + "é" + "Ab1" * 10 + "é=="]:
        for shape in shapes:
            assert list(shape.spans(text)) == list(_slow(shape).spans(text)), (shape.name, text[:80])


def test_runs_are_found_at_their_character_offsets_past_ascii():
    text = "é " + "a" * 20 + " 🙂\ud800 " + "B" * 19 + " " + "c/d+e_f-" * 3 + "\n" + "z" * 25
    at = Scan(text).runs(20)
    assert at == [2, text.index("c/d"), text.index("z")]
    assert all(text[j - 1] in " \n" and len(text[j:j + 20].strip()) == 20 for j in at)


class _Tries:
    """A shape's compiled regex that counts the starts it is tried at (one a match, every one a search looks
    at) and the characters those tries may read (to the end of the text, or the pattern's longest match)."""

    def __init__(self, rx, longest: int | None = None):
        self.rx = rx.compiled if isinstance(rx, LazyPattern) else rx
        self.pattern, self.flags, self.groups, self.groupindex = rx.pattern, rx.flags, rx.groups, self.rx.groupindex
        self.longest = longest
        self.tries = self.reads = 0

    def _read(self, text: str, pos: int, endpos: int) -> int:
        width = max(min(endpos, len(text)) - pos, 0)
        return width if self.longest is None else min(width, self.longest + 1)

    def match(self, text: str, pos: int = 0, endpos: int = sys.maxsize):
        self.tries += 1
        self.reads += self._read(text, pos, endpos)
        return self.rx.match(text, pos, endpos)

    def finditer(self, text: str, pos: int = 0, endpos: int = sys.maxsize):
        self.tries += min(endpos, len(text)) - pos + 1  # with no match, the engine tries every start
        self.reads += self._read(text, pos, endpos)
        return self.rx.finditer(text, pos, endpos)


#: Texts that start a shape again and again without ending one, each try reading to the end of
#: the run or line: a shape's first literal -> the pieces repeated.
_HOSTILE = {"eyJ": ("eyJ",), r"\/\/": ("//", "http://")}


def test_a_long_run_of_starts_that_never_ends_a_match_is_tried_a_bounded_number_of_times():
    """Each try reads the rest of the run, so tries that grow with the text cost its length squared."""
    hostile = [shape for shape in from_environment({}).shapes if shape.rx.pattern.startswith(tuple(_HOSTILE))]
    assert sorted(shape.name for shape in hostile) == ["jwt", "npm-token"]
    for shape in hostile:
        for piece in next(v for k, v in _HOSTILE.items() if shape.rx.pattern.startswith(k)):
            for n in (3_000, 30_000):
                text = (piece * n)[:n]
                counted = _Tries(shape.rx)
                assert list(dataclasses.replace(shape, rx=counted).spans(text)) == []
                assert counted.tries <= 2, (shape.name, piece, n, counted.tries)


def test_a_secret_after_a_long_run_of_starts_is_found_as_by_the_regex_searched():
    jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U"
    npmrc = "//registry.npmjs.org/:_authToken=npm_" + "A1b2" * 9
    texts = ["eyJ" * 500 + " " + jwt, "eyJ" * 500 + jwt, "eyJeyJ." * 300 + jwt + "eyJ" * 50,
             "//" * 700 + "x/:_authToken=" + "z" * 40 + "\n" + npmrc, "//" * 700 + npmrc + "//" * 9,
             "http://" * 400 + npmrc, ("//a/:_authToken=" + "0123456789abcdef" * 3 + " ") * 50]
    shapes = [shape for shape in from_environment({}).shapes if shape.restart is not None]
    assert {"jwt", "npm-token"} <= {shape.name for shape in shapes}
    found = 0
    for text in texts:
        for shape in shapes:
            spans = list(shape.spans(text))
            assert spans == list(_slow(shape).spans(text)), (shape.name, text[:80])
            found += len(spans)
    assert found >= len(texts)  # every text holds a secret some shape finds


@pytest.mark.parametrize("piece", ["sk-", "password="])
def test_a_streamed_match_still_going_on_is_not_read_again_on_every_batch(piece, monkeypatch):
    """It is held whole (it may go on): read again every STREAM_BATCH characters, a long one costs its length
    squared; looked at once it doubled, about its length."""
    monkeypatch.setattr(redact_stream, "STREAM_INTERVAL", float("inf"))  # looked at by size only: counts are exact
    base = from_environment({})
    reads = []
    for n in (4_000, 16_000):
        counted = [_Tries(shape.rx, shape.form.longest) for shape in base.shapes]
        redactor = Redactor(base.secrets)
        redactor._shapes = [dataclasses.replace(shape, rx=c) for shape, c in zip(base.shapes, counted, strict=True)]
        stream, text = StreamRedactor(redactor), (piece * n)[:n]
        out = "".join(stream.feed(text[i:i + 16]) for i in range(0, n, 16)) + stream.flush()
        assert out == base.text(text) and "[REDACTED:" in out
        reads.append(sum(c.reads for c in counted))
    assert reads[1] < 6 * reads[0], reads  # four times the text: about four times the reading, not sixteen
