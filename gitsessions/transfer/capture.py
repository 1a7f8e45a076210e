"""Capture: Claude Code's hooks and Codex's ``notify`` made to hand each finished turn to gs.

Claude Code runs the ``hooks`` of its ``settings.json`` with a JSON notice on stdin: gs adds a
``Stop`` hook (after each reply) and a ``SessionEnd`` hook (at exit), each a shell command that
runs ``gs capture run claude-code``. Codex runs the program its ``config.toml`` names in
``notify`` after each turn, with a JSON notice as the last argument: gs puts itself there and
keeps the program that was there by chaining it (its words after ``--`` in gs's own, run after
the import, put back by a removal).

Both files are the user's: each is read whole and refused, untouched, when it is not what it
should be; only gs's own entries change; the file is written atomically (through a symlink, to
its target, with its mode), and not at all when nothing changed. gs's entry is told by its
words ``capture run TOOL``, whichever gs (path, repo) wrote it. Nothing here reads the
environment: the face passes the paths and gs's command.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import json
import os
import re
import shlex
import stat
import tempfile
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomlkit
import tomlkit.exceptions

from ..errors import SettingsError, TransferError
from ..text import iso_time
from .readers import claude_code, codex

#: The tools gs captures, by the names ``gs import --from`` knows them.
TOOLS = (claude_code.TOOL, codex.TOOL)
#: Claude Code's events gs hooks: after each reply, and at the session's end.
CLAUDE_EVENTS = ("Stop", "SessionEnd")
#: The time limit gs's hook entries give Claude Code, seconds: without one it stops a
#: ``SessionEnd`` hook after 1.5 s, too short for a Python start and an import on a busy machine.
HOOK_TIMEOUT_S = 30
#: What a Codex thread id looks like (it names a file: no path, no glob).
_THREAD_ID = re.compile(r"[0-9A-Za-z][0-9A-Za-z_-]{0,127}")
#: The largest notice read from a hook's stdin, bytes (Claude Code's is a few hundred).
MAX_NOTICE = 1 << 20


def run_words(tool: str) -> list[str]:
    """The words of gs's command line a tool runs (after gs itself and its global options)."""
    return ["capture", "run", tool]


def _after_run_words(words: Sequence[str], tool: str) -> int | None:
    """The index after ``capture run TOOL`` in ``words``, or None when they are not there."""
    wanted = run_words(tool)
    for i in range(len(words) - len(wanted) + 1):
        if list(words[i:i + len(wanted)]) == wanted:
            return i + len(wanted)
    return None


def recorded_repo(command: str | Sequence[str]) -> str | None:
    """The session repo a gs command (a shell command, or its words) names with ``--repo PATH``, else None."""
    words = _shell_words(command) if isinstance(command, str) else command
    for i, word in enumerate(words):
        if word == "--repo" and i + 1 < len(words):
            return words[i + 1]
        if word.startswith("--repo="):
            return word.removeprefix("--repo=")
    return None


@dataclass(frozen=True)
class Change:
    """What an install or a removal did to a settings file.

    Attributes:
        path: the file.
        changed: whether it was written.
        before: gs's commands that were there and are no more (another gs's, or all of them
            on a removal).
        chained: Codex's ``notify`` program kept (an install chains it, a removal puts it
            back); None when there was none.
        deleted: a removal took away the file gs's install had made, which held nothing else.
    """

    path: Path
    changed: bool
    before: tuple[str, ...] = ()
    chained: tuple[str, ...] | None = None
    deleted: bool = False


#: A UTF-8 byte order mark: a file that begins with one is written back with it.
_BOM = "\ufeff"


def _replace(path: Path, text: str) -> None:
    """Write ``text`` over ``path`` atomically: Claude Code or Codex starting meanwhile reads the old file or the new.

    A symlink (settings kept with one's dotfiles) is written through, to its target; an
    existing file keeps its mode, a new one gets the private one of mkstemp.

    Raises:
        SettingsError: the file cannot be written (it is left as it was).
    """
    target = path.resolve() if path.is_symlink() else path
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        mode = stat.S_IMODE(target.stat().st_mode) if target.exists() else None
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".gs-tmp")
    except OSError as exc:
        raise SettingsError(str(path), f"it cannot be written ({exc.strerror or exc})", "check its folder") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise SettingsError(str(path), f"it cannot be written ({exc.strerror or exc})", "check its folder") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)  # never a half-written copy beside it
        raise


def _made(path: Path, there: bool) -> set[str]:
    """What writing a settings file makes: the file (``file``) unless it is ``there``, and its folder if missing."""
    return set() if there else {"file", *(() if path.parent.exists() else ("folder",))}


def _unmake(path: Path, folder: bool) -> None:
    """Take away a settings file gs's install made, and its folder when the install made that too and it is empty.

    Raises:
        SettingsError: the file cannot be removed.
    """
    try:
        path.unlink()
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise SettingsError(str(path), f"it cannot be removed ({exc.strerror or exc})", "check its folder") from None
    if folder:
        with contextlib.suppress(OSError):  # something else is in it now: it stays
            path.parent.rmdir()


def _read_text(path: Path) -> tuple[str | None, str]:
    """The file's text (None: there is no file) without its byte order mark, and that mark (``""``: none).

    Raises:
        SettingsError: it cannot be read, or is not UTF-8.
    """
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return None, ""
    except UnicodeDecodeError:
        raise SettingsError(str(path), "it is not UTF-8 text") from None
    except OSError as exc:
        raise SettingsError(str(path), f"it cannot be read ({exc.strerror or exc})") from None
    return (text[1:], _BOM) if text.startswith(_BOM) else (text, "")


class Made:
    """What gs's installs made in Claude Code's settings files, so that a removal takes that out and no more.

    JSON has no comments: a removal could not tell the ``"hooks": {}`` or the empty event
    list the user had from those gs's install made, nor a settings file the user made from
    one gs made. An install that finds no hook of gs's notes here, per file (by its absolute
    path), whether it made the file and its folder, the ``hooks`` object and which events'
    lists; never any of the file's content (it may hold secrets: its ``env``). The removal
    takes out what is noted and left empty, and forgets the file; one with no note takes
    out every container gs's hooks leave empty, as before there were notes.

    Args:
        path: the file of notes (``made.json`` in gs's capture state folder).
    """

    def __init__(self, path: Path):
        self.path = path

    def _all(self) -> dict[str, Any]:
        try:
            notes = json.loads(self.path.read_text("utf-8"))
        except (OSError, ValueError):  # none yet, or not gs's: nothing noted
            return {}
        return notes if isinstance(notes, dict) else {}

    def _save(self, notes: dict[str, Any]) -> None:
        _replace(self.path, json.dumps(notes, indent=2, ensure_ascii=False) + "\n")

    def get(self, settings: Path) -> set[str] | None:
        """What an install made in ``settings`` (None: nothing noted).

        Args:
            settings: the settings file.

        Returns:
            What it made (``file``, ``folder``, ``hooks``, ``hooks.<event>``), or None.
        """
        note = self._all().get(str(settings.resolve()))
        return set(note) if isinstance(note, list) and all(isinstance(n, str) for n in note) else None

    def put(self, settings: Path, made: Collection[str]) -> None:
        """Note what an install made in ``settings``.

        Args:
            settings: the settings file.
            made: what the install made there (as :meth:`get` returns it).

        Raises:
            SettingsError: the notes cannot be written.
        """
        notes = self._all()
        notes[str(settings.resolve())] = sorted(made)
        self._save(notes)

    def drop(self, settings: Path) -> None:
        """Forget ``settings`` (its capture was removed).

        Raises:
            SettingsError: the notes cannot be written.
        """
        notes = self._all()
        if notes.pop(str(settings.resolve()), None) is not None:
            self._save(notes)


# -- Claude Code: settings.json ---------------------------------------------------------------


def _shell_words(command: str) -> list[str]:
    try:
        return shlex.split(command)
    except ValueError:  # unbalanced quotes: not one gs wrote
        return command.split()


def _is_ours(hook: Any) -> bool:
    """True when ``hook`` (an entry of a matcher group's ``hooks``) runs ``gs capture run claude-code``."""
    return (isinstance(hook, dict) and hook.get("type") == "command" and isinstance(hook.get("command"), str)
            and _after_run_words(_shell_words(hook["command"]), claude_code.TOOL) is not None)


def _read_settings(path: Path) -> tuple[dict[str, Any], str | None, str]:
    """Claude Code's settings in ``path`` ({} for no file, or an empty one), the file's text and its byte order mark.

    Raises:
        SettingsError: it cannot be read, is not a JSON object, or its ``hooks`` (or an
            event of gs's there) is not of the kind Claude Code reads.
    """
    text, bom = _read_text(path)
    if text is None or not text.strip():
        return {}, text, bom
    try:
        settings = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SettingsError(str(path), f"it is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})",
                            "fix it (Claude Code cannot read it either), then run the command again") from None
    if not isinstance(settings, dict):
        raise SettingsError(str(path), "it holds no JSON object")
    hooks = settings.get("hooks")
    if hooks is not None and not isinstance(hooks, dict):
        raise SettingsError(str(path), '"hooks" is no JSON object')
    for event in CLAUDE_EVENTS:
        if not isinstance((hooks or {}).get(event, []), list):
            raise SettingsError(str(path), f'"hooks"."{event}" is no JSON array')
    return settings, text, bom


def _write_settings(path: Path, settings: dict[str, Any], bom: str) -> None:
    """Write Claude Code's settings as JSON indented by two (how Claude Code writes them), with the file's mark."""
    _replace(path, bom + json.dumps(settings, indent=2, ensure_ascii=False) + "\n")


def _ours_in(groups: list[Any]) -> list[tuple[dict, dict]]:
    """``(group, hook)`` for each of gs's hooks among an event's matcher groups."""
    return [(group, hook) for group in groups if isinstance(group, dict) and isinstance(group.get("hooks"), list)
            for hook in group["hooks"] if _is_ours(hook)]


def _drop(groups: list[Any], drop: list[tuple[dict, dict]]) -> None:
    """Take the hooks ``drop`` names out of ``groups``, and the groups that leaves without a hook."""
    for group, hook in drop:
        group["hooks"] = [h for h in group["hooks"] if h is not hook]  # by identity: a copy the user made stays
    emptied = {id(group) for group, _ in drop if not group["hooks"]}
    groups[:] = [g for g in groups if id(g) not in emptied]


def install_claude(path: Path, command: str, made: Made) -> Change:
    """Add gs's ``Stop`` and ``SessionEnd`` hooks, running ``command``, to Claude Code's settings in ``path``.

    Every other key and hook is kept as it is (the file is written back as JSON indented by
    two, with the byte order mark it began with). A hook of gs's already there (``capture
    run claude-code``, from any gs) is given ``command``; one more of them in the same event
    is taken out. Installing again changes nothing. An install into a file with no hook of
    gs's notes in ``made`` what it made there, for :func:`remove_claude`.

    Args:
        path: the settings file (made, with its folder, when missing).
        command: the shell command of the hooks.
        made: the notes of what installs made.

    Returns:
        What changed (``before``: the commands of another gs's hooks it replaced).

    Raises:
        SettingsError: the file cannot be read as Claude Code's settings, or it (or the
            notes) cannot be written.
    """
    settings, text, bom = _read_settings(path)
    original = copy.deepcopy(settings)
    had = settings.get("hooks")
    made_now = _made(path, text is not None) | ({"hooks"} if not isinstance(had, dict) else set()) | {
        f"hooks.{event}" for event in CLAUDE_EVENTS if event not in (had or {})}
    if settings.get("hooks") is None:
        settings["hooks"] = {}
    hooks = settings["hooks"]
    before: list[str] = []
    fresh = True  # no hook of gs's was there
    for event in CLAUDE_EVENTS:
        groups = hooks.setdefault(event, [])
        ours = _ours_in(groups)
        if not ours:
            groups.append({"matcher": "", "hooks": [{"type": "command", "command": command,
                                                      "timeout": HOOK_TIMEOUT_S}]})
            continue
        fresh = False
        first = ours[0][1]
        if first["command"] != command:
            before.append(first["command"])
            first["command"] = command
        _drop(groups, ours[1:])
    if settings == original:
        return Change(path, False)
    if fresh:
        made.put(path, made_now)
    _write_settings(path, settings, bom)
    return Change(path, True, tuple(dict.fromkeys(before)))


def remove_claude(path: Path, made: Made) -> Change:
    """Take gs's hooks out of Claude Code's settings in ``path``; everything else stays.

    What gs's install made there (as ``made`` notes it) and the removal leaves empty goes
    too: an event's list, the ``hooks`` object, the file itself (and its folder) when it
    holds nothing else. What was there before stays, empty or not. A file with no note
    loses each event's list (and ``hooks``) that only gs's hooks made empty.

    Args:
        path: the settings file.
        made: the notes of what installs made (the file's is forgotten).

    Returns:
        What changed (``before``: the commands taken out; ``deleted``: the file went).

    Raises:
        SettingsError: the file cannot be read as Claude Code's settings, or it (or the
            notes) cannot be written.
    """
    settings, _, bom = _read_settings(path)
    note = made.get(path)
    hooks = settings.get("hooks")
    removed: list[str] = []
    for event in CLAUDE_EVENTS:
        groups = (hooks or {}).get(event)
        ours = _ours_in(groups or [])
        if not ours or groups is None or hooks is None:
            continue
        removed += [hook["command"] for _, hook in ours]
        _drop(groups, ours)
        if not groups and (note is None or f"hooks.{event}" in note):
            del hooks[event]
    if not removed:
        return Change(path, False)
    if hooks == {} and (note is None or "hooks" in note):
        del settings["hooks"]
    deleted = note is not None and "file" in note and settings == {}
    if deleted:
        _unmake(path, "folder" in (note or ()))
    else:
        _write_settings(path, settings, bom)
    made.drop(path)
    return Change(path, True, tuple(dict.fromkeys(removed)), deleted=deleted)


def claude_hooks(path: Path) -> dict[str, list[str]]:
    """The hooks of gs's in Claude Code's settings in ``path``: event -> their commands (empty: none).

    Raises:
        SettingsError: the file cannot be read as Claude Code's settings.
    """
    hooks = _read_settings(path)[0].get("hooks") or {}
    found = {event: [hook["command"] for _, hook in _ours_in(hooks.get(event) or [])] for event in CLAUDE_EVENTS}
    return {event: commands for event, commands in found.items() if commands}


# -- Codex: config.toml -------------------------------------------------------------------------

#: How the line after gs's ``notify`` begins: what was there before it, for the removal to put back.
_KEPT = "# gs capture remove codex puts back what was here: "


@dataclass
class _Config:
    """Codex's ``config.toml`` as read: its text (None: no file), byte order mark, document and ``notify``."""

    text: str | None
    bom: str
    doc: tomlkit.TOMLDocument
    notify: list[str]

    def notify_span(self) -> tuple[int, int] | None:
        """Where the top-level ``notify`` item is in the text, whole lines (with its comment); None: none, or not found.

        Told by what tomlkit leaves when it takes the item out: the text less one run of
        whole lines.
        """
        if self.text is None or "notify" not in self.doc:
            return None
        less = tomlkit.parse(self.text)
        del less["notify"]
        rest = less.as_string()
        start = next((i for i, (a, b) in enumerate(zip(self.text, rest, strict=False)) if a != b), len(rest))
        start = self.text.rfind("\n", 0, start) + 1
        end = start + len(self.text) - len(rest)
        return (start, end) if self.text[:start] + self.text[end:] == rest else None

    def kept(self, end: int) -> tuple[dict[str, Any], int] | None:
        """The note gs's install left on the line from ``end`` (what was there before) and where that line ends."""
        assert self.text is not None
        if not self.text.startswith(_KEPT, end):
            return None
        stop = self.text.find("\n", end)
        stop = len(self.text) if stop < 0 else stop + 1
        try:
            note = json.loads(self.text[end + len(_KEPT):stop])
        except ValueError:
            return None
        return (note, stop) if isinstance(note, dict) else None


def _read_config(path: Path) -> _Config:
    """Codex's config in ``path`` as tomlkit keeps it (comments, layout and all), and its ``notify``.

    tomlkit both reads and writes it: one parser's reading of the file is the one changed.

    Returns:
        The config (an empty document for no file; ``notify`` empty: none).

    Raises:
        SettingsError: it cannot be read, is not TOML, or its ``notify`` is no list of strings.
    """
    text, bom = _read_text(path)
    try:
        doc = tomlkit.parse(text or "")
    except tomlkit.exceptions.ParseError as exc:
        raise SettingsError(str(path), f"it is not valid TOML ({exc})",
                            "fix it (Codex cannot read it either), then run the command again") from None
    notify = doc.unwrap().get("notify", [])
    if not isinstance(notify, list) or not all(isinstance(word, str) for word in notify):
        raise SettingsError(str(path), "its notify is no list of strings (a program and its arguments)")
    return _Config(text, bom, doc, notify)


def split_notify(notify: Sequence[str]) -> tuple[list[str], list[str]] | None:
    """A ``notify`` of gs's split into gs's command and the program it chains; None: not gs's.

    The one gs writes is ``[GS..., "capture", "run", "codex"]``, then ``"--"`` and the program that was
    there before, when there was one.
    """
    end = _after_run_words(notify, codex.TOOL)
    if end is None:
        return None
    rest = list(notify[end:])
    return list(notify[:end]), rest[1:] if rest[:1] == ["--"] else rest


def _first_setting(text: str) -> int:
    """Where a new top-level setting goes: the start of the first line that is no comment or blank.

    Any table of the file comes after it, so the setting is the file's own, not a table's;
    the file's opening comments stay first. A file of comments alone takes it at its end
    (at its start when its last line has no end).
    """
    at = 0
    for line in text.splitlines(keepends=True):
        if line.strip() and not line.lstrip().startswith("#"):
            return at
        at += len(line)
    return at if text.endswith("\n") or not text else 0


def install_codex(path: Path, command: Sequence[str]) -> Change:
    """Make ``command`` Codex's ``notify`` program in its config in ``path``, chaining the one there before.

    The previous program goes after ``--`` in gs's own (the runner runs it after each import).
    gs's ``notify`` takes the place of the one there (else it goes before the first setting),
    and the line after it keeps what was there, its text, comments and layout as they were
    (or that there was none), for :func:`remove_codex`. A ``notify`` of gs's already there
    (from any gs) keeps what it chained. Every other setting, comment and line stays as it is.

    Args:
        path: Codex's ``config.toml`` (made, with its folder, when missing).
        command: gs's command (program and arguments, up to ``capture run codex``).

    Returns:
        What changed (``chained``: the previous program kept; ``before``: another gs's command replaced).

    Raises:
        SettingsError: the file cannot be read as Codex's config, or cannot be written.
    """
    config = _read_config(path)
    notify = config.notify
    ours = split_notify(notify)
    before: tuple[str, ...] = ()
    if ours is None:
        previous = notify
    else:
        previous = ours[1]
        if ours[0] != list(command):
            before = (shlex.join(ours[0]),)
    wanted = [*command, *(["--", *previous] if previous else [])]
    chained = tuple(previous) if previous else None
    if notify == wanted:
        return Change(path, False, chained=chained)
    text = config.text or ""
    item = f"notify = {tomlkit.item(wanted).as_string()}\n"
    span = config.notify_span()
    if span is None and "notify" in config.doc:  # (not found in the text: tomlkit puts it where it was)
        config.doc["notify"] = wanted
        new = config.doc.as_string()
    elif ours is not None:  # gs's again: the note after it stays
        assert span is not None
        new = text[:span[0]] + item + text[span[1]:]
    else:
        start, end = span or (_first_setting(text),) * 2
        note = {"was": text[start:end] if span else None, "made": sorted(_made(path, config.text is not None))}
        new = text[:start] + item + _KEPT + json.dumps(note, ensure_ascii=False) + "\n" + text[end:]
    _replace(path, config.bom + new)
    return Change(path, True, before, chained)


def _restored(config: _Config, previous: list[str]) -> tuple[str, dict[str, Any]] | None:
    """The config's text as it was before gs's install, from the note it left (None: no note that fits).

    The note fits when what it keeps is the program gs's ``notify`` chains now (none: none).
    """
    span = config.notify_span()
    kept = config.kept(span[1]) if span is not None else None
    if span is None or kept is None or config.text is None:
        return None
    note, stop = kept
    was = note.get("was")
    if was is None and not previous:
        return config.text[:span[0]] + config.text[stop:], note
    if not isinstance(was, str):
        return None
    try:
        fits = tomlkit.parse(was).unwrap().get("notify") == previous
    except tomlkit.exceptions.ParseError:
        return None
    return (config.text[:span[0]] + was + config.text[stop:], note) if fits else None


def remove_codex(path: Path) -> Change:
    """Take gs's ``notify`` out of Codex's config in ``path``, putting back what was there before it.

    The ``notify`` gs's install replaced comes back as it was, text, comments and layout, and
    a config that had none has none (a config the install made, holding nothing else, goes).
    When the note the install left is gone, or does not fit what gs's ``notify`` chains now,
    the program it chains is put back as a plain ``notify``, and none when it chains none.

    Returns:
        What changed (``before``: gs's command taken out; ``chained``: the program put back;
        ``deleted``: the file went).

    Raises:
        SettingsError: the file cannot be read as Codex's config, or cannot be written.
    """
    config = _read_config(path)
    ours = split_notify(config.notify)
    if ours is None:
        return Change(path, False)
    command, previous = ours
    restored = _restored(config, previous)
    said = Change(path, True, (shlex.join(command),), tuple(previous) or None)
    if restored is not None:
        text, note = restored
        made = note["made"] if isinstance(note.get("made"), list) else []
        if "file" in made and not text:
            _unmake(path, "folder" in made)
            return dataclasses.replace(said, deleted=True)
    else:
        if previous:
            config.doc["notify"] = previous
        else:
            del config.doc["notify"]
        text = config.doc.as_string()
    _replace(path, config.bom + text)
    return said


def codex_notify(path: Path) -> tuple[list[str], list[str]] | None:
    """The ``notify`` of gs's in Codex's config in ``path``: ``(gs's command, what it chains)``; None: not gs's.

    Raises:
        SettingsError: the file cannot be read as Codex's config.
    """
    return split_notify(_read_config(path).notify)


# -- the notices -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Notice:
    """What a tool told gs when it ran it: which event, and the files of the conversation.

    Attributes:
        event: Claude Code's hook event (``Stop``, ``SessionEnd``) or Codex's notice type.
        files: the files to import, the session's before its sub-agents'.
    """

    event: str
    files: list[Path]


def _notice_object(raw: str | bytes, what: str) -> dict[str, Any]:
    try:
        data = json.loads(raw)
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise TransferError(what, "it is no JSON object")
    return data


def _event(value: Any) -> str:
    """An event's name fit for a log line: one word."""
    return re.sub(r"\s+", "-", value.strip())[:64] if isinstance(value, str) and value.strip() else "-"


def claude_notice(raw: bytes) -> Notice:
    """The transcript a Claude Code hook's JSON notice names, and its sub-agents' files.

    Args:
        raw: what the hook read on stdin (``session_id``, ``transcript_path``, ``cwd``,
            ``hook_event_name``).

    Returns:
        The event and the files: the transcript, then ``<session>/subagents/*.jsonl`` beside it.

    Raises:
        TransferError: it is no JSON object, or names no transcript.
    """
    data = _notice_object(raw, "Claude Code's hook notice")
    transcript = data.get("transcript_path")
    if not isinstance(transcript, str) or not transcript:
        raise TransferError("Claude Code's hook notice", "it names no transcript_path")
    path = Path(transcript)
    agents = sorted((path.parent / path.stem / "subagents").glob("*.jsonl"))
    return Notice(_event(data.get("hook_event_name")), [path, *agents])


def codex_notice(raw: str, sessions: Path) -> Notice:
    """The rollout of the thread a Codex ``notify`` notice names.

    Args:
        raw: the notice (``type``, ``thread-id``, ``turn-id``, ``cwd``, ...): Codex's last argument.
        sessions: where Codex keeps its rollouts (:func:`~.readers.codex.sessions_dir`).

    Returns:
        The notice's type and the thread's rollout (no file for a notice of another type
        than ``agent-turn-complete``: nothing to capture).

    Raises:
        TransferError: it is no JSON object, its thread id is none, or no rollout has that id.
    """
    what = "Codex's notice"
    data = _notice_object(raw, what)
    event = _event(data.get("type"))
    if event != "agent-turn-complete":
        return Notice(event, [])
    thread = data.get("thread-id")
    if not isinstance(thread, str) or not _THREAD_ID.fullmatch(thread):
        raise TransferError(what, "its thread-id is missing or no thread id")
    found = sorted(sessions.glob(f"**/rollout-*-{thread}.jsonl"))
    if not found:
        raise TransferError(f"Codex thread {thread}", f"no rollout-*-{thread}.jsonl under {sessions}",
                            "nothing was written; is CODEX_HOME the same for gs as for Codex?")
    return Notice(event, found)


# -- the log -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """One capture run, as its line in the log says it.

    Attributes:
        time: when it ended (ISO 8601).
        event: what the tool ran it for (``Stop``, ``agent-turn-complete``).
        failed: whether it failed.
        said: what it did (``captured ...``, ``nothing new ...``) or why it failed.
    """

    time: str
    event: str
    failed: bool
    said: str


class CaptureLog:
    """The runs of one tool's capture, a line each: no one reads a hook's output, so gs writes here.

    Args:
        folder: the folder of the logs (in gs's state folder).
        tool: the tool (its log is ``<tool>.log``).
    """

    #: Past this size the log keeps its newer half, bytes.
    LIMIT = 256 * 1024

    def __init__(self, folder: Path, tool: str):
        self.path = folder / f"{tool}.log"

    def append(self, event: str, said: str, *, failed: bool, now: float | None = None) -> None:
        """Add one run's line (one ``O_APPEND`` write, whole across processes).

        Raises:
            OSError: the log cannot be written.
        """
        text = " ".join(said.split())  # one line
        line = f"{iso_time(int(time.time() if now is None else now))} {_event(event)} " \
               f"{'failed' if failed else 'ok'}: {text}\n"
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        try:
            os.write(fd, line.encode("utf-8", "replace"))
            size = os.fstat(fd).st_size
        finally:
            os.close(fd)
        if size > self.LIMIT:
            self._halve()

    def _halve(self) -> None:
        # a line another run appends meanwhile may be lost: a log, not a record
        data = self.path.read_bytes()
        keep = data[len(data) // 2:]
        keep = keep[keep.find(b"\n") + 1:]
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        with os.fdopen(fd, "wb") as f:
            f.write(keep)
        os.replace(tmp, self.path)

    def runs(self) -> list[Run]:
        """The runs the log holds, oldest first (empty when there is no log)."""
        try:
            text = self.path.read_text("utf-8", "replace")
        except OSError:
            return []
        out = []
        for line in text.splitlines():
            parts = line.split(" ", 2)
            if len(parts) == 3 and ": " in parts[2]:
                status, said = parts[2].split(": ", 1)
                out.append(Run(parts[0], parts[1], status == "failed", said))
        return out
