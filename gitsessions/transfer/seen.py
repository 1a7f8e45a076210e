"""The files an import took in whole, by content: the same file again is not read again.

Importing a tool's folder again (cron, ``--watch``'s first pass) found nothing new in
almost every file, but read, converted and redacted each and compared it with its
sessions: ~60 ms a Claude Code transcript. This derived cache (keyed by content, rebuilt
when missing, never needed for correctness) keeps, for each file whose import left nothing
aside (every conversation in live sessions: no clash, nothing skipped, no note) and that
was read alone (not a Claude Code transcript with ``--fork-session`` kin beside it, nor a
Codex fork whose origin's rollout was not found: imported again once it is, it gives more), the
digest of its bytes and of what the import depended on (gs's version, the format asked
for, the paths kept, the redaction's shapes and the names of the secrets it replaces,
never their values), and the tips of the sessions it gave. The file is passed over only
when all of that is the same and every one of those sessions is still at that tip: a file
changed by one byte, a session continued, renamed or archived since, another redaction,
and the file is read again. Nothing of a file's path or content is kept, only digests.

The cache is ``<repo>/gs/imported``, written atomically (owner only) by an import that
wrote under the import lock; a missing, unreadable or foreign file is an empty cache.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Callable
from contextlib import AbstractContextManager, ExitStack
from pathlib import Path

from .. import __version__
from ..secrets.redact import Redactor
from ..store import SessionStore
from .read import TOOLS, ImportPlan
from .write import ImportResult

#: Bumped when what the file holds changes shape.
FORMAT = 2
#: The most files kept (the least recently recorded go first).
MOST = 100_000


def digest(*parts: bytes | str) -> str:
    """A hex digest of ``parts`` (each length-prefixed, so that no two lists of parts give one)."""
    h = hashlib.blake2b(digest_size=20)
    for part in parts:
        raw = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else part
        h.update(len(raw).to_bytes(8, "big"))
        h.update(raw)
    return h.hexdigest()


def options_digest(fmt: str, path: str | None, redactor: Redactor) -> str:
    """What, besides a file's bytes, an import of it depends on, as a digest.

    Args:
        fmt: the format asked for (``--from``).
        path: the file's absolute path when it is written into the headers (``--keep-paths``), else None.
        redactor: the redactor (:data:`~gitsessions.secrets.redact.NO_REDACTION`: off): its
            shapes' names and patterns, and the names of the secrets it replaces (a value is
            never part of anything kept).
    """
    shapes = [f"{s.name}\0{s.rx.pattern}\0{s.group}" for s in redactor.shapes]
    names = sorted(set(redactor.secrets.values()))
    return digest(__version__, fmt, path or "", "\0".join(shapes), "\0".join(names),
                  str(not redactor.replaces_nothing))  # whether redaction was on


def content_digest(source: bytes | Path) -> str:
    """The hex digest of a file's bytes, given or read from ``source`` a piece at a time.

    A data export may be hundreds of MB: read a MiB at a time (``hashlib.file_digest`` is
    Python 3.11's), so memory does not follow the file's size.

    Raises:
        OSError: ``source`` cannot be read.
    """
    h = hashlib.blake2b(digest_size=20)
    if isinstance(source, bytes):
        h.update(source)
    else:
        with open(source, "rb") as f:
            while piece := f.read(1 << 20):
                h.update(piece)
    return h.hexdigest()


#: What identifies a file's import: the digest of its bytes, and :func:`options_digest`.
Key = tuple[str, str]


class SeenFiles:
    """The files imported whole before, from ``<repo>/gs/imported`` (see the module's docstring).

    Use as a context manager for one import run: the store :meth:`unchanged` opens is opened
    once for all the run's files (~3 ms an open: as long as the rest of a file's check) and
    closed at the end.

    Args:
        path: the cache file.
    """

    def __init__(self, path: Path):
        self.path = path
        self._files: dict[str, dict] | None = None
        self.changed = False
        self._stack = ExitStack()
        self._store: SessionStore | None = None  # opened by the first check that needs it

    def __enter__(self) -> SeenFiles:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the store the checks opened (if any); a check after this opens it again."""
        self._store = None
        self._stack.close()

    @property
    def files(self) -> dict[str, dict]:
        """Content digest -> ``{"options": digest, "tips": {session id: commit}}``, read on first use."""
        if self._files is None:
            try:
                raw = json.loads(self.path.read_text("utf-8"))
                files = raw["files"] if raw.get("format") == FORMAT and isinstance(raw.get("files"), dict) else {}
            except (OSError, ValueError, AttributeError):
                files = {}
            self._files = files
        return self._files

    @staticmethod
    def key(source: bytes | Path, fmt: str, path: str | None, redactor: Redactor) -> Key:
        """The key of a file's import: :func:`content_digest` of ``source``, :func:`options_digest` of the rest.

        Raises:
            OSError: the file ``source`` cannot be read.
        """
        return content_digest(source), options_digest(fmt, path, redactor)

    def recorded(self, key: Key) -> bool:
        """Whether a file imported with ``key`` was recorded (its sessions not looked at: a guess, read nothing)."""
        entry = self.files.get(key[0])
        return isinstance(entry, dict) and entry.get("options") == key[1]

    def unchanged(self, open_store: Callable[[], AbstractContextManager[SessionStore]], key: Key) -> bool:
        """Whether a file imported with ``key`` (:meth:`key`) would give nothing new.

        Args:
            open_store: opens the store (only when the file was recorded: a repo not made
                yet is not made here), once until :meth:`close`.
            key: the file's :meth:`key`.

        Returns:
            True only when an import recorded the file with the same options and each
            session it gave is still at the tip recorded (read now, not at the start of the
            run: a file before it in the same run may have moved one).
        """
        content, options = key
        entry = self.files.get(content)
        if not isinstance(entry, dict) or entry.get("options") != options:
            return False
        tips = entry.get("tips")
        if not tips or not isinstance(tips, dict):
            return False
        if self._store is None:
            self._store = self._stack.enter_context(open_store())
        return all(self._store.tip(sid) == tip for sid, tip in tips.items())  # each ref read from disk now

    def record(self, store: SessionStore, key: Key, plan: ImportPlan, result: ImportResult) -> None:
        """Keep a file just imported, when nothing of it was left aside (else forget it).

        Args:
            store: the store written (each session's tip is read now).
            key: the file's :meth:`key`.
            plan: what the file held.
            result: what writing it did.
        """
        content, options = key
        outcomes = [outcome for _, outs in result.conversations for outcome in outs]
        clean = (plan.kind in TOOLS and plan.conversations and not plan.sessions and not plan.skipped
                 and not plan.notes and not result.clashes and not result.stopped and not result.imported and outcomes
                 # read with its folder's other files, or waiting for one (a fork's origin): asked of what
                 # was written (every one of them, when clean): a large export's plan would read the file a third time
                 and not any(conv.family or conv.awaits for conv, _ in result.conversations)
                 and all(how in ("new", "grew", "fork", "same") for _, how, _ in outcomes))
        tips = {sid: store.tip(sid) for sid, _, _ in outcomes} if clean else {}
        self.files.pop(content, None)  # recorded last: the oldest entries go first
        if tips and all(tips.values()):
            self.files[content] = {"options": options, "tips": tips}
        self.changed = True

    def save(self) -> None:
        """Write the cache if it changed (atomically; a repo that cannot be written keeps none)."""
        if not self.changed:
            return
        files = self.files
        keep = dict(list(files.items())[-MOST:])
        try:
            fd, tmp = tempfile.mkstemp(prefix=".imported-", dir=self.path.parent)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump({"format": FORMAT, "files": keep}, out, separators=(",", ":"))
                os.replace(tmp, self.path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            return
        self.changed = False
