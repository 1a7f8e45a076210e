r"""The local paths a tool writes into its own text, left out of an import unless they are kept.

Another tool tells its model where it runs: Codex's injected context names the working
directory, the workspace and writable roots and its skills' folder; Claude Code's compaction
summary names the transcript's own file under the user's home. Those paths are this
machine's (a user name, a project's folder), and a pushed session should not carry them:
each reader passes the text the tool wrote itself (never a prompt, a reply or a tool's
result) through :meth:`LocalPaths.out_of`, which replaces them with :data:`LOCAL_PATH`
unless the user asked to keep them (``gs import --keep-paths``).

What is replaced, in this order:

- each working directory the lines read so far named, wherever the text holds it (longest
  first: a folder inside another), what follows it kept (a file of the project is the
  project's: ``[…]/src``);
- the home folder such a directory lies in (``/home/<name>``, ``/Users/<name>``,
  ``C:\Users\<name>``), with the rest of the path it begins (spaces in the home's name
  included);
- an element holding an absolute path (``<cwd>/home/me/proj</cwd>``, a ``<root>``), each
  path of a plain-text ``Writable roots:`` line, a backquoted absolute path (spaces
  included), and any other absolute path of two folders or more.

A file system's root and a one-folder path (``/``, ``/tmp``, a slash command such as
``/compact``) name nothing of the machine and are left as they are outside an element.
What the text becomes depends on the lines before it alone, so that the next import of a
file that grew finds each commit as it wrote it.
"""

from __future__ import annotations

import re

#: What stands for a local path left out (``--keep-paths`` keeps it).
LOCAL_PATH = "[a local path: kept with --keep-paths]"
#: How an absolute path begins: POSIX, home-relative or a Windows drive.
_ABSOLUTE = r"(?:/|~/|[A-Za-z]:[\\/])"
#: An element holding an absolute path (its text whole: a path may hold spaces).
_PATH_ELEMENT = re.compile(rf"(<([\w-]+)>)\s*{_ABSOLUTE}[^<\n]*(</\2>)")
#: The older plain-text context's list of writable roots (``Writable roots: /a, /b``).
_ROOTS_LINE = re.compile(r"(?m)^(\s*Writable roots:[ \t]*)(.*)$")
#: One absolute path of that list (up to the next comma).
_ROOT = re.compile(rf"{_ABSOLUTE}[^,\n]*")
#: One folder's name in a path outside quotes (no space: the path ends at one).
_SEG = r"[^\s/\\`'\"<>()\[\]{}|,;*]+"
#: An absolute path of two folders or more (or on a drive), not inside a URL or a word, less
#: the punctuation of the sentence it ends.
_BARE = re.compile(rf"(?<![\w.:/\\~\]-])(?:/{_SEG}(?:/{_SEG})+|[A-Za-z]:[\\/]{_SEG}(?:[\\/]{_SEG})*)/?(?<![.:;!?])")
#: A backquoted absolute path of two folders or more (or on a drive), spaces allowed.
_QUOTED = re.compile(r"`((?:/[^/`\n]+){2,}/?|[A-Za-z]:[\\/][^`\n]+)`")
#: The home folder a path lies in.
_HOME = re.compile(r"(?:/home/|/Users/|[A-Za-z]:[\\/]Users[\\/])[^\\/\n]+")
#: What may continue a path: what follows a known path up to a space or a quote.
_REST = r"(?:[\\/][^\s`'\"<>]*)?"
#: Where a known path may end in a text: a separator, a space, a quote or punctuation (not inside a longer name).
_END = r"(?![^\s\\/`'\"<>\])},;:.!?])"


class LocalPaths:
    """The working directories a tool's lines name, and the text it wrote without them.

    Args:
        keep: keep every path (``--keep-paths``): :meth:`out_of` changes nothing.
    """

    def __init__(self, keep: bool = False) -> None:
        self.keep = keep
        self.named: set[str] = set()

    def name(self, path: object) -> None:
        """Note a working directory the tool's lines name (a ``cwd`` field); anything but a path is passed over.

        Args:
            path: the field's value (a file system's root names nothing of the machine).
        """
        if isinstance(path, str) and re.fullmatch(r"\s*(?:[A-Za-z]:)?[\\/]*\s*", path) is None:
            self.named.add(path)

    def out_of(self, text: str) -> str:
        """Return the tool's ``text`` with its local paths replaced by :data:`LOCAL_PATH` (see the module).

        Args:
            text: what the tool wrote itself (its injected context, a compaction summary, a note).

        Returns:
            The text, unchanged when the paths are kept.
        """
        if self.keep:
            return text
        for path in sorted(self.named, key=len, reverse=True):
            text = re.sub(rf"(?<![\w.-]){re.escape(path)}{_END}", LOCAL_PATH, text)
        homes = {m.group() for p in self.named if (m := _HOME.match(p))}
        for home in sorted(homes, key=len, reverse=True):
            text = re.sub(rf"(?<![\w.-]){re.escape(home)}{_END}{_REST}", LOCAL_PATH, text)
        text = _ROOTS_LINE.sub(lambda m: m.group(1) + _ROOT.sub(LOCAL_PATH, m.group(2)), text)
        text = _PATH_ELEMENT.sub(lambda m: f"{m.group(1)}{LOCAL_PATH}{m.group(3)}", text)
        text = _QUOTED.sub(f"`{LOCAL_PATH}`", text)
        return _BARE.sub(LOCAL_PATH, text)
