"""``packed-refs`` read line by line, so that a damaged line is told apart instead of failing every command.

git keeps refs it packed in one file: a header comment, then ``<sha> <ref>`` lines, each
maybe followed by ``^<sha>`` (the commit a tag points at). One line that is none of these
(a slip in an editor, a disk's garbage) made dulwich raise ``PackedRefsException`` on any
read of any ref: every gs command an internal error. Here the refs of the other lines are
read and the damaged lines kept (:class:`Damaged`): a read goes on (the face warns, naming
the file and line), a write that would rewrite the file refuses (:class:`RepoDamaged`: it
would drop the line, and whatever ref it was), and :func:`set_aside` moves the lines into a
file of their own (``gs doctor --fix``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dulwich.errors import PackedRefsException
from dulwich.file import GitFile
from dulwich.objects import ObjectID, valid_hexsha
from dulwich.refs import DiskRefsContainer, Ref, _packed_refs_key, check_ref_format, write_packed_refs
from dulwich.repo import Repo

from ..errors import RepoDamaged

#: The file, in the repo.
PACKED_REFS = "packed-refs"
#: Characters of a damaged line a message shows at most.
_SHOWN = 60


@dataclass(frozen=True)
class Damaged:
    """A line of ``packed-refs`` that is no ref, no peeled value and no comment.

    Attributes:
        line: its number (1-based).
        text: the line, without its end.
    """

    line: int
    text: bytes

    def what(self) -> str:
        """What is wrong, for a message: ``is no ref ('junk')``."""
        shown = self.text.decode("utf-8", "replace")
        return f"is no ref ({shown[:_SHOWN] + ('…' if len(shown) > _SHOWN else '')!r})"

    def error(self, repo: str | os.PathLike) -> RepoDamaged:
        """The refusal of a write that would rewrite the file of ``repo``."""
        return RepoDamaged(os.path.join(os.fspath(repo), PACKED_REFS), self.line, self.what())


def parse(data: bytes) -> tuple[dict[Ref, ObjectID], dict[Ref, ObjectID], list[Damaged]]:
    """Read ``packed-refs`` as git does, a damaged line kept apart.

    Args:
        data: the file's bytes.

    Returns:
        ``(ref -> sha, ref -> peeled sha, the damaged lines)``.
    """
    refs: dict[Ref, ObjectID] = {}
    peeled: dict[Ref, ObjectID] = {}
    damaged: list[Damaged] = []
    last: Ref | None = None
    for number, raw in enumerate(data.splitlines(), 1):
        line = raw.rstrip(b"\r")
        if line.startswith(b"#") or not line.strip():
            continue
        if line.startswith(b"^") and last is not None and valid_hexsha(line[1:]):
            peeled[last] = ObjectID(line[1:])
            last = None
            continue
        fields = line.split(b" ")
        if len(fields) == 2 and valid_hexsha(fields[0]) and check_ref_format(Ref(fields[1])):
            last = Ref(fields[1])
            refs[last] = ObjectID(fields[0])
        else:
            damaged.append(Damaged(number, line))
            last = None
    return refs, peeled, damaged


def damage(repo: str | os.PathLike) -> list[Damaged]:
    """Return the damaged lines of the ``packed-refs`` of ``repo`` (none when the file is missing or whole)."""
    try:
        data = Path(repo, PACKED_REFS).read_bytes()
    except (FileNotFoundError, NotADirectoryError):
        return []
    return parse(data)[2]


class SessionRefs(DiskRefsContainer):
    """dulwich's refs on disk, ``packed-refs`` read even when a line of it is damaged (see the module).

    Attributes:
        damaged: the damaged lines the last read of ``packed-refs`` found.
    """

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.damaged: list[Damaged] = []
        self._damaged_in: object = None  # the stamp of the file they are in

    def get_packed_refs(self) -> dict[Ref, ObjectID]:
        """Return the packed refs (dulwich's), those of the whole lines when a line is damaged."""
        try:
            refs = super().get_packed_refs()
        except PackedRefsException:
            with open(os.path.join(self.path, PACKED_REFS.encode()), "rb") as f:
                data = f.read()
                stamp = _packed_refs_key(os.fstat(f.fileno()))
            refs, peeled, self.damaged = parse(data)
            # dulwich's cache of the file, as its own read leaves it (dulwich 1.2's fields)
            self._packed_refs, self._peeled_refs, self._packed_refs_key = refs, peeled, stamp
            self._damaged_in = stamp
            return refs
        if self._packed_refs_key != self._damaged_in:  # another file than the damaged one read
            self.damaged = []
        return refs

    def refuse_rewrite(self, name: Ref | None = None) -> None:
        """Refuse a write that would rewrite a damaged ``packed-refs`` (removing ``name``, when it is packed).

        Raises:
            RepoDamaged: the file holds a damaged line (the first is named).
        """
        refs = self.get_packed_refs()
        if self.damaged and (name is None or name in refs):
            raise self.damaged[0].error(os.fsdecode(self.path))

    def _remove_packed_ref(self, name: Ref) -> None:
        self.refuse_rewrite(name)
        super()._remove_packed_ref(name)

    def add_packed_refs(self, new_refs: Any) -> None:
        """Add ``new_refs`` to ``packed-refs`` (dulwich's), refused when the file is damaged."""
        self.refuse_rewrite()
        super().add_packed_refs(new_refs)

    def pack_refs(self, all: bool = False) -> None:  # noqa: A002 - dulwich's name
        """Pack the refs (dulwich's), refused when ``packed-refs`` is damaged."""
        self.refuse_rewrite()
        super().pack_refs(all)


def set_aside(repo: Repo, keep: Path) -> list[Damaged]:
    """Move the damaged lines of ``packed-refs`` into ``keep`` and rewrite the file with the whole ones.

    Under the file's git lock: read again, the damaged lines written (fsynced) to ``keep``
    first, then the refs and peeled values of the other lines, as git writes them.

    Args:
        repo: the repository.
        keep: the file the lines go to (made; its folder too).

    Returns:
        The lines set aside (none: the file was whole, or missing).

    Raises:
        RepoBusy: another process holds ``packed-refs.lock`` (see :func:`.lock.wait_out`).
    """
    from .lock import wait_out

    path = os.path.join(repo.controldir(), PACKED_REFS)
    with wait_out(lambda: GitFile(path, "wb")) as f:
        try:
            data = Path(path).read_bytes()
        except FileNotFoundError:
            f.abort()
            return []
        refs, peeled, damaged = parse(data)
        if not damaged:
            f.abort()
            return []
        keep.parent.mkdir(parents=True, exist_ok=True)
        with open(keep, "wb") as kept:
            kept.write(b"".join(b"%d: %s\n" % (d.line, d.text) for d in damaged))
            kept.flush()
            os.fsync(kept.fileno())
        write_packed_refs(f, refs, peeled)
    if isinstance(repo.refs, DiskRefsContainer):
        repo.refs._invalidate_packed_refs_cache()
    return damaged
