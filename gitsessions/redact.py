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

import re
from collections.abc import Mapping
from typing import Any

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
