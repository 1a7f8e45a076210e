"""The write-ahead journal of the turn in progress: a crash loses at most a moment of streamed text, never the prompt.

Events of an unsaved turn live in ``<repo>/gs/journal/<id>.jsonl`` until the turn becomes a
commit; then the journal is removed. Line 1 names the commit the turn builds on (and the
header, for a session not yet saved); later lines are events, encoded exactly as in
``session.jsonl``, or ``{"delta": "..."}`` records holding streamed reply text not yet part
of an event.

Durability: every record is written to the OS at once (``kill -9`` loses nothing written);
message boundaries are also fsynced (a power cut loses at most the text since the last one).
A record the file system refuses (a full disk) is cut off again, so the journal always
ends with a whole record, and the refusal is raised as :class:`~gitsessions.errors.DiskFull`
or :class:`~gitsessions.errors.RepoReadOnly`.
"""

from __future__ import annotations

import errno
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from ..log.events import Event, clean_text
from .faults import os_faults

JOURNAL_VERSION = 1

_json_string = json.encoder.encode_basestring  # a str as JSON, non-ASCII kept (the C encoder's)


@dataclass
class JournalContents:
    """What a journal held when read back.

    Attributes:
        base: the commit the turn builds on (None for a session not yet saved).
        header: the session header, for a session not yet saved.
        events: complete events, in order.
        partial: streamed text received after the last event (a reply cut short).
        torn: True when a torn last line was dropped.
    """

    base: str | None
    header: dict | None
    events: list[Event] = field(default_factory=list)
    partial: str = ""
    torn: bool = False


class Journal:
    """Append-only journal file of one session's turn in progress.

    Records are written as given: the session redacted them where their text entered it
    (see :mod:`gitsessions.secrets.redact`), so the journal never holds a secret.

    Args:
        path: the journal file (its folder is created on first write).
        repo: the session repo, named when a write is refused (default: the journal's folder).
    """

    def __init__(self, path: str | os.PathLike, repo: str | os.PathLike | None = None):
        self.path = Path(path)
        self.repo = Path(repo) if repo is not None else self.path.parent
        self._fd: int | None = None
        self._size = 0  # bytes of whole records written
        self._last = 0  # where the last record starts (see drop_last)

    # -- where the bytes go (a backend keeping journals elsewhere overrides these five) -----

    def exists(self) -> bool:
        """Return True when a journal file is present (a turn in progress or orphaned)."""
        return self.path.exists()

    def _start(self) -> None:
        """Open an empty journal for writing (truncating an old one)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o666)

    def _write(self, data: bytes, sync: bool) -> None:
        if self._fd is None:
            raise RuntimeError("journal not begun")
        if os.write(self._fd, data) != len(data):  # a short write: the disk filled mid-record
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if sync:
            os.fsync(self._fd)

    def _truncate(self, size: int) -> None:
        if self._fd is not None:
            os.ftruncate(self._fd, size)

    def _remove(self) -> None:
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass

    def _read_bytes(self) -> bytes | None:
        try:
            return self.path.read_bytes()
        except FileNotFoundError:
            return None

    # -- the records -----------------------------------------------------------------------

    def _record(self, data: bytes, sync: bool) -> None:
        """Write one whole record, or none: a refused write is cut off again (never a torn line)."""
        try:
            self._write(data, sync)
        except BaseException as exc:
            self._truncate(self._size)
            if isinstance(exc, OSError):
                with os_faults(self.repo):  # a full or read-only disk becomes our error
                    raise
            raise
        self._last, self._size = self._size, self._size + len(data)

    def begin(self, base: str | None, header: dict | None) -> None:
        """Start a fresh journal for a turn building on ``base`` (truncates an old one).

        The first line is not fsynced on its own: it holds nothing to recover, and the
        turn's first message boundary (the prompt, a few microseconds later) fsyncs it.
        """
        self.close()
        self._size = self._last = 0
        with os_faults(self.repo):
            self._start()
        first = {"journal": JOURNAL_VERSION, "base": base, "header": header}
        try:
            self._record(json.dumps(first, ensure_ascii=False).encode("utf-8") + b"\n", sync=False)
        except BaseException:
            self.clear()  # a journal without its first line holds nothing
            raise

    def append_event(self, event: Event, sync: bool = True) -> None:
        """Write one complete event (fsynced unless ``sync`` is False).

        Raises:
            DiskFull, RepoReadOnly: the file system refused it (the journal is as before).
        """
        self._record(event.encode(), sync)

    def append_delta(self, text: str) -> None:
        """Write streamed reply text as it arrives (to the OS, not fsynced)."""
        if text:
            # As json.dumps({"delta": text}, ensure_ascii=False) writes it, without building an
            # encoder for each of a reply's many records.
            self._record(b'{"delta": ' + _json_string(clean_text(text)).encode("utf-8") + b"}\n", False)

    def sync(self) -> None:
        """Fsync what was written (the records written without ``sync``), when the journal is open.

        Raises:
            DiskFull, RepoReadOnly: the file system refused it.
        """
        if self._fd is not None:
            with os_faults(self.repo):
                os.fsync(self._fd)

    def drop_last(self) -> None:
        """Cut off the last record written (a turn taken back before it began)."""
        self._truncate(self._last)
        self._size = self._last

    def close(self) -> None:
        """Close the file handle; the journal stays on disk."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def clear(self) -> None:
        """Remove the journal (after its turn was committed)."""
        self.close()
        self._remove()

    def read(self) -> JournalContents | None:
        """Read the journal back; None when there is none or its first line is unusable.

        Complete records are kept; a torn last line is dropped. Events whose line is damaged
        before the end stop the read there (what follows cannot be trusted to be in order).
        """
        raw = self._read_bytes()
        if raw is None:
            return None
        lines = raw.split(b"\n")
        torn = lines[-1] != b""
        lines.pop()  # a whole last line leaves "", a torn one is dropped
        if not lines:
            return None
        try:
            first = json.loads(lines[0])
            base, header = first.get("base"), first.get("header")
        except (ValueError, AttributeError):
            return None
        out = JournalContents(base, header, torn=torn)
        for line in lines[1:]:
            try:
                obj = json.loads(line.decode("utf-8"))
            except (UnicodeDecodeError, ValueError):
                out.torn = True
                break
            if not isinstance(obj, dict):
                out.torn = True  # damaged: no record of ours is anything but an object
                break
            if "delta" in obj:
                out.partial += str(obj["delta"])
            elif isinstance(obj, dict) and "seq" in obj:
                out.events.append(
                    Event(obj["seq"], obj.get("time", 0), obj.get("type", ""), obj.get("data", {}),
                          obj.get("ignorable") is True)
                )
                out.partial = ""  # the event supersedes the text streamed before it
        return out
