"""The file tools: read, list and search files; write and edit them with a diff and a backup.

Every path the model names is resolved in a :class:`Workspace` (the working directory, plus
the folders the user allowed): ``..``, an absolute path or a symbolic link that leads out of
it is refused, so a tool never reads or writes elsewhere. Nothing here asks the user: which
call may run is :mod:`.toolset`'s rule, the loop's callback asks.
"""

from __future__ import annotations

import difflib
import os
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from . import ignore

if TYPE_CHECKING:
    from ...log.calls import ToolResult

#: Most characters of a file ``read_file`` returns; the rest is cut, and the model told so.
READ_CHARS = 100_000
#: Most entries ``list_files`` returns.
LIST_ENTRIES = 1_000
#: Most matching lines ``search_files`` returns.
SEARCH_MATCHES = 200
#: Longest line ``search_files`` shows, characters (a minified file is one long line).
SEARCH_LINE_CHARS = 300
#: Files bigger than this are not searched, bytes.
SEARCH_FILE_BYTES = 2_000_000
#: The first bytes looked at to call a file binary (a NUL byte in them).
_SNIFF_BYTES = 8_192


class ToolFailed(Exception):
    """A tool call that cannot be carried out; its message is what the model is told."""


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


def _text_of(path: Path, strict: bool = False) -> str:
    """A file's text (UTF-8; undecodable bytes become U+FFFD, unless ``strict``).

    Args:
        path: the file.
        strict: a file that is not UTF-8 is refused (a write would put U+FFFD in the place
            of every byte it could not read).

    Raises:
        ToolFailed: no such file, a folder, unreadable, binary, or (``strict``) not UTF-8.
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise ToolFailed(f"no file {path.name} there") from None
    except IsADirectoryError:
        raise ToolFailed(f"{path.name} is a folder: list_files lists it") from None
    except OSError as exc:
        raise ToolFailed(f"cannot read {path.name}: {exc.strerror or exc}") from None
    if b"\0" in data[:_SNIFF_BYTES]:
        raise ToolFailed(f"{path.name} is a binary file; only text files can be read")
    try:
        return data.decode("utf-8", errors="strict" if strict else "replace")
    except UnicodeDecodeError:
        raise ToolFailed(f"{path.name} is not UTF-8 text; only UTF-8 files are written over") from None


def read_file(ws: Workspace, path: str, offset: int = 1, limit: int | None = None) -> str:
    """Return a text file's lines from line ``offset`` (1-based), at most ``limit`` of them.

    Raises:
        ToolFailed: see :func:`_text_of` and :meth:`Workspace.resolve`.
    """
    text = _text_of(ws.resolve(path))
    if offset != 1 or limit is not None:
        lines = text.splitlines(keepends=True)
        start = max(1, int(offset)) - 1
        text = "".join(lines[start:start + int(limit)] if limit is not None else lines[start:])
    if len(text) > READ_CHARS:
        return text[:READ_CHARS] + "\n[cut: the file goes on; read on with offset and limit]"
    return text


def list_files(ws: Workspace, path: str = ".", recursive: bool = False) -> str:
    """Return the entries of a folder, one a line (folders end with ``/``), honouring ``.gitignore``.

    Raises:
        ToolFailed: the folder does not exist or is outside the workspace.
    """
    folder = ws.resolve(path)
    if not folder.is_dir():
        raise ToolFailed(f"{path} is not a folder")
    lines: list[str] = []
    for entry, is_dir in _walk(ws, folder):
        if not recursive and entry.parent != folder:
            continue
        lines.append(entry.relative_to(folder).as_posix() + ("/" if is_dir else ""))
        if len(lines) == LIST_ENTRIES:
            lines.append(f"[cut at {LIST_ENTRIES} entries]")
            break
    return "\n".join(lines) if lines else "(empty folder)"


def _walk(ws: Workspace, start: Path) -> Iterator[tuple[Path, bool]]:
    """What is below ``start`` and not ignored (.gitignore rules from the root; in an allowed folder, its own)."""
    root = ws.root.resolve()
    return ignore.walk(root if start == root or root in start.parents else start, start)


def search_files(ws: Workspace, pattern: str, path: str = ".", ignore_case: bool = False) -> str:
    """Return the lines matching a regular expression in the text files under ``path`` (``file:line: text``).

    Files ``.gitignore`` ignores, binary files and files over :data:`SEARCH_FILE_BYTES` are skipped.

    Raises:
        ToolFailed: a bad regular expression, or a path outside the workspace.
    """
    try:
        rx = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    except (re.error, TypeError) as exc:
        raise ToolFailed(f"not a valid regular expression: {exc}") from None
    start = ws.resolve(path)
    files = [start] if start.is_file() else [p for p, is_dir in _walk(ws, start) if not is_dir]
    out: list[str] = []
    for file in files:
        try:
            if file.is_symlink() or file.stat().st_size > SEARCH_FILE_BYTES:
                continue
            text = _text_of(file)
        except (OSError, ToolFailed):
            continue
        for number, line in enumerate(text.splitlines(), 1):
            if rx.search(line):
                out.append(f"{ws.shown(file)}:{number}: {line[:SEARCH_LINE_CHARS]}")
                if len(out) == SEARCH_MATCHES:
                    return "\n".join([*out, f"[cut at {SEARCH_MATCHES} matches: narrow the pattern or the path]"])
    return "\n".join(out) if out else "no match"


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
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(change.path.read_bytes())
    except OSError as exc:
        raise ToolFailed(f"nothing written: the backup of {change.shown} failed ({exc.strerror or exc})") from None
    return str(target)
