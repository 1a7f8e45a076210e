"""What redaction needs of detect-secrets, read from the library once per installed version.

detect-secrets stays the source of the credential shapes, but importing it
costs a few hundred milliseconds (it brings ``requests``), on every ``gs ask``. So its
detectors' regex sources, the keyword rule's regexes and the entropy rule's charset are read
from it once and kept in a small JSON file: a derived cache, rebuilt when missing,
unreadable or stale, and never the source of truth.

gs keeps it in the platform's user cache dir (:func:`gitsessions.places.default_cache_dir`,
e.g. ``~/.cache/gitsessions/detectors.json``), not in a session repo: it derives from the
installed library, not from any conversation, so every repo on the machine shares it and a
read-only or synced repo is never written for it. It is stale when the library's files
(their names, sizes and modification times), its version or the Python version differ from
those it was read from. It is written atomically (a temporary file renamed over it), owner
readable only.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import sys
import tempfile
from pathlib import Path
from typing import Any

#: Bumped when what the file holds changes shape.
FORMAT = 4


def library_key() -> str | None:
    """Return what identifies the installed detect-secrets, without importing it (None: not installed).

    A digest of the Python version, this file's format and the name, size and modification
    time (ns) of each of the library's source files.
    """
    spec = importlib.util.find_spec("detect_secrets")
    if spec is None or not spec.submodule_search_locations:
        return None
    root = Path(next(iter(spec.submodule_search_locations)))
    parts = [f"{FORMAT}", sys.version, str(root)]
    for folder in (root, root / "plugins", root / "core" / "plugins"):
        try:
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".py"):
                st = entry.stat()
                parts.append(f"{folder.name}/{entry.name}:{st.st_size}:{st.st_mtime_ns}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def value_group(rx: re.Pattern[str]) -> int:
    """The group of a detect-secrets regex that holds the secret (0: the whole match)."""
    # A pattern with one group that does not open it (``://user:(pass)@``) names the secret
    # by that group; a leading group (``(ghp|gho)_...``) is only an alternation.
    return 1 if rx.groups == 1 and not (rx.pattern.startswith("(") and not rx.pattern.startswith("(?")) else 0


def read_library(skipped: frozenset[str]) -> dict[str, Any]:
    """Import detect-secrets and read what redaction needs of it (a few hundred ms).

    Args:
        skipped: secret types left out (see :data:`gitsessions.secrets.detectors.SKIPPED_TYPES`).

    Returns:
        ``{"regexes": [[secret type, pattern, flags, group of the secret], ...]`` (every
        regex-based plugin's denylist, in the library's order), ``"keyword": {"denylist":
        regex source, "words": its keyword list, "quoted": [[pattern, flags, group], ...],
        "near": its keywords, "type": secret type}``, ``"forms"``: each regex's
        :class:`~gitsessions.secrets.regex_form.Form` (the denylist's, the quoted keyword ones', those
        of :func:`~gitsessions.secrets.secret_names.assignment_patterns`), ``"entropy":
        {"type": secret type, "charset": characters counted}}``.
    """
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.plugins import keyword
    from detect_secrets.plugins.base import RegexBasedDetector
    from detect_secrets.plugins.high_entropy_strings import Base64HighEntropyString

    from .regex_form import form_of
    from .secret_names import assignment_patterns

    denylist: list[tuple[str, re.Pattern[str]]] = []
    plugins: dict[str, Any] = dict(get_mapping_from_secret_type_to_class())
    for secret_type, plugin in plugins.items():
        if secret_type in skipped or not issubclass(plugin, RegexBasedDetector):
            continue
        denylist += [(secret_type, rx) for rx in plugin().denylist]
    keyword_rx: dict[re.Pattern[str], int] = dict(keyword.QUOTES_REQUIRED_DENYLIST_REGEX_TO_GROUP)
    words = list(keyword.DENYLIST)
    assigned = [re.compile(pattern) for pattern, _group in assignment_patterns(words)]
    regexes = [[secret_type, rx.pattern, rx.flags, value_group(rx)] for secret_type, rx in denylist]
    quoted = [[rx.pattern, rx.flags, group] for rx, group in keyword_rx.items()]
    patterns = [*(rx for _t, rx in denylist), *keyword_rx, *assigned]
    forms = [[None if form.starts is None else sorted(form.starts), *form[1:]] for form in map(form_of, patterns)]
    return {"regexes": regexes, "forms": forms,
            "keyword": {"type": keyword.KeywordDetector.secret_type, "denylist": keyword.DENYLIST_REGEX,
                        "words": words, "quoted": quoted,
                        "near": sorted(form_of(re.compile(f"(?i){keyword.DENYLIST_REGEX}")).starts or ())},
            "entropy": {"type": Base64HighEntropyString.secret_type,
                        "charset": Base64HighEntropyString(limit=4.5).charset}}


def _write(path: Path, data: dict[str, Any]) -> None:
    """Write ``data`` as JSON to ``path`` atomically (a reader sees the old file or the new)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    fd, tmp = tempfile.mkstemp(prefix=".detectors.", dir=path.parent)  # created 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def load(skipped: frozenset[str], path: Path | None) -> dict[str, Any]:
    """Return what :func:`read_library` returns, from the cache file when it is fresh.

    A missing, unreadable or stale cache is read again from the library and written back;
    a cache that cannot be written (read-only home) is only not kept.

    Args:
        skipped: secret types left out (part of what the cache was read with).
        path: the cache file (None: none, the library is read).

    Raises:
        ImportError: detect-secrets is not installed.
    """
    key = library_key()
    if key is None:
        raise ImportError("detect-secrets is not installed (pip install detect-secrets)")
    wanted = {"key": key, "skipped": sorted(skipped)}
    if path is None:
        return read_library(skipped)
    try:
        cached = json.loads(path.read_text("utf-8"))
        if isinstance(cached, dict) and {k: cached.get(k) for k in wanted} == wanted:
            data = cached["data"]
            if isinstance(data, dict) and {"regexes", "forms", "keyword", "entropy"} <= data.keys():
                return data
    except (OSError, ValueError, KeyError, TypeError):
        pass  # missing or damaged: read again below
    data = read_library(skipped)
    try:
        _write(path, {**wanted, "data": data})
    except OSError:
        pass  # kept in memory for this process only
    return data
