"""Which Claude Code transcripts of a folder are one family, and when each was begun.

Claude Code 2.1 writes a session made with ``--resume ID --fork-session`` as a new file
that repeats the origin's lines, with their uuids, under the new session's id, and names no
origin. A line's uuid is its own: the transcripts beginning with the same message line are
a session and its copies (:func:`family`); the one begun first is the origin (:func:`begun`).
Only the first lines of each file are read, once per file and once per folder listing.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

#: How many lines of a transcript's start are read for where it begins (its first message line).
_HEAD_LINES = 64
#: What :func:`_head` found per file (a transcript's start never changes): its first message's uuid and stamp.
_HEADS: dict[Path, tuple[str | None, str]] = {}


def _head(path: Path) -> tuple[str | None, str]:
    """The uuid of a transcript's first message line (None: none yet) and the first time stamp it holds.

    The stamp is when the file was begun: a ``--fork-session`` copy writes its own lines
    (stamped now) before the origin's it repeats (stamped then).
    """
    if path in _HEADS:
        return _HEADS[path]
    uuid, stamp = None, ""
    try:
        with path.open("rb") as f:
            for raw in itertools.islice(f, _HEAD_LINES):
                if not raw.strip():
                    continue
                try:
                    obj = json.loads(raw)
                except ValueError:
                    break
                if not isinstance(obj, dict):
                    break
                stamp = stamp or (obj["timestamp"] if isinstance(obj.get("timestamp"), str) else "")
                if obj.get("type") in ("user", "assistant") and isinstance(obj.get("uuid"), str):
                    uuid = obj["uuid"] if obj.get("isSidechain") is not True else None
                    break
    except OSError:
        return None, ""
    if uuid is not None:
        _HEADS[path] = (uuid, stamp)
    return uuid, stamp


def begun(path: Path) -> str:
    """When the transcript at ``path`` was begun: its first time stamp, ISO 8601 (``""``: not known).

    A ``--fork-session`` copy is begun after its origin, though it repeats the origin's lines
    with their stamps: it writes lines of its own, stamped when it was made, before them.
    """
    return _head(path)[1]


def family(path: Path, first: str, session: str) -> tuple[str, ...]:
    """The sessions beside ``path`` begun before it whose transcript begins with the message line ``first``.

    Claude Code 2.1 writes a ``--fork-session`` copy as a new file repeating the origin's
    lines, same uuids, under the new session's id, and names no origin: a line's uuid is
    its own, so two transcripts beginning with the same one are of one family, and the ones
    begun before it are its origins. Those begun after it (its copies) are not: an origin
    imported after its copy (its file missing then) is its own session, as it would have
    been beside it, never taken as held by the copy that repeats its start.

    Args:
        path: the transcript read.
        first: the uuid of its first message line.
        session: its session id (left out).

    Returns:
        The other sessions' ids (their file names) begun before it, in the order they were
        begun (:func:`begun`; ties by id): a copy of a copy repeats its origin's lines and its
        copy's, and is read after both, whatever their names.
    """
    started = begun(path)
    kin = [stem for stem in _firsts(path.parent).get(first, ()) if stem not in (session, path.stem)
           and "" < begun(path.with_name(f"{stem}.jsonl")) < started]
    return tuple(sorted(kin, key=lambda stem: (begun(path.with_name(f"{stem}.jsonl")), stem)))


#: Per folder: the time of its listing (a file added or removed moves it) and its sessions by first line.
_FOLDERS: dict[Path, tuple[int, dict[str, list[str]]]] = {}


def _firsts(folder: Path) -> dict[str, list[str]]:
    """The sessions of ``folder``'s transcripts by the uuid of their first message line, kept per listing.

    A folder of a thousand transcripts is listed once, not once per transcript read; one
    holding a transcript without a message line yet is listed again next time.
    """
    try:
        listed = folder.stat().st_mtime_ns
        kept = _FOLDERS.get(folder)
        if kept is not None and kept[0] == listed:
            return kept[1]
        by: dict[str, list[str]] = {}
        whole = True
        for p in sorted(folder.glob("*.jsonl")):
            uuid = None if p.name.startswith("agent-") else _head(p)[0]
            whole = whole and (uuid is not None or p.name.startswith("agent-"))
            if uuid is not None:
                by.setdefault(uuid, []).append(p.stem)
    except OSError:
        return {}
    if whole:
        _FOLDERS[folder] = (listed, by)
    return by
