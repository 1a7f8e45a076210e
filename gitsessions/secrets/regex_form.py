"""What a regular expression's matches look like, read from its parse.

How they start, how long they are, whether they may hold whitespace.

The stream redactor (:class:`~gitsessions.secrets.redact_stream.StreamRedactor`) uses it to know which tail
of a streamed reply may still become a secret, and the shapes (:mod:`gitsessions.secrets.detectors`)
to pass over, at C speed, a text that holds none of the literals a match must start with.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Iterator
from typing import NamedTuple, Protocol

try:  # the regex parser, to read a pattern's shape (its modules were renamed in Python 3.11)
    _sre = importlib.import_module("re._constants")
    _sre_parse = importlib.import_module("re._parser")
except ImportError:  # Python 3.10
    _sre = importlib.import_module("sre_constants")
    _sre_parse = importlib.import_module("sre_parse")

#: The longest partial match held back for one pattern (characters).
MAX_HOLD = 256
#: How long a partial match is held when its pattern cannot be read (characters).
UNKNOWN_HOLD = 64
#: ASCII letters to lower case, nothing else (so indexes stay those of the text).
ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


class Source(Protocol):
    """A regex's source and flags (a compiled pattern, or one compiled later)."""

    @property
    def pattern(self) -> str:
        """The regex source."""
        ...

    @property
    def flags(self) -> int:
        """Its ``re`` flags."""
        ...


class LazyPattern:
    """A regular expression compiled on first use (most of a library's are never needed).

    Compiling detect-secrets' ~50 regexes takes ~20 ms, more than all the rest of building
    the redactor; a shape whose needles a text lacks never runs its regex, so most are never
    compiled. Equal to a compiled pattern of the same source and flags, as patterns are.

    Args:
        pattern: the regex source.
        flags: its ``re`` flags.
    """

    __slots__ = ("pattern", "flags", "_rx")

    def __init__(self, pattern: str, flags: int = 0):
        self.pattern, self.flags = pattern, flags
        self._rx: re.Pattern[str] | None = None

    @property
    def compiled(self) -> re.Pattern[str]:
        """The compiled pattern (compiled now, the first time)."""
        if self._rx is None:
            self._rx = re.compile(self.pattern, self.flags)
            self.flags = self._rx.flags  # with the flags compiling adds (re.UNICODE)
        return self._rx

    @property
    def groups(self) -> int:
        """How many groups the pattern has."""
        return self.compiled.groups

    def match(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> re.Match[str] | None:
        """As :meth:`re.Pattern.match`."""
        return self.compiled.match(text, pos, endpos)

    def finditer(self, text: str, pos: int = 0, endpos: int = sys.maxsize) -> Iterator[re.Match[str]]:
        """As :meth:`re.Pattern.finditer`."""
        return self.compiled.finditer(text, pos, endpos)

    def sub(self, repl: Callable[[re.Match[str]], str], text: str) -> str:
        """As :meth:`re.Pattern.sub`."""
        return self.compiled.sub(repl, text)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, (re.Pattern, LazyPattern)):
            return (self.pattern, self.compiled.flags) == (other.pattern, other.flags)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.pattern)


class Form(NamedTuple):
    """How the matches of a pattern look, as far as its parse tells.

    Attributes:
        starts: the literal texts every match starts with (None: unknown).
        hold: the length below which text that starts like a match may still become one
            (its longest match when bounded, else its shortest; at most :data:`MAX_HOLD`).
        icase: the starts are compared ignoring ASCII case.
        spaces: a match may contain whitespace (when it cannot, a partial match is within
            the last run of non-space characters).
        longest: the longest match, when bounded and at most :data:`MAX_HOLD` (else None).
        inner: a literal text every match holds somewhere (the longest one the pattern's
            top level spells out; lower case when ``icase``), or None.
    """

    starts: set[str] | None
    hold: int
    icase: bool
    spaces: bool
    longest: int | None = None
    inner: str | None = None


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
    if i < len(items) and items[i][0] == c.IN and all(kind == c.LITERAL for kind, _ in items[i][1]):
        # a class of a few characters then literals (``[rs]k_live_``): one start per character
        rest = _literal_starts(list(items[i + 1:])) or set()
        firsts = [chr(code) for _, code in items[i][1]]
        if len(firsts) <= 4 and rest and min(map(len, rest)) >= 2:
            return {first + tail for first in firsts for tail in rest}
        return None
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


def _inner_literal(items: list, icase: bool) -> str | None:
    """The longest run of literals at the top level of a parsed pattern (each is in every match)."""
    best, run = "", ""
    for op, av in [*items, (None, None)]:
        if op == _sre.LITERAL:
            run += chr(av)
            continue
        if len(run) > len(best):
            best = run
        run = ""
    if not best:
        return None
    return best.translate(ASCII_LOWER) if icase else best


_SPACES = (9, 10, 11, 12, 13, 32)  # the ASCII whitespace a character range may take in


def _may_hold_space(items: list) -> bool:
    """Whether a match of parsed pattern items may contain whitespace (True when unsure)."""
    c = _sre
    for op, av in items:
        if op in (c.AT, c.ASSERT, c.ASSERT_NOT):
            continue  # no characters
        if op == c.LITERAL:
            if chr(av).isspace():
                return True
        elif op == c.IN:
            for kind, arg in av:
                if kind == c.NEGATE or (kind == c.LITERAL and chr(arg).isspace()) or (
                        kind == c.RANGE and any(arg[0] <= x <= arg[1] for x in _SPACES)) or (
                        kind == c.CATEGORY and arg not in (c.CATEGORY_DIGIT, c.CATEGORY_WORD, c.CATEGORY_NOT_SPACE)):
                    return True
        elif op in (c.MAX_REPEAT, c.MIN_REPEAT, getattr(c, "POSSESSIVE_REPEAT", c.MAX_REPEAT)):
            if _may_hold_space(list(av[2])):
                return True
        elif op == c.SUBPATTERN:
            if _may_hold_space(list(av[-1])):
                return True
        elif op == c.BRANCH:
            if any(_may_hold_space(list(branch)) for branch in av[1]):
                return True
        else:  # any character, a back reference, ...: anything
            return True
    return False


def form_of(rx: Source) -> Form:
    """Return how matches of ``rx`` look, read from the parsed pattern (see :class:`Form`)."""
    c = _sre
    try:
        parsed = _sre_parse.parse(rx.pattern, rx.flags)
        lo, hi = parsed.getwidth()
    except Exception:  # an engine detail changed: be careful, not clever
        return Form(None, UNKNOWN_HOLD, False, True)
    hold = min(hi if hi < c.MAXREPEAT else max(lo, 1), MAX_HOLD)
    icase = bool(parsed.state.flags & re.IGNORECASE)
    longest = hi if hi <= MAX_HOLD else None
    items = list(parsed)
    return Form(_literal_starts(items), hold, icase, _may_hold_space(items), longest, _inner_literal(items, icase))


def _class_source(item: tuple, flags: int) -> str | None:
    """The source of a regex matching one character as parsed ``item`` does (None: not one character's test)."""
    c = _sre
    op, av = item
    if op == c.ANY:
        return "(?s:.)" if flags & re.DOTALL else "."
    if op in (c.LITERAL, c.NOT_LITERAL):
        return ("[^" if op == c.NOT_LITERAL else "[") + re.escape(chr(av)) + "]"
    if op != c.IN:
        return None
    names = {c.CATEGORY_DIGIT: r"\d", c.CATEGORY_NOT_DIGIT: r"\D", c.CATEGORY_SPACE: r"\s",
             c.CATEGORY_NOT_SPACE: r"\S", c.CATEGORY_WORD: r"\w", c.CATEGORY_NOT_WORD: r"\W"}
    out = ""
    for kind, arg in av:
        if kind == c.NEGATE and not out:
            out = "^"
        elif kind == c.LITERAL:
            out += re.escape(chr(arg))
        elif kind == c.RANGE:
            out += re.escape(chr(arg[0])) + "-" + re.escape(chr(arg[1]))
        elif kind == c.CATEGORY and arg in names:
            out += names[arg]
        else:
            return None
    return f"[{out}]"


def _refers_back(items: list) -> bool:
    """Whether parsed pattern items hold a back reference (to what the start matched: unknown)."""
    c = _sre
    for op, av in items:
        if op in (c.GROUPREF, c.GROUPREF_EXISTS):
            return True
        for sub in (av if isinstance(av, (list, tuple)) else ()):
            if isinstance(sub, _sre_parse.SubPattern) and _refers_back(list(sub)):
                return True
            if isinstance(sub, (list, tuple)) and any(isinstance(s, _sre_parse.SubPattern) and _refers_back(list(s))
                                                      for s in sub):
                return True
    return False


def run_after_start(rx: Source) -> tuple[int, re.Pattern[str]] | None:
    r"""For a pattern that opens with a literal and then a run (``eyJ[A-Za-z0-9_=-]+\.``, ``//.+/:_authToken=``).

    A match tried at ``j`` that fails fails as well at every later start whose literal ends
    within the run that followed ``j``'s (that run's ends are a subset of ``j``'s ones, and
    nothing after the run depends on where it began). So a failed try rules out every start
    up to the run's end: each character is looked at by one try, not by every start before it
    (a long run of starts that never ends a match costs its length, not its length squared).

    Returns:
        ``(length of the literal, a regex matching the run)``, or None: the pattern has
        another form (something before the literal, a bounded run, a back reference).
    """
    c = _sre
    try:
        items = list(_sre_parse.parse(rx.pattern, rx.flags))
    except Exception:  # an engine detail changed: be careful, not clever
        return None
    k = 0
    while k < len(items) and items[k][0] == c.LITERAL:
        k += 1
    if not k or k == len(items) or items[k][0] not in (c.MAX_REPEAT, c.MIN_REPEAT) or _refers_back(items):
        return None
    _lo, hi, body = items[k][1]
    body = list(body)
    one = _class_source(body[0], rx.flags) if hi == c.MAXREPEAT and len(body) == 1 else None
    if one is None:
        return None
    return k, re.compile(f"{one}*", rx.flags & (re.IGNORECASE | re.DOTALL | re.ASCII))
