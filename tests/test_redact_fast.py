"""The shapes' fast paths find what searching every text with every regex finds (issue 14, item 7).

A shape's regex runs only where a match may start (its literal starts, the high-entropy
rule's runs), and a conversation's strings are tried only by the shapes whose literals they
hold. The reference here is the slow way: every shape's regex searched over every string.
"""

from __future__ import annotations

import dataclasses
import random
from pathlib import Path

from test_redact import IN_TEXT, ORDINARY, SHAPES

from gitsessions.detectors import Shape
from gitsessions.events import Event
from gitsessions.redact import Redactor, from_environment
from gitsessions.redact_many import redact_events
from gitsessions.scan import Scan

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
