"""A streamed reply redacted as it arrives: only prefixes that cannot become part of a secret are released.

The shapes and the rules are :class:`~gitsessions.secrets.redact.Redactor`'s; this module decides when
what arrived so far is final: a secret split across chunks never sits whole, nor in pieces,
in the journal.
"""

from __future__ import annotations

import re
import time
from typing import TYPE_CHECKING

from .regex_form import ASCII_LOWER, MAX_HOLD
from .scan import Scan

if TYPE_CHECKING:
    from .redact import Redactor

_NON_SPACES = re.compile(r"\S*")  # a run of them ends a match that holds no space
#: The least released text kept as context for later matches (characters).
STREAM_WINDOW = 64
#: Held text is looked at again once this many more characters arrived (bounds the work per
#: chunk: each look costs the shapes' searches over the new text and the context before it)...
STREAM_BATCH = 256
#: ... or once this long passed since the last look (seconds), so that the journal lags a
#: reply streamed at reading speed by a fraction of a second, not by a batch.
STREAM_INTERVAL = 0.1
#: Held text longer than this (characters; a match still going on, past any start's or
#: keyword's hold) is looked at again once it doubled, not every batch.
HELD_LONG = 4 * MAX_HOLD


class StreamRedactor:
    r"""Redacts a streamed reply over the joined text, releasing only prefixes that are final.

    A secret split across chunks (``sk-`` in one, the rest in the next four) is never
    released in pieces. :meth:`feed` holds back, from the end of what arrived:

    - any tail that is the start of a secret value;
    - any tail that starts like a credential pattern and is still shorter than the pattern
      needs; for a pattern whose start cannot be read, the last run of non-space characters
      when its matches hold no space, else that many characters always;
    - any tail from where a shape says a match still arriving may begin: a keyword of its
      ``near`` on the last line, or its ``tail`` (a run of token characters);
    - any match that reaches the end (it may go on; an unterminated PEM block holds to the
      end).

    Matches are looked for with the released text just before as context, so ``\b`` and a
    match whose first characters were released before it matched still count: what follows
    is replaced. Ordinary text is released at once, so a crash loses no more of it than
    before. The shapes are read on the first chunk (the detector set loads then).

    Args:
        redactor: the secrets and patterns to replace.
    """

    def __init__(self, redactor: Redactor):
        self.redactor = redactor
        self._ready = False
        self._pending = ""  # arrived, not yet released
        self._context = ""  # the last released characters, as they arrived (not redacted)
        self._next = STREAM_BATCH  # look again once this much is held
        self._due = time.monotonic() + STREAM_INTERVAL  # or at this time (time.monotonic())

    def _setup(self) -> None:
        redactor = self.redactor
        self._patterns = list(redactor.shapes)
        # (text a secret starts with, length below which a tail starting so is held, ignoring case)
        self._starts = [(v, len(v), False) for v in redactor._values]
        self._tails: list[tuple[re.Pattern[str], int]] = []  # (a run held back, at most how long)
        self._keywords: list[tuple[str, ...]] = []  # a match may begin at one on the last line
        self._always = 0
        # (a start, the literal its matches need later, ignoring case): a shape whose matches have
        # no bound and may hold spaces (a PEM header still arriving) is held from its start
        # until that literal follows, as its regex cannot match what has arrived yet.
        self._unclosed: list[tuple[str, str, bool]] = []
        holds = [len(v) for v in redactor._values]
        for shape in redactor.shapes:
            lits, hold, icase, spaces = shape.form.starts, shape.form.hold, shape.form.icase, shape.form.spaces
            holds.append(hold)
            if shape.near is not None:
                if shape.near not in self._keywords:  # the keyword shapes share theirs
                    self._keywords.append(shape.near)
            elif shape.tail is not None:
                self._tails.append((shape.tail, MAX_HOLD))
            elif lits is not None:
                self._starts += [(lit.translate(ASCII_LOWER) if icase else lit, hold, icase) for lit in lits]
                inner = shape.form.inner
                if spaces and shape.form.longest is None and inner and inner not in lits:
                    self._unclosed += [(lit.translate(ASCII_LOWER) if icase else lit,
                                        inner.translate(ASCII_LOWER) if icase else inner, icase) for lit in lits]
            elif not spaces:
                self._tails.append((_NON_SPACES, max(hold - 1, 1)))
            else:
                self._always = max(self._always, hold - 1)
        # One entry per literal: the longest hold of the shapes starting with it.
        longest: dict[tuple[str, bool], int] = {}
        for lit, hold, icase in self._starts:
            longest[lit, icase] = max(hold, longest.get((lit, icase), 0))
        self._starts = [(lit, hold, icase) for (lit, icase), hold in longest.items()]
        self._icase = any(icase for *_, icase in self._starts) or any(icase for *_, icase in self._unclosed)
        self.context = max([STREAM_WINDOW, *(2 * h for h in holds)])
        # The needles (texts one of which every match holds), each searched once per look:
        # a shape runs only when one of its is where its matches may be (str.rfind in C,
        # instead of every shape's regex in Python).
        needles = sorted({(n, shape.needles[1]) for shape in self._patterns if shape.needles for n in shape.needles[0]})
        self._needles = needles
        index = {needle: k for k, needle in enumerate(needles)}
        self._needles_of: list[tuple[int, ...] | None] = [
            None if shape.needles is None else tuple(index[(n, shape.needles[1])] for n in shape.needles[0])
            for shape in self._patterns]
        # A literal every match holds besides its needles (``=`` after ``password``), also
        # searched: a keyword alone does not make the keyword shapes run.
        self._inner: list[tuple[str, bool] | None] = [
            (shape.form.inner, shape.form.icase) if shape.form.inner and shape.needles is not None
            and (shape.form.inner,) != shape.needles[0] else None for shape in self._patterns]
        # How far before the new text a shape's match may start: its longest match, the line
        # (a keyword shape is tried on its keyword's line), the run of non-space characters
        # (a shape whose matches hold none), else anywhere (None).
        self._reach: list[int | str | None] = [
            "line" if shape.near is not None else shape.form.longest if shape.form.longest is not None
            else None if shape.form.spaces else "word" for shape in self._patterns]
        self._ready = True

    def _spans(self, text: str, pos: int = 0, since: int = 0) -> list[tuple[int, int, str]]:
        r"""Every secret in ``text`` from ``pos`` on as ``(start, end, name)``, overlaps merged, in order.

        ``text[:pos]`` is only looked at, as what comes before (for ``\b``). Only secrets
        that end after ``since`` are wanted: a shape whose matches are short is looked for
        from its longest match before ``since`` on, not in all the text (the work per chunk).

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
        scan = Scan(masked)
        line = text.rfind("\n", 0, since) + 1
        word = max(line, text.rfind(" ", 0, since) + 1, text.rfind("\t", 0, since) + 1)
        # Where each needle is last (before any masking: a needle masked since only makes a
        # shape run for nothing).
        lowered = scan.lowered
        last = [(lowered if icase else masked).rfind(needle, pos) for needle, icase in self._needles]
        lasts: dict[tuple[int, ...], int] = {}
        starts = {"line": line, "word": word}
        for shape, reach, needles, inner in zip(self._patterns, self._reach, self._needles_of, self._inner,
                                                strict=True):
            start_at = pos if reach is None else max(pos, starts[reach] if isinstance(reach, str) else since - reach)
            if needles is not None:
                # Every match holds one of its needles at or after its start: none there, no match.
                hit = last[needles[0]] if len(needles) == 1 else lasts.get(needles)
                if hit is None:
                    hit = lasts[needles] = max(last[k] for k in needles)
                if hit < start_at or (inner is not None
                                        and (lowered if inner[1] else masked).find(inner[0], start_at) < 0):
                    continue
            for start, end in list(shape.spans(scan, start_at, checked=True)):  # live: a needle is there
                mask(start, end, shape.name)
            if masked is not scan.text:
                scan = Scan(masked)
        found.sort()
        merged: list[tuple[int, int, str]] = []
        for start, end, name in found:
            if merged and start < merged[-1][1]:
                merged[-1] = (merged[-1][0], max(end, merged[-1][1]), merged[-1][2])
            else:
                merged.append((start, end, name))
        return merged

    def _held_from(self, text: str) -> int:
        """Return where the tail that may still become a secret starts (``len(text)``: none).

        The earliest of what each kind of shape holds back: a literal a match starts with, a
        start still waiting for the literal that closes it, a run at the end, a keyword on the
        last line.
        """
        n = len(text)
        cut = n - self._always
        lowered = text.translate(ASCII_LOWER) if self._icase else text
        cut = self._held_by_starts(text, lowered, cut)
        cut = self._held_by_unclosed(text, lowered, cut)
        if self._tails:
            cut = self._held_by_runs(text, cut)
        if self._keywords:
            cut = self._held_by_keywords(text, cut)
        return cut

    def _held_by_starts(self, text: str, lowered: str, cut: int) -> int:
        """Where a literal a match starts with lies whole within its hold, or begins at the very end."""
        n = len(text)
        for lit, hold, icase in self._starts:
            seen = lowered if icase else text
            j = seen.find(lit, max(0, n - hold + 1))
            if 0 <= j < cut:
                cut = j
            j = seen.find(lit[0], max(0, n - len(lit) + 1), cut)
            while 0 <= j < cut:
                if lit.startswith(seen[j:]):
                    cut = j
                    break
                j = seen.find(lit[0], j + 1, cut)
        return cut

    def _held_by_unclosed(self, text: str, lowered: str, cut: int) -> int:
        """Where a start waits for the literal its matches need later (a PEM header still arriving)."""
        n = len(text)
        for lit, inner, icase in self._unclosed:
            seen = lowered if icase else text
            j = seen.rfind(lit, max(0, n - MAX_HOLD))
            if 0 <= j < cut and seen.find(inner, j + len(lit)) < 0:
                cut = j
        return cut

    def _held_by_runs(self, text: str, cut: int) -> int:
        """Where a run that may still grow into a match ends the text."""
        n = len(text)
        # Runs are matched on the end reversed: a regex searched for a run ending at \Z
        # would try every start, each to the end.
        back = text[max(0, n - MAX_HOLD):][::-1]
        for run_rx, longest in self._tails:
            run = run_rx.match(back).end()  # type: ignore[union-attr]  # a run may be empty
            if run and n - min(run, longest) < cut:
                cut = n - min(run, longest)
        return cut

    def _held_by_keywords(self, text: str, cut: int) -> int:
        """Where a keyword a match may begin at stands on the last line."""
        n = len(text)
        lo = max(text.rfind("\n") + 1, n - MAX_HOLD)
        line = text[lo:].translate(ASCII_LOWER)
        for keywords in self._keywords:
            for keyword in keywords:
                j = line.find(keyword)
                if 0 <= j and lo + j < cut:
                    cut = lo + j
        return cut

    def _release(self, final: bool) -> str:
        text = self._context + self._pending
        base, n = len(self._context), len(self._pending)
        # The first character of a full context is only there to be looked back at.
        pos = 1 if base > self.context else 0

        def spans(of: str, since: int) -> list[tuple[int, int, str]]:
            return [(max(s, base) - base, e - base, name) for s, e, name in self._spans(of, pos, since) if e > base]

        found = spans(text, base)
        cut, touching = n, list(found)
        if not final:
            held = max(base, self._held_from(text))
            cut = held - base
            if held < len(text):
                # What is held may still become a secret, masked like one: a match its masking
                # would make (``\b`` just before it) is held as well.
                # Only a match reaching the held part is new: one that ends before it was
                # found above.
                touching += spans(text[:held] + "\0" * (len(text) - held), held)
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
        # Past what a start or keyword holds, what is held is a match still going on (a run of
        # sk-sk-..., password=password=...), held whole: looked at again every batch, it would be
        # read again each time (its length squared), so only once it doubled. None of it is
        # released any sooner, and held text of the usual size is looked at every batch.
        held = len(self._pending)
        self._next = held + (STREAM_BATCH if held <= HELD_LONG else held)
        self._due = time.monotonic() + STREAM_INTERVAL
        return "".join(out)

    def feed(self, text: str) -> str:
        """Take the next chunk; return the redacted text that is now safe to journal (maybe "")."""
        if self.redactor.replaces_nothing:
            return text  # nothing can become a secret: nothing is held back
        if not self._ready:
            self._setup()
        self._pending += text
        if len(self._pending) < self._next and time.monotonic() < self._due:
            return ""
        return self._release(final=False)

    def flush(self) -> str:
        """Return the rest, redacted (the stream ended), and start over."""
        if not self._ready:
            self._setup()
        out = self._release(final=True)
        self.reset()
        return out

    def reset(self) -> None:
        """Drop what is held (an event now holds the whole text, redacted on its own)."""
        self._pending = self._context = ""
        self._next = STREAM_BATCH
        self._due = time.monotonic() + STREAM_INTERVAL
