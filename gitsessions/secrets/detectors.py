"""The credential shapes redaction looks for: a maintained detector set, and the few it lacks.

The shapes come from the ``detect-secrets`` library, a maintained detector set: every
regex-based plugin's ``denylist`` (Slack, Stripe, JWT, URLs with a password, GitHub, GitLab,
AWS, private keys, OpenAI, npm, PyPI, SendGrid, Twilio, ...), its ``KeywordDetector`` for
``password = "..."``-style assignments, and its Base64 high-entropy string entropy for
random-looking tokens. A new release of the library brings its new detectors without a
change here. :data:`OWN_PATTERNS` adds what it lacks (Anthropic and Google keys, OpenAI keys
without the legacy marker, fine-grained GitHub tokens, whole PEM blocks).

detect-secrets is slow to import (it brings ``requests``), so nothing here imports it: what
is needed of it is read once per installed version into a cache file
(:mod:`gitsessions.secrets.detector_cache`), and loaded on the first text redacted.
"""

from __future__ import annotations

import bisect
import functools
import re
import string
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from .entropy import SHORTEST, TOKEN, TOKEN_TAIL, random_parts
from .regex_form import ASCII_LOWER, Form, LazyPattern, Source, form_of, run_after_start
from .scan import Scan
from .secret_names import assignment_patterns

#: Credential shapes detect-secrets lacks or matches too narrowly, name -> regex (compiled
#: with ``re.DOTALL``). Looked for before the library's, so the more precise name wins.
OWN_PATTERNS: dict[str, str] = {
    # Anthropic API keys (sk-ant-api03-..., sk-ant-admin01-...), before the generic sk- rule
    "anthropic-api-key": r"\bsk-ant-[A-Za-z0-9_-]{20,}",
    # OpenAI (sk-..., sk-proj-...) and DeepSeek (sk-<32 hex>) API keys; the library's OpenAI
    # detector wants the legacy T3BlbkFJ marker that project keys do not carry
    "api-key": r"\bsk-[A-Za-z0-9_-]{20,}",
    # GitHub personal, OAuth, user-to-server, server-to-server and refresh tokens (the
    # library's wants exactly 36 characters after the prefix)
    "github-token": r"\bgh[pousr]_[A-Za-z0-9]{30,}",
    "github-token-fine-grained": r"\bgithub_pat_[A-Za-z0-9_]{40,}",
    # a password in a URL with no user name (redis://:password@host): the library's wants one;
    # only the group named secret is replaced
    "url-password": r"://:(?P<secret>[^:/?#\[\]@!$&'()*+,;=\s]+)@",
    # npm access tokens alone (the library finds them only in an .npmrc _authToken line)
    "npm-token": r"\bnpm_[A-Za-z0-9]{36,}",
    # Slack app-level tokens (the library knows the xox* ones)
    "slack-app-token": r"\bxapp-[0-9]+-[A-Za-z0-9]+-[0-9]+-[A-Za-z0-9]+",
    # AWS access key ids
    "aws-access-key": r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",
    # Google API keys (Maps, Gemini, Firebase, ...)
    "google-api-key": r"\bAIza[0-9A-Za-z_-]{35}",
    # PEM private key blocks, whole (the library matches the BEGIN line only); an
    # unterminated block is redacted to the end of the text
    "private-key": r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----(?:.*?-----END [A-Z0-9 ]*PRIVATE KEY-----|.*\Z)",
}

#: detect-secrets secret types left out, and why: an IP address is not a credential; hex
#: strings (commit ids, hashes, UUIDs) fill every chat about code; the vendor-keyword
#: detectors need a vendor name, a keyword and the value, and may start anywhere, so the
#: stream would hold ~70 characters of every reply (the KeywordDetector covers their
#: ``key = "..."`` form).
SKIPPED_TYPES = frozenset({"Public IP (ipv4)", "Hex High Entropy String", "Cloudant Credentials",
                           "IBM Cloud IAM Key", "IBM COS HMAC Credentials", "SoftLayer Credentials"})

#: The name shown in ``[REDACTED:<name>]`` for a detect-secrets secret type, where the type's
#: own name (lower case, words joined by ``-``) would read badly.
KIND_NAMES = {"JSON Web Token": "jwt", "Basic Auth Credentials": "url-password",
              "Secret Keyword": "assigned-secret", "Base64 High Entropy String": "high-entropy-string",
              "NPM tokens": "npm-token"}

#: The characters of a token: a match that ends inside a run of them goes on to its end.
_RUN = frozenset(string.ascii_letters + string.digits + "+/=_-")
#: The rest of a run (dot-separated parts too: a JWT's signature after its lazy match).
_REST = re.compile(r"[A-Za-z0-9+/=_-]*(?:\.[A-Za-z0-9+/=_-]+)*")


def _run_end(text: str, end: int) -> int:
    """Where the run of token characters a match ends in ends (``end``: it ends at its edge).

    A shape that matches a fixed length (Stripe's 24 characters, Google's 35) would leave
    the rest of a longer key in the text; the rest is part of the secret.
    """
    if end < len(text) and text[end] in _RUN and (text[end - 1] in _RUN or text[end - 1] == "."):
        return _REST.match(text, end).end()  # type: ignore[union-attr]  # it may match nothing
    return end


#: How far from its keyword a keyword regex is tried (characters, each side; within the line).
NEAR = 1024


@dataclass(frozen=True)
class Shape:
    """One credential shape.

    Attributes:
        name: shown in its place: ``[REDACTED:<name>]``.
        rx: the compiled pattern.
        group: the group holding the secret (0: the whole match); the rest of the match
            is context that stays, such as ``password = "`` before a value.
        pick: the secrets within a match's secret text, as ``(start, end)`` offsets in it
            (None: the whole of it).
        tail: a run of the characters a match still arriving may end with, matched at the
            start of the stream's last characters reversed: the run is held back (None: read
            from the pattern itself, or from ``near``: a keyword on the last line; see
            :class:`~gitsessions.secrets.redact_stream.StreamRedactor`).
        near: when set, ``rx`` is only tried where one of these (lower-case) keywords is, on
            its line (at most :data:`NEAR` characters either side), as detect-secrets tries
            its keyword regexes line by line: they backtrack over all text up to the next
            quote, which would make a long text cost its length squared.
        known_form: :attr:`form` as read before (from the detector cache: parsing every
            pattern again costs milliseconds per process).
        runs: every match starts where a run of at least this many
            :data:`~gitsessions.secrets.scan.RUN_CHARS` starts (the high-entropy rule's): the pattern
            is matched there only (None: not known).
    """

    name: str
    rx: re.Pattern[str] | LazyPattern
    group: int = 0
    pick: Callable[[str], Iterable[tuple[int, int]]] | None = None
    tail: re.Pattern[str] | None = None
    near: tuple[str, ...] | None = None
    known_form: Form | None = None
    runs: int | None = None

    @functools.cached_property
    def form(self) -> Form:
        """How this shape's matches look (see :func:`form_of`; ``known_form`` when given)."""
        return self.known_form if self.known_form is not None else form_of(self.rx)

    @functools.cached_property
    def needles(self) -> tuple[tuple[str, ...], bool] | None:
        """Texts one of which every match holds (its literal starts, ``near``, or a literal within); None: unknown.

        With them, whether they are lower case, to be compared ignoring ASCII case. A text
        holding none is passed over without running the pattern, at C speed.
        """
        if self.near is not None:
            return self.near, True
        if self.form.starts:
            return tuple(s.translate(ASCII_LOWER) if self.form.icase else s for s in self.form.starts), self.form.icase
        if self.form.inner:
            return (self.form.inner,), self.form.icase
        return None

    def may_match(self, scan: Scan) -> bool:
        """Whether the text may hold a match (False only when it surely holds none)."""
        if self.needles is None:
            return True
        needles, icase = self.needles
        return any(scan.has(needle, icase) for needle in needles)

    def _near(self, scan: Scan, pos: int):
        # The matches near a keyword: the keywords found with str.find on the lower-cased
        # text (C speed), then the pattern matched at the keyword (when it starts with one)
        # or searched in the line around it.
        assert self.near is not None
        text = scan.text
        anchored = self.form.starts is not None
        # A literal every match holds (``=``, ``:``): a window without it holds no match.
        inner, seen = self.form.inner, scan.lowered if self.form.icase else text
        last = pos
        for hit in scan.hits(self.near):
            if hit < pos:
                continue
            end = text.find("\n", hit)
            end = min(len(text) if end < 0 else end, hit + NEAR)
            if anchored:
                if inner is None or seen.find(inner, hit, end) >= 0:
                    m = self.rx.match(text, hit, end)
                    if m is not None:
                        yield m
                continue
            if hit < last:
                continue  # within the window just searched
            start = max(text.rfind("\n", 0, hit) + 1, hit - NEAR, last)
            if inner is None or seen.find(inner, start, end) >= 0:
                yield from self.rx.finditer(text, start, end)
            last = end

    @functools.cached_property
    def restart(self) -> tuple[int, re.Pattern[str]] | None:
        """How far a failed try rules out later starts (:func:`~gitsessions.secrets.regex_form.run_after_start`)."""
        return run_after_start(self.rx) if self.form.starts is not None and self.near is None else None

    def _matches(self, scan: Scan, pos: int):
        # What ``rx.finditer(text, pos)`` yields, the pattern matched only where a match may
        # start (its literal starts, or its runs): a search over all the text costs tens of
        # nanoseconds a character (``\b`` before a literal defeats the engine's own skip).
        # finditer takes the first place at or after ``pos`` where it matches, then goes on
        # from the match's end; every match starts at one of the places, so the same.
        text = scan.text
        if self.runs is not None:
            at = scan.runs(self.runs)
        elif self.form.starts is not None and self.needles is not None:
            at = scan.hits(*self.needles)
            # So many that the engine's search is cheaper, unless a failed try rules out
            # the starts after it: the engine's search tries each again (their run squared).
            if len(at) > len(text) // 32 + 1 and self.restart is None:
                return self.rx.finditer(text, pos)
        else:
            return self.rx.finditer(text, pos)
        return self._at(text, at, pos)

    def _at(self, text: str, at: list[int], pos: int):
        restart = self.restart
        i = bisect.bisect_left(at, pos)
        while i < len(at):
            j = at[i]
            if (m := self.rx.match(text, j)) is not None:
                yield m
                i = bisect.bisect_left(at, m.end(), i + 1)
            elif restart is not None:  # so does every start whose literal ends within the run after j's
                size, run = restart
                i = bisect.bisect_right(at, run.match(text, j + size).end() - size, i + 1)  # type: ignore[union-attr]
            else:
                i += 1

    def spans(self, text: str | Scan, pos: int = 0, checked: bool = False):
        r"""Yield ``(start, end)`` of each secret this shape finds in ``text`` from ``pos`` on, in order.

        Args:
            text: the text (or a :class:`Scan` of it, shared with other shapes).
            pos: where to start (what is before is only looked at, for ``\b``).
            checked: the caller knows the text holds one of :attr:`needles`.
        """
        scan = text if isinstance(text, Scan) else Scan(text)
        text = scan.text
        if not checked and not self.may_match(scan):
            return
        matches = self._near(scan, pos) if self.near is not None else self._matches(scan, pos)
        last = pos
        for m in matches:
            if m.start() < last:
                continue  # overlaps a match already taken
            start, end = m.span(self.group)
            if end <= start:
                continue
            if self.pick is None:
                end = _run_end(text, end)
                last = max(m.end(), end)
                yield start, end
                continue
            for a, b in self.pick(text[start:end]):
                last = m.end()
                yield start + a, start + b

    def sub(self, text: str | Scan, replacement: str, checked: bool = False) -> str:
        """Return ``text`` with every secret this shape finds replaced by ``replacement``.

        Args:
            text: the text (or a :class:`Scan` of it, shared with other shapes).
            replacement: what each secret is replaced by.
            checked: the caller knows the text holds one of :attr:`needles`.
        """
        scan = text if isinstance(text, Scan) else Scan(text)
        text = scan.text
        if not checked and not self.may_match(scan):
            return text
        out, at = [], 0
        for start, end in self.spans(scan, checked=True):
            out.append(text[at:start] + replacement)
            at = end
        return "".join(out) + text[at:] if out else text


def own_shapes(patterns: dict[str, str]) -> list[Shape]:
    """Compile name -> regex pairs (``re.DOTALL``, as a key block spans lines) into shapes.

    A pattern with a group named ``secret`` has only that group replaced (the rest of the
    match is context that stays); else the whole match is.

    Raises:
        re.error: a pattern that does not compile.
    """
    compiled = [(name, re.compile(rx, re.DOTALL)) for name, rx in patterns.items()]
    return [Shape(name, rx, rx.groupindex.get("secret", 0)) for name, rx in compiled]


def _kind(secret_type: str) -> str:
    return KIND_NAMES.get(secret_type) or re.sub(r"[^a-z0-9]+", "-", secret_type.lower()).strip("-")


@functools.cache
def library_shapes(cache: Path | None = None) -> tuple[Shape, ...]:
    """Return the shapes of detect-secrets' plugins, in its order, the high-entropy rule last.

    Args:
        cache: the cache file of what is read from the library (see
            :mod:`gitsessions.secrets.detector_cache`): with it, the library is imported only when
            the file is missing or stale (once per installed version), not by every process.
            None: the library is imported (a few hundred milliseconds).
    """
    from .detector_cache import load

    lib = load(SKIPPED_TYPES, cache)
    forms = iter(lib["forms"])

    def known() -> Form:
        starts, *rest = next(forms)
        return Form(None if starts is None else set(starts), *rest)

    out = [Shape(_kind(secret_type), LazyPattern(pattern, flags), group, known_form=known())
           for secret_type, pattern, flags, group in lib["regexes"]]
    # KeywordDetector: the quoted forms it checks in text of unknown type (``password = "x"``,
    # ``"secret": "x"``), and an unquoted ``password=x`` built from its keyword list.
    kw = lib["keyword"]
    assigned = _kind(kw["type"])
    keyword_near = tuple(kw["near"])
    for pattern, flags, group in kw["quoted"]:
        out.append(Shape(assigned, LazyPattern(pattern, flags), group, near=keyword_near, known_form=known()))
    # A value given to a secret name (``ADMIN_PASSWORD=...``, ``api_key: ...``; see
    # :mod:`gitsessions.secrets.secret_names`), tried on the lines holding one of the names' words.
    assignments = [(pattern, group, known()) for pattern, group in assignment_patterns(kw["words"])]
    words = tuple(sorted(set().union(*(form.starts or () for *_p, form in assignments if form.icase))))
    for pattern, group, form in assignments:
        out.append(Shape(assigned, LazyPattern(pattern), group, near=words, known_form=form))
    out.append(Shape(_kind(lib["entropy"]["type"]), re.compile(TOKEN), pick=random_parts(lib["entropy"]["charset"]),
                     tail=re.compile(TOKEN_TAIL), runs=SHORTEST))
    return tuple(out)


def _inline(rx: Source) -> str:
    # The pattern's flags written at its start, where Python wants them (once).
    flags = "".join(c for flag, c in ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.VERBOSE, "x"))
                    if rx.flags & flag)
    pattern = re.sub(r"\A\(\?[aiLmsux]+\)", "", rx.pattern)
    return f"(?{flags}){pattern}" if flags else pattern


def hook_patterns(extra: dict[str, str] | None = None, cache: Path | None = None) -> dict[str, str]:
    """Return every shape as a plain regex, name -> regex, for the shipped pre-commit hook.

    The hook needs only python3: it gets the same shapes as text (flags written inline, a
    name repeated as ``name #2``). What a regex cannot say is left out: the entropy test of
    the high-entropy rule, and the value group (the hook refuses the whole match).

    Args:
        extra: the config's ``redact_patterns``, looked for after gs's own.
        cache: the detector cache file (see :func:`library_shapes`).
    """
    out: dict[str, str] = {}
    for shape in [*own_shapes({**OWN_PATTERNS, **(extra or {})}), *library_shapes(cache)]:
        if shape.pick is not None:
            continue
        name, n = shape.name, 1
        while name in out:
            n += 1
            name = f"{shape.name} #{n}"
        out[name] = _inline(shape.rx)
    return out
