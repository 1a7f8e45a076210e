"""One text looked through by many credential shapes: what they all ask of it, worked out once.

The shapes (:mod:`gitsessions.secrets.detectors`) ask a text where their literals are (with
``str.find``, at C speed) and where its runs of token characters are (the high-entropy
rule's candidates), so that a regex runs only where a match may start: a regex searched
over a whole text costs tens of nanoseconds a character, most of an import's time.
"""

from __future__ import annotations

import string

#: The characters of a high-entropy candidate's run (:data:`gitsessions.secrets.entropy.TOKEN`'s class).
RUN_CHARS = string.ascii_letters + string.digits + "+/_-"
# Each byte of RUN_CHARS -> "a", every other byte -> " " (bytes of other characters too).
_RUN_BYTES = bytes.maketrans(bytes(range(256)), bytes(ord("a") if chr(b) in RUN_CHARS else 32 for b in range(256)))


def _encoded(text: str) -> bytes:
    # Every str encodes this way (a lone surrogate too), and decodes back to as many characters.
    return text.encode("utf-8", "surrogatepass")


class Scan:
    """One text looked through by many shapes: what they all ask of it is worked out once.

    Args:
        text: the text (not changed: a shape that replaces something makes a new text).
    """

    def __init__(self, text: str):
        self.text = text
        self._lowered: str | None = None
        self._has: dict[tuple[str, bool], bool] = {}
        self._hits: dict[tuple[tuple[str, ...], bool], list[int]] = {}
        self._runs: dict[int, list[int]] = {}

    @property
    def lowered(self) -> str:
        """The text with ASCII letters in lower case (same length, same indexes)."""
        if self._lowered is None:
            text = self.text
            if text.isascii():
                self._lowered = text.lower()
            else:  # bytes.lower changes ASCII letters only (str.translate is slow past ASCII)
                self._lowered = _encoded(text).lower().decode("utf-8", "surrogatepass")
        return self._lowered

    def has(self, needle: str, icase: bool) -> bool:
        """Whether the text holds ``needle`` (lower case, compared ignoring ASCII case when ``icase``)."""
        key = (needle, icase)
        found = self._has.get(key)
        if found is None:
            found = self._has[key] = needle in (self.lowered if icase else self.text)
        return found

    def hits(self, needles: tuple[str, ...], icase: bool = True) -> list[int]:
        """Where any of ``needles`` is in the text, in order (lower case, ignoring ASCII case when ``icase``)."""
        found = self._hits.get((needles, icase))
        if found is None:
            seen, at = self.lowered if icase else self.text, set()
            for needle in needles:
                if self.has(needle, icase):
                    j = seen.find(needle)
                    while j >= 0:
                        at.add(j)
                        j = seen.find(needle, j + 1)
            found = self._hits[(needles, icase)] = sorted(at)
        return found

    def runs(self, least: int) -> list[int]:
        """Where each run of :data:`RUN_CHARS` at least ``least`` long starts, in order.

        Found in the text's UTF-8 bytes mapped to two values (C speed); a byte offset
        becomes a character offset by counting the characters of the bytes between runs.
        """
        found = self._runs.get(least)
        if found is None:
            found = self._runs[least] = []
            raw = _encoded(self.text)
            mapped, run = raw.translate(_RUN_BYTES), b"a" * least
            ascii_only = len(raw) == len(self.text)
            at, byte_at, char_at = 0, 0, 0
            while (j := mapped.find(run, at)) >= 0:  # j starts a run: byte j-1 is not "a" (see below)
                if not ascii_only:
                    char_at += len(raw[byte_at:j].decode("utf-8", "surrogatepass"))
                    byte_at = j
                found.append(j if ascii_only else char_at)
                at = mapped.find(b" ", j)  # the run's end: the next search starts on a non-run byte
                if at < 0:
                    break
        return found

