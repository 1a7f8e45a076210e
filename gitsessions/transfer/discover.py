"""Where other tools keep their conversations on this machine (``gs import --from TOOL`` without a file).

Each source names its files through its format module's ``default_paths(env, home)``: the
tool's own environment variable first (``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``,
``LLM_USER_PATH``), else its default folder under ``home``; a source that reads a folder
named instead (``gs import --from claude-code FOLDER``) lists it in the same order. Nothing
here reads the environment: the face passes it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from .readers import claude_code, codex, llm_db

#: ``default_paths(env, home)`` of a source: its files, in the order they are to be imported.
Finder = Callable[[Mapping[str, str], Path], list[Path]]


@dataclass(frozen=True)
class Source:
    """A tool whose conversations gs can find by itself.

    Attributes:
        name: what ``--from`` names (also the format its files are read as).
        label: how the user knows it (``Claude Code``).
        what: what one of its files is called in messages (``transcript``).
        where: the folder it looks in, for messages (``env, home -> path``).
        find: its files (``default_paths``).
        variable: the environment variable that moves it.
        in_folder: the files a folder of its holds, in the order ``find`` gives them (None:
            it reads no folder named on the command line).
    """

    name: str
    label: str
    what: str
    where: Callable[[Mapping[str, str], Path], Path]
    find: Finder
    variable: str
    in_folder: Callable[[Path], list[Path]] | None = None


#: The sources, by ``--from`` name (the format modules add theirs here).
SOURCES: dict[str, Source] = {
    claude_code.TOOL: Source(claude_code.TOOL, "Claude Code", "transcript", claude_code.projects_dir,
                             claude_code.default_paths, "CLAUDE_CONFIG_DIR", claude_code.folder_paths),
    codex.TOOL: Source(codex.TOOL, "Codex", "rollout", codex.sessions_dir, codex.default_paths, "CODEX_HOME"),
    llm_db.TOOL: Source(llm_db.TOOL, "llm", "logs database", llm_db.user_dir, llm_db.default_paths, "LLM_USER_PATH"),
}


def source(name: str) -> Source | None:
    """The source ``--from NAME`` names, or None when that format has no default location."""
    return SOURCES.get(name)


def discover(name: str, env: Mapping[str, str], home: Path) -> tuple[Path, list[Path]]:
    """The folder a source keeps its files in and the files found there.

    Args:
        name: a key of :data:`SOURCES`.
        env: the environment.
        home: the user's home directory.

    Returns:
        ``(folder, files)``; ``files`` is empty when the folder is missing or holds none.

    Raises:
        KeyError: ``name`` is no source.
    """
    src = SOURCES[name]
    return src.where(env, home), src.find(env, home)


def in_folder(name: str, folder: Path) -> list[Path] | None:
    """The files of the source ``name`` that ``folder`` holds, in the order they are to be imported.

    Args:
        name: a format name (``--from``).
        folder: a folder named on the command line.

    Returns:
        The files (maybe none), or None when that format reads no folder.
    """
    src = SOURCES.get(name)
    return None if src is None or src.in_folder is None else src.in_folder(folder)


def folders(env: Mapping[str, str], home: Path) -> dict[str, Path]:
    """Where each source keeps its files, by ``--from`` name (whether there or not).

    A file of a tool may need another one of the same tool (a Codex fork, its origin's):
    when it is not beside the file, it is looked for there.

    Args:
        env: the environment.
        home: the user's home directory.
    """
    return {name: src.where(env, home) for name, src in SOURCES.items()}
