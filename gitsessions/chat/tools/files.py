"""The file tools: read, list and search files; write and edit them with a diff and a backup.

Every path the model names is resolved in a :class:`Workspace` (the working directory, plus
the folders the user allowed): ``..``, an absolute path or a symbolic link that leads out of
it is refused, so a tool never reads or writes elsewhere. Nothing here asks the user: which
call may run is :mod:`.toolset`'s rule, the loop's callback asks.

Every input is bounded, and what a bound left out is said in the result: only regular files
are read (a named pipe, a device or a socket could keep a read waiting forever), read a part
at a time, never whole (``read_file`` reads what it returns, ``search_files`` a line at a
time, each line within :data:`SEARCH_LINE_BYTES`); a walk goes :data:`WALK_DEPTH` levels
deep at most; a read, list or search stops after :data:`FILE_TOOL_SECONDS`.
"""

from __future__ import annotations

import codecs
import difflib
import os
import re
import stat
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from ...text import plural
from . import ignore

if TYPE_CHECKING:
    from ...log.calls import ToolResult

#: Most characters of a file ``read_file`` returns; the rest is cut, and the model told where to read on.
READ_CHARS = 100_000
#: Most entries ``list_files`` returns.
LIST_ENTRIES = 1_000
#: The deepest level ``list_files`` (recursive) and ``search_files`` walk; a folder there is named, not entered.
WALK_DEPTH = 20
#: Most matching lines ``search_files`` returns.
SEARCH_MATCHES = 200
#: Longest line ``search_files`` shows, characters (a minified file is one long line).
SEARCH_LINE_CHARS = 300
#: The start of a line ``search_files`` matches, bytes; the rest of a longer line is not searched.
SEARCH_LINE_BYTES = 8_192
#: Files bigger than this are not searched, bytes.
SEARCH_FILE_BYTES = 2_000_000
#: Most files ``search_files`` reads.
SEARCH_FILES = 10_000
#: The biggest file ``write_file`` and ``edit_file`` write over, bytes (its old text is read whole, for the diff).
EDIT_FILE_BYTES = 10_000_000
#: Seconds a read, a list or a search may take; it returns what it found by then, and says so.
FILE_TOOL_SECONDS = 10.0
#: Most names a note of what was left out gives; the rest are counted.
NAMED = 5
#: The first bytes looked at to call a file binary (a NUL byte in them).
_SNIFF_BYTES = 8_192
#: Bytes read at a time: a line's piece (``read_file``), and a block when lines are skipped.
_PIECE = 1 << 16
_BLOCK = 1 << 20
#: What a file that is not a regular one is: (is it, its short name, its name in a refusal).
_KINDS = ((stat.S_ISFIFO, "a named pipe", "a named pipe (FIFO)"), (stat.S_ISSOCK, "a socket", "a socket"),
          (stat.S_ISCHR, "a character device", "a character device"),
          (stat.S_ISBLK, "a block device", "a block device"))


class ToolFailed(Exception):
    """A tool call that cannot be carried out; its message is what the model is told."""


class NotAFile(ToolFailed):
    """A path that names no regular file (a named pipe, a socket, a device), refused before it is read.

    Attributes:
        kind: what it is instead (``a named pipe``).
    """

    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


class ToolInterrupted(KeyboardInterrupt):
    """Ctrl+C stopped a tool while it ran; its message is what the model is told it did by then.

    It is a :class:`KeyboardInterrupt`: the reply is cancelled as by any Ctrl+C.

    Attributes:
        result: the call's result, once :meth:`.toolset.Toolset.run` made it (None before).
    """

    result: ToolResult | None = None


@dataclass(frozen=True)
class Workspace:
    """Where the file tools may reach, and where an overwritten file's backup goes.

    Args:
        root: the working directory (relative paths are relative to it).
        allowed: more folders the user allowed (config ``permissions: {paths: [...]}``).
        backups: the folder backups are written under (None: next to the file, as ``NAME.~N~``).
    """

    root: Path
    allowed: tuple[Path, ...] = ()
    backups: Path | None = None

    def resolve(self, path: str) -> Path:
        """The real path ``path`` names, refused when it leads outside the workspace.

        Raises:
            ToolFailed: the path is empty, or it (or a link on its way) leads outside.
        """
        if not isinstance(path, str) or not path.strip():
            raise ToolFailed("a path is needed")
        root = self.root.resolve()
        target = (root / Path(path).expanduser()).resolve()
        for folder in (root, *(p.expanduser().resolve() for p in self.allowed)):
            if target == folder or folder in target.parents:
                return target
        raise ToolFailed(f"{path} is outside the working directory {root}; only paths inside it (or in "
                         "permissions.paths of the config) may be used")

    def shown(self, path: Path) -> str:
        """``path`` as the model and the user see it: relative to the root when inside it."""
        root = self.root.resolve()
        return path.relative_to(root).as_posix() if path == root or root in path.parents else str(path)


def _kind(mode: int) -> tuple[str, str] | None:
    """What a file of ``mode`` is when it is no regular file or folder: (short name, name in a refusal)."""
    for test, short, named in _KINDS:
        if test(mode):
            return short, named
    return None if stat.S_ISREG(mode) or stat.S_ISDIR(mode) else ("not a regular file", "not a regular file")


def _refuse(path: Path, mode: int) -> None:
    if stat.S_ISDIR(mode):
        raise ToolFailed(f"{path.name} is a folder: list_files lists it")
    kind = _kind(mode)
    if kind is not None:
        raise NotAFile(f"{path.name} is {kind[1]}, not a regular file; the file tools read regular files only",
                       kind[0])


def _opened(path: Path) -> BinaryIO:
    """Open a regular file to read it, never waiting: a pipe, a socket or a device is refused.

    The path is looked at before it is opened (a device is never opened), opened without
    waiting for a writer (``O_NONBLOCK``), and what was opened is looked at again: a file
    swapped for a pipe meanwhile is refused too.

    Raises:
        ToolFailed: no such file, a folder, unreadable.
        NotAFile: a named pipe, a socket, a device.
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        _refuse(path, os.stat(path).st_mode)
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise ToolFailed(f"no file {path.name} there") from None
    except OSError as exc:
        raise ToolFailed(f"cannot read {path.name}: {exc.strerror or exc}") from None
    try:
        _refuse(path, os.fstat(fd).st_mode)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _binary(f: BinaryIO) -> bool:
    """True when the file's first bytes hold a NUL; the file is read from its start again after."""
    binary = b"\0" in f.read(_SNIFF_BYTES)
    f.seek(0)
    return binary


def _text_of(path: Path, strict: bool = False) -> str:
    """A file's whole text, for a write (UTF-8; undecodable bytes become U+FFFD, unless ``strict``).

    Args:
        path: the file.
        strict: a file that is not UTF-8 is refused (a write would put U+FFFD in the place
            of every byte it could not read).

    Raises:
        ToolFailed: no such file, a folder, not a regular file, unreadable, binary, over
            :data:`EDIT_FILE_BYTES`, or (``strict``) not UTF-8.
    """
    with _opened(path) as f:
        data = f.read(EDIT_FILE_BYTES + 1)
    if len(data) > EDIT_FILE_BYTES:
        raise ToolFailed(f"{path.name} is over {EDIT_FILE_BYTES:,} bytes, the most write_file and edit_file "
                         "write over (its old text is read whole for the diff)")
    if b"\0" in data[:_SNIFF_BYTES]:
        raise ToolFailed(f"{path.name} is a binary file; only text files can be read")
    try:
        return data.decode("utf-8", errors="strict" if strict else "replace")
    except UnicodeDecodeError:
        raise ToolFailed(f"{path.name} is not UTF-8 text; only UTF-8 files are written over") from None


class _Clock:
    """The time a read, list or search may still take (:data:`FILE_TOOL_SECONDS`)."""

    def __init__(self) -> None:
        self.seconds = FILE_TOOL_SECONDS
        self._end = time.monotonic() + self.seconds

    def up(self) -> bool:
        """True once the time is up."""
        return time.monotonic() >= self._end


def _from_one(value: object, name: str, unit: str) -> int:
    """``value`` as a whole number from 1 (a JSON number, or its digits as a string)."""
    number: object = value
    if isinstance(value, str) and value.strip().isdigit():
        number = int(value)
    if isinstance(number, float) and number.is_integer():
        number = int(number)
    if isinstance(number, bool) or not isinstance(number, int) or number < 1:
        raise ToolFailed(f"{name} must be {unit} from 1, not {value!r}")
    return number


def read_file(ws: Workspace, path: str, offset: object = 1, limit: object = None) -> str:
    """Return a text file's lines from line ``offset`` (1-based), at most ``limit`` of them.

    Only what is returned is read (and the lines before ``offset`` counted, a block at a
    time). At most :data:`READ_CHARS` characters come back, cut after a whole line, with a
    note saying which ``offset`` reads on (a line longer than that alone: its start, and a
    note saying the rest is not shown).

    Args:
        ws: where the path is resolved.
        path: the file.
        offset: the first line returned, from 1.
        limit: most lines returned (None: as many as fit).

    Returns:
        The lines as they are in the file (line ends kept), and the note of a cut.

    Raises:
        ToolFailed: a bad offset or limit, an offset past the end, a file that is not there,
            not a regular file (:class:`NotAFile`), binary, or unreadable, a path outside
            the workspace, or :data:`FILE_TOOL_SECONDS` spent before ``offset`` was reached.
    """
    first = _from_one(offset, "offset", "a line number")
    most = None if limit is None else _from_one(limit, "limit", "a number of lines")
    target = ws.resolve(path)
    clock = _Clock()
    with _opened(target) as f:
        if _binary(f):
            raise ToolFailed(f"{target.name} is a binary file; only text files can be read")
        lines = _skip(f, first - 1, clock)
        if lines < first - 1:
            if clock.up():
                raise ToolFailed(f"line {first} of {target.name} was not reached in {clock.seconds:g} s "
                                 f"(it read up to line {lines + 1}); read nearer its start")
            raise ToolFailed(f"{target.name} has {plural(lines, 'line')}; offset {first} is past its end")
        text, more = _lines(f, first, most)
    if not text and first > 1:
        raise ToolFailed(f"{target.name} has {plural(first - 1, 'line')}; offset {first} is past its end")
    return text + more


def _skip(f: BinaryIO, lines: int, clock: _Clock) -> int:
    """Move past the first ``lines`` lines of ``f``; return how many there were (fewer: the end, or the time, came)."""
    done, last = 0, b""
    while done < lines and not clock.up():
        block = f.read(_BLOCK)
        if not block:
            return done + (last not in (b"", b"\n"))  # a last line without its line end counts
        ends = block.count(b"\n")
        if done + ends >= lines:
            at = -1
            for _ in range(lines - done):
                at = block.index(b"\n", at + 1)
            f.seek(at + 1 - len(block), os.SEEK_CUR)
            return lines
        done, last = done + ends, block[-1:]
    return done


def _lines(f: BinaryIO, first: int, most: int | None) -> tuple[str, str]:
    """Read lines from where ``f`` is (line ``first``): the text, and the note of a cut ("" when none)."""
    decode = codecs.getincrementaldecoder("utf-8")("replace").decode
    parts: list[str] = []
    chars = line_chars = 0  # of the lines whole so far; of the line being read
    number, line_starts = first, 0  # the line being read, and its first part
    while most is None or number < first + most:
        piece = f.readline(_PIECE)
        text = decode(piece, final=not piece)
        if chars + line_chars + len(text) > READ_CHARS:
            if number > first:  # cut after the last whole line
                return "".join(parts[:line_starts]), (f"[cut at {READ_CHARS:,} characters, after line {number - 1:,}: "
                                                      f"read on with offset={number}]")
            return "".join(parts) + text[:READ_CHARS - line_chars], (
                f"\n[line {number:,} goes on past {READ_CHARS:,} characters; the rest of it is not shown]")
        parts.append(text)
        line_chars += len(text)
        if not piece:
            break
        if piece.endswith(b"\n"):
            number, chars, line_chars, line_starts = number + 1, chars + line_chars, 0, len(parts)
    return "".join(parts), ""


def list_files(ws: Workspace, path: str = ".", recursive: bool = False) -> str:
    """Return the entries of a folder, one a line (folders end with ``/``), honouring ``.gitignore``.

    Recursive, it goes :data:`WALK_DEPTH` levels deep; at most :data:`LIST_ENTRIES` entries
    and :data:`FILE_TOOL_SECONDS` seconds. A note at the end says what a bound left out.

    Args:
        ws: where the path is resolved.
        path: the folder.
        recursive: what its folders hold too.

    Raises:
        ToolFailed: the folder does not exist or is outside the workspace.
    """
    folder = ws.resolve(path)
    if not folder.is_dir():
        raise ToolFailed(f"{path} is not a folder")
    depth = WALK_DEPTH if recursive else 1
    clock = _Clock()
    lines: list[str] = []
    deep: list[str] = []
    cut = ""
    walk = _walk(ws, folder, depth)
    for entry, is_dir in walk:
        name = entry.relative_to(folder).as_posix() + ("/" if is_dir else "")
        lines.append(name)
        if recursive and is_dir and name.count("/") == depth:
            deep.append(name)
        if len(lines) == LIST_ENTRIES:
            if next(walk, None) is not None:
                cut = f"[cut at {LIST_ENTRIES:,} entries: more are not listed; list a subfolder]"
            break
        if clock.up():
            cut = f"[stopped after {clock.seconds:g} s: the list may go on; list a subfolder]"
            break
    notes = [cut] if cut else []
    if deep:
        notes.append(_not_entered(deep, depth, "list " + ("it" if len(deep) == 1 else "one") + " to see inside"))
    return "\n".join(lines + notes) if lines else "(empty folder)"


def _not_entered(folders: list[str], depth: int, then: str) -> str:
    return f"[not entered: {plural(len(folders), 'folder')} at depth {depth} ({_names(folders)}); {then}]"


def _names(names: list[str]) -> str:
    more = f" and {len(names) - NAMED} more" if len(names) > NAMED else ""
    return ", ".join(names[:NAMED]) + more


def _walk(ws: Workspace, start: Path, depth: int) -> Iterator[tuple[Path, bool]]:
    """What is below ``start`` and not ignored (.gitignore rules from the root; in an allowed folder, its own)."""
    root = ws.root.resolve()
    return ignore.walk(root if start == root or root in start.parents else start, start, depth)


def search_files(ws: Workspace, pattern: str, path: str = ".", ignore_case: bool = False) -> str:
    """Return the lines matching a regular expression in the text files under ``path`` (``file:line: text``).

    Files are read a line at a time; a line is matched on its first :data:`SEARCH_LINE_BYTES`
    and shown on its first :data:`SEARCH_LINE_CHARS` characters. Files ``.gitignore`` ignores,
    binary files and symbolic links are skipped; files over :data:`SEARCH_FILE_BYTES` and
    what is not a regular file are skipped and named. The walk goes :data:`WALK_DEPTH`
    levels deep, reads at most :data:`SEARCH_FILES` files and stops after
    :data:`SEARCH_MATCHES` matches or :data:`FILE_TOOL_SECONDS`. A note at the end says what
    a bound left out.

    Args:
        ws: where the path is resolved.
        pattern: a Python regular expression.
        path: the folder searched, or one file.
        ignore_case: match regardless of case.

    Raises:
        ToolFailed: a bad regular expression, a path outside the workspace, or a path
            that names no folder and no text file that can be read.
    """
    try:
        rx = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except (re.error, TypeError) as exc:
        raise ToolFailed(f"not a valid regular expression: {exc}") from None
    start = ws.resolve(path)
    search = _Search(ws, rx)
    if not start.is_dir():
        with _opened(start) as f:  # a path named is refused as read_file refuses it
            search.file(start, f)
        return search.result()
    for file, is_dir in _walk(ws, start, WALK_DEPTH):
        if is_dir:
            if len(file.relative_to(start).parts) == WALK_DEPTH:
                search.deep.append(ws.shown(file) + "/")
        elif not file.is_symlink():
            search.open(file)
        if search.stopped:
            break
    return search.result()


@dataclass
class _Search:
    """One search under way: the matches and what its bounds left out."""

    ws: Workspace
    rx: re.Pattern[str]
    found: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    deep: list[str] = field(default_factory=list)
    long_lines: int = 0
    long_in: list[str] = field(default_factory=list)
    files: int = 0
    stopped: str = ""
    clock: _Clock = field(default_factory=_Clock)

    def open(self, file: Path) -> None:
        """Search one file of the walk; one that cannot be searched is named (a binary one skipped)."""
        if self._out_of_time():
            return
        if self.files == SEARCH_FILES:
            self.stopped = f"[stopped after {SEARCH_FILES:,} files: narrow the path]"
            return
        try:
            f = _opened(file)
        except NotAFile as exc:
            self.skipped.append(f"{self.ws.shown(file)} ({exc.kind})")
            return
        except ToolFailed:
            self.skipped.append(f"{self.ws.shown(file)} (unreadable)")
            return
        with f:
            if os.fstat(f.fileno()).st_size > SEARCH_FILE_BYTES:
                self.skipped.append(f"{self.ws.shown(file)} (over {SEARCH_FILE_BYTES:,} bytes)")
                return
            self.file(file, f)

    def file(self, file: Path, f: BinaryIO) -> None:
        """Search the open ``f`` a line at a time (at most :data:`SEARCH_FILE_BYTES` of it)."""
        self.files += 1
        if _binary(f):
            return
        shown, number, read = self.ws.shown(file), 0, 0
        while read < SEARCH_FILE_BYTES:
            piece = f.readline(SEARCH_LINE_BYTES)
            if not piece:
                return
            number += 1
            read += len(piece)
            if not piece.endswith(b"\n") and len(piece) == SEARCH_LINE_BYTES:
                self.long_lines += 1
                if shown not in self.long_in[-1:]:
                    self.long_in.append(shown)
                read += _rest_of_line(f)
            line = piece.decode("utf-8", "replace").rstrip("\r\n")
            if self.rx.search(line):
                self.found.append(f"{shown}:{number}: {line[:SEARCH_LINE_CHARS]}")
                if len(self.found) == SEARCH_MATCHES:
                    self.stopped = f"[cut at {SEARCH_MATCHES} matches: narrow the pattern or the path]"
                    return
            if number % 1024 == 0 and self._out_of_time():
                return
        if f.read(1):
            self.skipped.append(f"{shown} (after its first {SEARCH_FILE_BYTES:,} bytes)")

    def _out_of_time(self) -> bool:
        if self.clock.up():
            self.stopped = (f"[stopped after {self.clock.seconds:g} s, {plural(self.files, 'file')} searched: "
                            "narrow the path or the pattern]")
        return bool(self.stopped)

    def result(self) -> str:
        """The matches (or ``no match``), then a note a line for each bound that left something out."""
        notes = [self.stopped] if self.stopped else []
        if self.skipped:
            notes.append(f"[not searched: {_names(self.skipped)}]")
        if self.long_lines:
            notes.append(f"[only the first {SEARCH_LINE_BYTES:,} bytes of {plural(self.long_lines, 'long line')} "
                         f"were searched (in {_names(self.long_in)})]")
        if self.deep:
            notes.append(_not_entered(self.deep, WALK_DEPTH, "search in " + ("it" if len(self.deep) == 1 else "one")))
        return "\n".join((self.found or ["no match"]) + notes)


def _rest_of_line(f: BinaryIO) -> int:
    """Move past the rest of a long line; return its bytes."""
    skipped = 0
    while True:
        piece = f.readline(_PIECE)
        skipped += len(piece)
        if not piece or piece.endswith(b"\n") or skipped > SEARCH_FILE_BYTES:
            return skipped


@dataclass(frozen=True)
class Change:
    """A write the model asked for, worked out before anything is written.

    Attributes:
        path: the file.
        shown: its name as shown (relative to the working directory).
        old: its text now (None: it does not exist).
        new: its text after the write.
    """

    path: Path
    shown: str
    old: str | None
    new: str

    def diff(self) -> str:
        """The change as a unified diff (what the user approves)."""
        old = [] if self.old is None else self.old.splitlines(keepends=True)
        lines = difflib.unified_diff(old, self.new.splitlines(keepends=True),
                                     "/dev/null" if self.old is None else f"a/{self.shown}", f"b/{self.shown}")
        text = "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines)
        return text or f"(no change to {self.shown})\n"


def write_change(ws: Workspace, path: str, content: str) -> Change:
    """The :class:`Change` of writing ``content`` as the whole of ``path`` (nothing written yet).

    Raises:
        ToolFailed: the path is outside the workspace, a folder, or a binary file.
    """
    target = ws.resolve(path)
    if target.is_dir():
        raise ToolFailed(f"{path} is a folder")
    old = _text_of(target, strict=True) if target.exists() else None
    return Change(target, ws.shown(target), old, str(content))


def edit_change(ws: Workspace, path: str, old_string: str, new_string: str, replace_all: bool = False) -> Change:
    """The :class:`Change` of replacing ``old_string`` by ``new_string`` in ``path`` (exactly; nothing written yet).

    Raises:
        ToolFailed: no such file; ``old_string`` empty, absent, or found more than once
            without ``replace_all``.
    """
    target = ws.resolve(path)
    text = _text_of(target, strict=True)
    if not old_string:
        raise ToolFailed("old_string is empty; give the exact text to replace (write_file writes a whole file)")
    count = text.count(old_string)
    if count == 0:
        raise ToolFailed(f"old_string is not in {path} (it must match exactly, spaces and line ends too); "
                         "read_file shows the text")
    if count > 1 and not replace_all:
        raise ToolFailed(f"old_string is in {path} {count} times; give more context to make it unique, "
                         "or set replace_all")
    return Change(target, ws.shown(target), text, text.replace(old_string, new_string))


def apply(ws: Workspace, change: Change) -> str:
    """Write ``change``, after a backup of what it overwrites; return what the model is told.

    The file is written whole next to itself and renamed over it, so a crash leaves the old
    text or the new one, never half of each.

    Raises:
        ToolFailed: the file changed since the change was worked out, or it or its backup
            cannot be written.
    """
    now = _text_of(change.path, strict=True) if change.path.exists() else None
    if now != change.old:  # what was approved is the diff against the text then
        raise ToolFailed(f"nothing written: {change.shown} changed since the diff was made; read it again")
    note = ""
    if change.old is not None:
        backup = _backup(ws, change)
        note = f"; the old text is kept in {backup}"
    try:
        change.path.parent.mkdir(parents=True, exist_ok=True)
        part = change.path.with_name(f".{change.path.name}.gs-{os.getpid()}")
        part.write_text(change.new, "utf-8", newline="")
        if change.path.exists():
            os.chmod(part, change.path.stat().st_mode & 0o7777)
        os.replace(part, change.path)
    except OSError as exc:
        raise ToolFailed(f"cannot write {change.shown}: {exc.strerror or exc}") from None
    lines = change.new.count("\n") + (not change.new.endswith("\n") and bool(change.new))
    verb = "created" if change.old is None else "wrote"
    return f"{verb} {change.shown} ({lines} lines){note}"


def _backup(ws: Workspace, change: Change) -> str:
    """Copy the file's present bytes aside; return where (shown as the user would find it)."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    if ws.backups is not None:
        target = ws.backups / stamp / change.shown.lstrip("/")
        n = 1
        while target.exists():
            target = ws.backups / f"{stamp}-{n}" / change.shown.lstrip("/")
            n += 1
    else:
        n = 1
        while (target := change.path.with_name(f"{change.path.name}.~{n}~")).exists():
            n += 1
    try:
        with _opened(change.path) as old:  # a regular file still: a pipe swapped in would keep it waiting
            data = old.read(EDIT_FILE_BYTES + 1)
        if len(data) > EDIT_FILE_BYTES:
            raise ToolFailed(f"it grew past {EDIT_FILE_BYTES:,} bytes")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    except ToolFailed as exc:
        raise ToolFailed(f"nothing written: the backup of {change.shown} failed ({exc})") from None
    except OSError as exc:
        raise ToolFailed(f"nothing written: the backup of {change.shown} failed ({exc.strerror or exc})") from None
    return str(target)
