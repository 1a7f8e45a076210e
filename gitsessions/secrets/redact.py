"""Keeping secrets out of history: replace them before anything is journaled or committed.

Secrets never enter history. Three sources:

- values of environment variables whose names are secret (they contain KEY, TOKEN, SECRET
  or PASSWORD: :mod:`gitsessions.secrets.secret_names`, whose rule also finds ``NAME=value`` in
  text), when at least :data:`MIN_SECRET_LEN` characters long (shorter values would mangle
  ordinary text), replaced by ``[REDACTED:<variable name>]``;
- the user's own ``redact_patterns`` and gs's :data:`PATTERNS`;
- the detect-secrets detector set (:mod:`gitsessions.secrets.detectors`): credential shapes,
  ``password = "..."`` assignments and random-looking tokens, each replaced by
  ``[REDACTED:<kind>]`` (never by anything of the value).

This module never reads the environment itself: the CLI passes it in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from ..errors import GitSessionsError, InvalidSessionId
from ..log.events import Event, make_header
from .detectors import OWN_PATTERNS, Shape, library_shapes, own_shapes
from .scan import Scan
from .secret_names import MIN_SECRET_LEN, is_secret_name

_KIND = re.compile(r"\[REDACTED:([^\]]*)\]")  # the kind a replacement names

#: gs's own credential shapes, name -> regular expression (those detect-secrets lacks).
PATTERNS: dict[str, str] = OWN_PATTERNS


class Redactor:
    """Replaces secrets in text and in nested JSON values.

    One given nothing to look for (:data:`NO_REDACTION`, what ``redact: false`` gives)
    replaces nothing: its text and values go through as they are.

    Args:
        secrets: secret value -> the name shown in its place.
        patterns: pattern name -> regular expression (compiled at once: a bad one raises
            ``re.error`` here).
        detectors: also look for the detect-secrets shapes (loaded on first use), after ``patterns``.
        detector_cache: the file that keeps what is read from detect-secrets (see
            :mod:`gitsessions.secrets.detector_cache`; None: the library is imported).
    """

    def __init__(self, secrets: Mapping[str, str] | None = None, patterns: Mapping[str, str] | None = None,
                 detectors: bool = False, detector_cache: Path | None = None):
        self.secrets = dict(secrets or {})
        # Longest values first, so a secret containing another is replaced whole.
        self._values = sorted(self.secrets, key=len, reverse=True)
        self._patterns = dict(patterns or {})
        self._own = own_shapes(self._patterns)
        self._detectors = detectors
        self._detector_cache = detector_cache
        self._shapes: list[Shape] | None = None

    def __reduce__(self) -> tuple[type[Redactor], tuple]:
        # Pickled as what builds it (to a worker process reading an import ahead): the
        # compiled shapes hold closures.
        return Redactor, (self.secrets, self._patterns, self._detectors, self._detector_cache)

    @property
    def replaces_nothing(self) -> bool:
        """True when there is nothing to look for: no secrets and no shapes (no patterns, no detectors)."""
        if self._values:
            return False
        if self._shapes is not None:  # read already
            return not self._shapes
        return not self._own and not self._detectors  # not self.shapes: that would load the detectors to know

    @property
    def shapes(self) -> list[Shape]:
        """The shapes looked for, in order: the patterns given, then the detectors'."""
        if self._shapes is None:
            self._shapes = [*self._own, *(library_shapes(self._detector_cache) if self._detectors else ())]
        return self._shapes

    def text(self, text: str, only: list[tuple[int, Shape]] | None = None) -> str:
        """Return ``text`` with every secret replaced by ``[REDACTED:<name>]``.

        Args:
            text: the text.
            only: ``(index, shape)`` of the :attr:`shapes` to try, in order, each known to
                find one of its needles in ``text`` or to have none (:mod:`.redact_many`'s);
                None: all.
        """
        for value in self._values:
            if value in text:
                text = text.replace(value, f"[REDACTED:{self.secrets[value]}]")
                only = None  # what replaced it may hold a literal the shapes were chosen without
        todo = only if only is not None else list(enumerate(self.shapes))
        scan, k = Scan(text), 0
        while k < len(todo):
            i, shape = todo[k]
            k += 1
            out = shape.sub(scan, f"[REDACTED:{shape.name}]", checked=todo is only)
            if out is not scan.text:
                scan = Scan(out)
                if todo is only:  # the replacement may hold another shape's literal
                    todo, k = list(enumerate(self.shapes))[i + 1:], 0
        return scan.text

    def value(self, value: Any, text: Callable[[str], str] | None = None) -> Any:
        """Return a copy of a JSON value with :meth:`text` (or ``text``) applied to every string (keys too).

        The one walk of which strings of a value are redacted (:mod:`.redact_many` finds them with it).
        A redactor that :attr:`replaces_nothing` redacts none: ``value`` itself is returned, unwalked.
        """
        if self.replaces_nothing:
            return value
        text = text or self.text

        def walk(value: Any) -> Any:
            if isinstance(value, str):
                return text(value)
            if isinstance(value, dict):
                return {text(k) if isinstance(k, str) else k: walk(v) for k, v in value.items()}
            if isinstance(value, (list, tuple)):
                return [walk(v) for v in value]
            return value

        return walk(value)

    def header(self, session_id: str, *, created: int | None = None, **fields: Any) -> dict:
        """Return the header a new session begins with, every string of its fields redacted.

        The one place a header is built (:func:`~gitsessions.log.events.make_header`'s
        shape): what it names (the working directory, an imported file's path, the source
        tool's id) is committed and pushed as the events are, so it passes the same door.

        Args:
            session_id: the session's id (checked as every new id is: never a secret's shape).
            created: epoch ms; now when omitted.
            **fields: the other header fields (``cwd``, ``generator``, ``source``...), plain JSON.

        Returns:
            The header, as :func:`~gitsessions.log.events.make_header` builds it.
        """
        return make_header(session_id, created=created, **self.value(fields))

    def event(self, event: Event, text: Callable[[str], str] | None = None) -> Event:
        """Return ``event`` with its data redacted (the same object if unchanged; ``text``: see :meth:`value`)."""
        data = self.value(event.data, text)
        return event if data == event.data else Event(event.seq, event.time, event.type, data, event.ignorable)


#: The redactor that replaces nothing: where redaction is off (``redact: false``), and the
#: default of everything that takes a redactor.
NO_REDACTION = Redactor()


class SecretSessionId(InvalidSessionId):
    """A new session id that redaction would change: stored and pushed as a ref name, it would leak.

    Args:
        kinds: what the redactor took it for (``slack-token``).
    """

    def __init__(self, kinds: list[str]):
        self.kinds = kinds
        GitSessionsError.__init__(self, f"that name looks like a secret ({', '.join(kinds)}); choose another "
                                  "session id")
        self.session_id, self.reason = "[REDACTED]", "it looks like a secret"


def refuse_secret_id(redactor: Redactor, session_id: str) -> None:
    """Refuse ``session_id`` when redaction would change it (a store's ``new_id_rule``).

    Raises:
        SecretSessionId: it holds what the redactor replaces.
    """
    out = redactor.text(session_id)
    if out != session_id:
        raise SecretSessionId(sorted(set(_KIND.findall(out))) or ["secret"])


def from_environment(env: Mapping[str, str], extra_patterns: Mapping[str, str] | None = None,
                     detector_cache: Path | None = None, config_secrets: Mapping[str, str | None] | None = None
                     ) -> Redactor:
    """Build the redactor for an environment and config.

    Args:
        env: environment variables (the CLI passes ``os.environ``).
        extra_patterns: more name -> regex pairs from the config (``redact_patterns``).
        detector_cache: the detector cache file (see :class:`Redactor`).
        config_secrets: secrets the config holds, name -> value (its ``api_key``), replaced
            as the environment's are (a variable of the same value names it).

    Returns:
        A redactor for secret-named variables and the config's secrets with values of at
        least MIN_SECRET_LEN characters, for :data:`PATTERNS` plus ``extra_patterns``, and
        for the detector set.

    Raises:
        re.error: an ``extra_patterns`` regex that does not compile.
    """
    named = [*(config_secrets or {}).items(), *((name, value) for name, value in env.items() if is_secret_name(name))]
    secrets = {value: name for name, value in named if value and len(value.strip()) >= MIN_SECRET_LEN}
    return Redactor(secrets, {**PATTERNS, **(extra_patterns or {})}, detectors=True, detector_cache=detector_cache)
