"""Keeping secrets out of history: replace them before anything is journaled or committed.

Two sources (issue 5, "Secrets never enter history"):

- values of environment variables whose names contain KEY, TOKEN, SECRET or PASSWORD, when
  at least :data:`MIN_SECRET_LEN` characters long (shorter values would mangle ordinary
  text), replaced by ``[REDACTED:<variable name>]``;
- strings shaped like common credentials (:data:`PATTERNS`), replaced by
  ``[REDACTED:<pattern name>]``.

This module never reads the environment itself: the CLI passes it in.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping
from typing import Any

try:  # the regex parser, to read a pattern's shape (its modules were renamed in Python 3.11)
    _sre = importlib.import_module("re._constants")
    _sre_parse = importlib.import_module("re._parser")
except ImportError:  # Python 3.10
    _sre = importlib.import_module("sre_constants")
    _sre_parse = importlib.import_module("sre_parse")

from .events import Event

#: Environment variable values shorter than this are never redacted.
MIN_SECRET_LEN = 8
#: Name fragments that mark an environment variable as secret (matched case-insensitively).
SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD")

#: Credential shapes: name -> regular expression.
PATTERNS: dict[str, str] = {
    # OpenAI (sk-..., sk-proj-...) and DeepSeek (sk-<32 hex>) API keys
    "api-key": r"\bsk-[A-Za-z0-9_-]{20,}",
    # GitHub personal, OAuth, user-to-server, server-to-server and refresh tokens
    "github-token": r"\bgh[pousr]_[A-Za-z0-9]{30,}",
    "github-token-fine-grained": r"\bgithub_pat_[A-Za-z0-9_]{40,}",
    # AWS access key ids
    "aws-access-key": r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    # PEM private key blocks (an unterminated block is redacted to the end of the text)
    "private-key": r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*\Z)",
}


class Redactor:
    """Replaces secrets in text and in nested JSON values.

    Args:
        secrets: secret value -> the name shown in its place.
        patterns: pattern name -> regular expression.
    """

    def __init__(self, secrets: Mapping[str, str] | None = None, patterns: Mapping[str, str] | None = None):
        self.secrets = dict(secrets or {})
        # Longest values first, so a secret containing another is replaced whole.
        self._values = sorted(self.secrets, key=len, reverse=True)
        self._patterns = [(name, re.compile(rx, re.DOTALL)) for name, rx in (patterns or {}).items()]

    def text(self, text: str) -> str:
        """Return ``text`` with every secret replaced by ``[REDACTED:<name>]``."""
        for value in self._values:
            if value in text:
                text = text.replace(value, f"[REDACTED:{self.secrets[value]}]")
        for name, rx in self._patterns:
            text = rx.sub(f"[REDACTED:{name}]", text)
        return text

    def value(self, value: Any) -> Any:
        """Return a copy of a JSON value with :meth:`text` applied to every string (keys too)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self.text(k) if isinstance(k, str) else k: self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value

    def event(self, event: Event) -> Event:
        """Return ``event`` with its data redacted (the same object when nothing changed)."""
        data = self.value(event.data)
        return event if data == event.data else Event(event.seq, event.time, event.type, data, event.ignorable)


def from_environment(env: Mapping[str, str], extra_patterns: Mapping[str, str] | None = None) -> Redactor:
    """Build the redactor for an environment and config.

    Args:
        env: environment variables (the CLI passes ``os.environ``).
        extra_patterns: more name -> regex pairs from the config (``redact_patterns``).

    Returns:
        A redactor for secret-named variables with values of at least MIN_SECRET_LEN
        characters, and for :data:`PATTERNS` plus ``extra_patterns``.
    """
    secrets = {
        value: name
        for name, value in env.items()
        if any(part in name.upper() for part in SECRET_NAME_PARTS) and len(value.strip()) >= MIN_SECRET_LEN
    }
    return Redactor(secrets, {**PATTERNS, **(extra_patterns or {})})


#: Streamed text a pattern is assumed to need before it can match, when its shape cannot be
#: read (characters); also the least released text kept as context for later matches.
STREAM_WINDOW = 64
#: Held text is looked at again only once this many more characters arrived (bounds the
#: work per chunk; the journal lags the screen by at most this plus what is held).
STREAM_BATCH = 32
_MAX_HOLD = 256


def _literal_starts(items: list) -> set[str] | None:
    """The literal texts every match of a parsed pattern starts with (None: cannot tell)."""
    c = _sre
    i = 0
    while i < len(items) and items[i][0] == c.AT:
        i += 1  # \b, ^: no characters
    lit = ""
    while i < len(items) and items[i][0] == c.LITERAL:
        lit += chr(items[i][1])
        i += 1
    if lit:
        return {lit}
    if i < len(items) and items[i][0] == c.SUBPATTERN:
        return _literal_starts(list(items[i][1][-1]))
    if i < len(items) and items[i][0] == c.BRANCH:
        out: set[str] = set()
        for branch in items[i][1][1]:
            starts = _literal_starts(list(branch))
            if not starts:
                return None
            out |= starts
        return out
    return None


def _shape(rx: str) -> tuple[set[str] | None, int]:
    """Return how a partial match of ``rx`` can start, and how long it may stay short of matching.

    Read from the parsed pattern: its literal starts (None when unknown: then the last
    characters are always held) and the length below which text that starts like it may
    still become a match (its longest match when bounded, else its shortest).
    """
    c = _sre
    try:
        parsed = _sre_parse.parse(rx, re.DOTALL)
        lo, hi = parsed.getwidth()
    except Exception:  # an engine detail changed: be careful, not clever
        return None, STREAM_WINDOW
    hold = min(hi if hi < c.MAXREPEAT else max(lo, 1), _MAX_HOLD)
    if parsed.state.flags & re.IGNORECASE:
        return None, hold
    return _literal_starts(list(parsed)), hold


class StreamRedactor:
    r"""Redacts a streamed reply over the joined text, releasing only prefixes that are final.

    A secret split across chunks (``sk-`` in one, the rest in the next four) is never
    released in pieces. :meth:`feed` holds back, from the end of what arrived:

    - any tail that is the start of a secret value;
    - any tail that starts like a credential pattern and is still shorter than the pattern
      needs (a pattern whose start cannot be read holds that many characters always);
    - any match that reaches the end (it may go on; an unterminated PEM block holds to the
      end).

    Matches are looked for with the released text just before as context, so ``\b`` and a
    match whose first characters were released before it matched still count: what follows
    is replaced. Ordinary text is released at once, so a crash loses no more of it than
    before.

    Args:
        redactor: the secrets and patterns to replace.
    """

    def __init__(self, redactor: Redactor):
        self.redactor = redactor
        shapes = [_shape(rx.pattern) for _name, rx in redactor._patterns]
        # A pattern whose every match starts with a known text is only run where that text is.
        self._patterns = [(name, rx, lits) for (name, rx), (lits, _hold) in zip(redactor._patterns, shapes,
                                                                              strict=True)]
        # (text a secret starts with, length below which a tail starting so is held)
        self._starts = [(v, len(v)) for v in redactor._values]
        self._starts += [(lit, hold) for lits, hold in shapes if lits is not None for lit in lits]
        self._always = max((hold - 1 for lits, hold in shapes if lits is None), default=0)
        holds = [hold for _starts, hold in shapes] + [len(v) for v in redactor._values]
        self.context = max([STREAM_WINDOW, *(2 * h for h in holds)])
        self._pending = ""  # arrived, not yet released
        self._context = ""  # the last released characters, as they arrived (not redacted)
        self._next = STREAM_BATCH  # look again once this much is held

    def _spans(self, text: str, pos: int = 0) -> list[tuple[int, int, str]]:
        r"""Every secret in ``text`` from ``pos`` on as ``(start, end, name)``, overlaps merged, in order.

        ``text[:pos]`` is only looked at, as what comes before (for ``\b``).

        Found in the order :meth:`Redactor.text` replaces them, each on the text with the
        earlier finds masked (same length, non-word characters, as the ``[REDACTED:...]``
        that replaces them is at its edges), so both agree on what is a secret.
        """
        found = []
        masked = text

        def mask(start: int, end: int, name: str) -> None:
            nonlocal masked
            found.append((start, end, name))
            masked = masked[:start] + "\0" * (end - start) + masked[end:]

        for value in self.redactor._values:
            at = masked.find(value, pos)
            while at >= 0:
                mask(at, at + len(value), self.redactor.secrets[value])
                at = masked.find(value, at + len(value))
        for name, rx, lits in self._patterns:
            if lits is not None and not any(lit in masked for lit in lits):
                continue
            for m in list(rx.finditer(masked, pos)):
                if m.end() > m.start():
                    mask(m.start(), m.end(), name)
        found.sort()
        merged: list[tuple[int, int, str]] = []
        for start, end, name in found:
            if merged and start < merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]), merged[-1][2])
            else:
                merged.append((start, end, name))
        return merged

    def _held_from(self, text: str) -> int:
        """Return where the tail that may still become a secret starts (``len(text)``: none)."""
        n = len(text)
        cut = n - self._always
        for lit, hold in self._starts:
            j = text.find(lit[0], max(0, n - hold + 1))
            while 0 <= j < cut:
                tail = text[j:]
                if lit.startswith(tail) or tail.startswith(lit):
                    cut = j
                    break
                j = text.find(lit[0], j + 1)
        return cut

    def _release(self, final: bool) -> str:
        text = self._context + self._pending
        base, n = len(self._context), len(self._pending)
        # The first character of a full context is only there to be looked back at.
        pos = 1 if base > self.context else 0

        def spans(of: str) -> list[tuple[int, int, str]]:
            return [(max(s, base) - base, e - base, name) for s, e, name in self._spans(of, pos) if e > base]

        found = spans(text)
        cut, touching = n, list(found)
        if not final:
            held = max(base, self._held_from(text))
            cut = held - base
            if held < len(text):
                # What is held may still become a secret, masked like one: a match its masking
                # would make (``\b`` just before it) is held as well.
                touching += spans(text[:held] + "\0" * (len(text) - held))
        moved = True
        while moved:  # never split a secret, nor release one that may go on
            moved = False
            for start, end, _name in touching:
                if start < cut and (end > cut or (end == cut and not final)):
                    cut, moved = start, True
        out, at = [], 0
        for start, end, name in found:
            if end > cut:
                break
            out.append(self._pending[at:start] + f"[REDACTED:{name}]")
            at = end
        out.append(self._pending[at:cut])
        self._context = (self._context + self._pending[:cut])[-self.context - 1:]
        self._pending = self._pending[cut:]
        self._next = len(self._pending) + STREAM_BATCH
        return "".join(out)

    def feed(self, text: str) -> str:
        """Take the next chunk; return the redacted text that is now safe to journal (maybe "")."""
        self._pending += text
        if len(self._pending) < self._next:
            return ""
        return self._release(final=False)

    def flush(self) -> str:
        """Return the rest, redacted (the stream ended), and start over."""
        out = self._release(final=True)
        self.reset()
        return out

    def reset(self) -> None:
        """Drop what is held (an event now holds the whole text, redacted on its own)."""
        self._pending = self._context = ""
        self._next = STREAM_BATCH
