""".gitignore rules, as git reads them, for the file tools' walk (``list_files``, ``search_files``).

Each folder's ``.gitignore`` applies to the paths below it; a later line wins over an earlier
one, a ``!`` line takes a path back, a trailing ``/`` matches folders only, a ``/`` anywhere
but at the end anchors the pattern to its folder, ``**`` crosses folders (gitignore(5)). The
``.git`` folder is never walked. A folder that is ignored is not entered (git does the same:
a file in it cannot be taken back by ``!``).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class _Rule:
    base: str  # the folder of the .gitignore, relative to the walk's root ("" at the root), with "/"
    regex: re.Pattern[str]
    negated: bool
    dir_only: bool


def _translate(pattern: str) -> str:
    """A gitignore glob (without ``!`` and the trailing ``/``) as a regular expression over a relative path."""
    anchored = "/" in pattern.rstrip("/")
    pattern = pattern.lstrip("/")
    out, i = [], 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("/**", i) and i + 3 == len(pattern):
            out.append("/.*")
            break
        if c == "*":
            out.append(".*" if pattern.startswith("**", i) else "[^/]*")
            i += 2 if pattern.startswith("**", i) else 1
            continue
        if c == "?":
            out.append("[^/]")
        elif c == "[":
            end = pattern.find("]", i + 1)
            if end == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1:end].replace("\\", "\\\\")
                out.append("[" + ("^" + body[1:] if body.startswith("!") else body) + "]")
                i = end
        elif c == "\\" and i + 1 < len(pattern):
            i += 1
            out.append(re.escape(pattern[i]))
        else:
            out.append(re.escape(c))
        i += 1
    body = "".join(out)
    return ("" if anchored else "(?:.*/)?") + body + "$"


def parse(text: str, base: str) -> list[_Rule]:
    """The rules of one ``.gitignore`` whose folder is ``base`` (relative, ``""`` at the root)."""
    rules = []
    for raw in text.splitlines():
        line = raw.rstrip("\r")
        if not line.endswith("\\ "):
            line = line.rstrip(" ")
        if not line or line.startswith("#"):
            continue
        negated = line.startswith("!")
        if negated:
            line = line[1:]
        dir_only = line.endswith("/")
        line = line.rstrip("/")
        if not line:
            continue
        rules.append(_Rule(base, re.compile(_translate(line)), negated, dir_only))
    return rules


def ignored(rules: list[_Rule], rel: str, is_dir: bool) -> bool:
    """True when the last rule matching ``rel`` (a path relative to the root, ``/``-separated) ignores it."""
    verdict = False
    for rule in rules:
        if rule.dir_only and not is_dir:
            continue
        if rule.base and not rel.startswith(rule.base + "/"):
            continue
        if rule.regex.match(rel[len(rule.base) + 1:] if rule.base else rel):
            verdict = not rule.negated
    return verdict


def walk(root: Path, start: Path) -> Iterator[tuple[Path, bool]]:
    """Yield ``(path, is_dir)`` under ``start`` (inside ``root``), sorted, skipping what .gitignore ignores.

    The ``.gitignore`` files of ``root`` down to ``start`` and of every folder walked apply.
    Symbolic links are listed, never followed.

    Args:
        root: the working directory the paths are relative to.
        start: the folder walked.
    """
    rules: list[_Rule] = []
    rel_start = start.relative_to(root).as_posix() if start != root else ""
    folders = [root, *[root / Path(*rel_start.split("/")[:n]) for n in range(1, len(rel_start.split("/")))]] \
        if rel_start else []
    for folder in folders:
        rules += _read(root, folder)
    yield from _walk(root, start, rules)


def _read(root: Path, folder: Path) -> list[_Rule]:
    try:
        text = (folder / ".gitignore").read_text("utf-8", errors="replace")
    except OSError:
        return []
    return parse(text, folder.relative_to(root).as_posix() if folder != root else "")


def _walk(root: Path, folder: Path, rules: list[_Rule]) -> Iterator[tuple[Path, bool]]:
    rules = rules + _read(root, folder)
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.name == ".git":
            continue
        is_dir = entry.is_dir(follow_symlinks=False)
        path = Path(entry.path)
        if ignored(rules, path.relative_to(root).as_posix(), is_dir):
            continue
        yield path, is_dir
        if is_dir:
            yield from _walk(root, path, rules)
