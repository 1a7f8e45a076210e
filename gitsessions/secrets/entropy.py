"""The high-entropy rule: random-looking tokens, as detect-secrets' Base64 detector finds them.

A candidate is a run of base64 characters (:data:`TOKEN`); it is a secret when it mixes
upper and lower case and digits, as generated keys do, and its Shannon entropy passes
:data:`ENTROPY_LIMIT`. A path or a URL's path is judged a segment at a time (its words
together may pass the limit, a key in it passes alone).
"""

from __future__ import annotations

import math
import re
import string
from collections.abc import Callable, Iterator

#: Shannon entropy (bits per character) above which a token is random-looking: the limit
#: detect-secrets' Base64HighEntropyString uses by default. Tokens shorter than 24
#: characters cannot reach it (log2(20) < 4.5), so ordinary identifiers never do.
ENTROPY_LIMIT = 4.5
#: The least length of a high-entropy candidate (and of a path segment judged alone).
SHORTEST = 20
#: A high-entropy candidate: a run of base64 (and url-safe base64) characters, at least
#: :data:`SHORTEST` long (the run's class is :data:`gitsessions.secrets.scan.RUN_CHARS`).
TOKEN = rf"(?<![A-Za-z0-9+/_-])[A-Za-z0-9+/_-]{{{SHORTEST},}}={{0,2}}(?![A-Za-z0-9+/=_-])"
_DIGITS, _UPPER, _LOWER = frozenset("0123456789"), frozenset(string.ascii_uppercase), frozenset(string.ascii_lowercase)
#: A word of a path segment (split at ``-``, ``_`` and ``.``): ``How``, ``JSON``, ``Python3``, ``12345678``.
_WORD = re.compile(r"[A-Z]?[a-z]+[0-9]*|[A-Z]+[0-9]*|[0-9]+")


def _wordy(segment: str) -> bool:
    """Whether a path segment is made of words (``overlay2``, ``How-to-Parse-JSON``)."""
    return all(_WORD.fullmatch(piece) for piece in re.split(r"[-_.]", segment) if piece)


def _segments(token: str) -> list[tuple[int, int]]:
    """The parts of a high-entropy candidate judged alone, as ``(start, end)``: itself, or a path's segments.

    A candidate holding ``/`` is a path when at least half of its segments are words and one
    of those has 3 or more characters (a base64 key holding ``/`` has none).
    """
    if "/" not in token:
        return [(0, len(token))]
    spans, at = [], 0
    for segment in token.split("/"):
        if segment:
            spans.append((at, at + len(segment)))
        at += len(segment) + 1
    words = {(a, b) for a, b in spans if _wordy(token[a:b])}  # a set: a long path's segments are looked up once each
    if 2 * len(words) < len(spans) or not any(b - a >= 3 for a, b in words):
        return [(0, len(token))]
    return [span for span in spans if span not in words]


#: The characters a token still arriving ends with (the stream redactor holds back their last run).
TOKEN_TAIL = r"[A-Za-z0-9+/=_-]*"


def _shannon_entropy(data: str, charset: str) -> float:
    """Bits per character of ``data`` over ``charset``, as detect-secrets' high-entropy plugins count."""
    entropy = 0.0
    for x in charset:
        p_x = float(data.count(x)) / len(data)
        if p_x > 0:
            entropy += - p_x * math.log(p_x, 2)
    return entropy



def random_parts(charset: str) -> Callable[[str], Iterator[tuple[int, int]]]:
    """The rule's judge of a candidate (a :attr:`~gitsessions.secrets.detectors.Shape.pick`).

    Args:
        charset: the characters the entropy counts (detect-secrets' Base64 detector's).

    Returns:
        A function yielding the ``(start, end)`` of each random-looking part of a candidate.
    """

    def random_looking(token: str) -> bool:
        # Mixed case and a digit, as generated keys have: words, paths and hex ids do not.
        return (not _DIGITS.isdisjoint(token) and not _UPPER.isdisjoint(token) and not _LOWER.isdisjoint(token)
                and _shannon_entropy(token, charset) > ENTROPY_LIMIT)

    def parts(token: str) -> Iterator[tuple[int, int]]:
        if _DIGITS.isdisjoint(token) or _UPPER.isdisjoint(token) or _LOWER.isdisjoint(token):
            return  # nor can any part of it mix them (most candidates: words, paths, hex ids)
        for start, end in _segments(token):
            if end - start >= SHORTEST and random_looking(token[start:end]):
                yield start, end

    return parts
