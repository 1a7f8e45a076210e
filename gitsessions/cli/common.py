"""What every command shares: settings from the environment, the store, the identity, output.

This is the only layer that reads ``os.environ`` (lower layers take what they need as
arguments).
"""

from __future__ import annotations

import functools
import gc
import os
import shutil
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from ..config import Config, default_repo_path, key_file_exposed, load_config
from ..errors import RepoError, SessionLocked
from ..store import privacy
from ..store.lock import LockWait
from .background import take_failures
from .display.output import Output, is_terminal
from .help import Command

if TYPE_CHECKING:  # the backend (and dulwich) is imported when a store is opened: the chat does it behind its prompt
    from ..secrets.redact import Redactor  # (and the redactor when it is built: its detectors compile their shapes)
    from ..store import GitStore

def collect_cycles() -> None:
    """Turn the cyclic garbage collector back on, for a command that lives long or makes much.

    :func:`gitsessions.cli.main` turns it off for start-up (it costs ~10% of importing the
    model SDK, and most commands end within a second). A chat, an import or a watch would
    then never free what their cycles hold: an import of a 150 MiB ChatGPT export peaked at
    306 MiB, twice the file, where one conversation at a time is held.
    """
    gc.enable()


#: How long a bare ``--wait`` waits for another writer of the session (seconds).
DEFAULT_WAIT_S = 60.0

#: ``--wait[=SECONDS]`` of the commands that write a session.
WaitOption = Annotated[float, typer.Option(
    "--wait", metavar="[=SECONDS]", min=0, show_default=False,
    help=f"If another gs is writing the session, wait for it (up to {DEFAULT_WAIT_S:g} s, or SECONDS) "
         "instead of giving up at once.")]


#: ``--json`` of the commands that say what they did: one object on stdout instead of lines on stderr.
JsonOption = Annotated[bool, typer.Option(
    "--json", help="Say what was done as one JSON object on stdout (stable keys), not in lines on stderr.")]


class WaitCommand(Command):
    """A command with :data:`WaitOption`, whose value comes only after ``=`` (git's way).

    click would take the word after a bare ``--wait`` as its value (``gs chat --wait work``
    would wait "work" seconds); here a bare ``--wait`` means :data:`DEFAULT_WAIT_S`.
    """

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:  # ctx: the click context typer makes
        """Read a bare ``--wait`` (before any ``--``) as ``--wait=DEFAULT_WAIT_S``, then parse."""
        end = args.index("--") if "--" in args else len(args)
        args = [f"--wait={DEFAULT_WAIT_S:g}" if a == "--wait" else a for a in args[:end]] + args[end:]
        return super().parse_args(ctx, args)


@dataclass
class Context:
    """Global options of one ``gs`` invocation (set by the app callback)."""

    repo: Path | None = None
    debug: bool = False
    #: How output looks: colour, the pager (``--no-color``, ``--no-pager``).
    output: Output = field(default_factory=Output)
    _config: Config | None = None
    _redactor: Redactor | None = None
    #: Warnings for the user collected during this run (a failed post-commit hook, a turn
    #: recovered into a new session); printed when the command ends.
    warnings: list[str] = field(default_factory=list)
    #: The password a remote's URL on the command line held (sent as the HTTP password, never shown).
    url_password: str | None = None
    _privacy_checked: bool = False
    #: Set by ``gs doctor``, which reports these itself (what others can read, damage), rather than warn of them.
    quiet_checks: bool = False
    #: Files killed writers left half done that opening the store removed (``gs gc`` and ``gs doctor`` say them).
    cleared: list[str] = field(default_factory=list)

    @property
    def config(self) -> Config:
        """The merged configuration, read once."""
        if self._config is None:
            self._config = load_config(os.environ)
            if key_file_exposed(self._config) and not self.quiet_checks:
                err(f"warning: {self._config.path} holds an API key and other accounts can read it; "
                    f"fix with: chmod 600 {self._config.path}")
        return self._config

    def repo_path(self) -> Path:
        """The session repo: ``--repo``, ``$GS_REPO``, config ``repo:``, else the platform dir."""
        if self.repo is not None:
            return self.repo.expanduser()
        return self.config.repo or default_repo_path()

    def identity(self) -> str:
        """Commit identity: config ``author``, else git's ``user.name``/``user.email``, else gs's."""
        cfg = self.config
        if cfg.author_name and cfg.author_email:
            return f"{cfg.author_name} <{cfg.author_email}>"
        try:
            from dulwich.config import StackedConfig

            stack = StackedConfig.default()
            name = stack.get((b"user",), b"name").decode("utf-8", "replace")
            email = stack.get((b"user",), b"email").decode("utf-8", "replace")
            if name and email:
                return f"{name} <{email}>"
        except (KeyError, OSError, ValueError):
            pass
        from ..store.git import DEFAULT_IDENTITY

        return DEFAULT_IDENTITY

    def redactor(self) -> Redactor:
        """The secret redactor for this run; see :mod:`gitsessions.secrets.redact`.

        With ``redact: false`` it is ``NO_REDACTION``, which replaces nothing. Everything that
        lets text into a session takes it (a chat, an import, the recovery of a journal), so
        every command that opens the store builds it.
        """
        if not self.config.redact:
            from ..secrets.redact import NO_REDACTION

            return NO_REDACTION
        if self._redactor is None:
            from ..secrets.redact import from_environment

            self._redactor = from_environment(os.environ, self.config.redact_patterns, detector_cache=detector_cache(),
                                              config_secrets={"api_key": self.config.api_key})
        return self._redactor

    def store(self) -> GitStore:
        """Open the session store (the repo itself is created on first write).

        Raises:
            RepoError: the repo path is a file, a folder holding something else, or another
                account's (see :meth:`store_path`).
        """
        return self.open_store(self.store_path())

    def store_path(self) -> Path:
        """The session repo, checked as :meth:`store` checks it before opening it.

        The config is read (a bad redact pattern refused), the umask set from the repo's
        sharing, and a repo others can read warned of (once a run). The redactor is built by
        :meth:`open_store`, before anything is written. The chat does this before its first prompt,
        since it may print, and opens the store (:meth:`open_store`) behind the prompt.

        Raises:
            ConfigError: the config cannot be read (a redact pattern is not a valid regular expression).
            RepoError: the repo belongs to another account that is not trusted.
        """
        path = self.repo_path()
        self._keep_private(path)
        return path

    def open_store(self, path: Path) -> GitStore:
        """Open the store at ``path`` (from :meth:`store_path`); prints nothing, so it may run in a thread.

        What gs processes killed while writing there left half done is mended first
        (``GitStore.heal``): files removed (kept in :attr:`cleared`), a move of a session ended
        (a warning each).

        Raises:
            RepoError: the repo path is a file or a folder holding something else.
        """
        from ..store.git import GitStore
        from ..store.hooks import CommitHooks

        self.redactor()  # built (or refused) before a session is read or written
        hooks = CommitHooks(path, os.environ, self.warnings)
        store = GitStore(path, identity=self.identity(), hooks=hooks)
        from ..secrets.redact import refuse_secret_id

        # a new session id is a ref name, pushed: none that looks like a secret
        store.new_id_rule = functools.partial(refuse_secret_id, self.redactor())
        store.check_path()
        self.warnings.extend(take_failures(path))  # what a background push after a save could not do
        healed = store.heal()  # what a gs killed while writing here left half done
        self.cleared += healed.cleared
        from .display import render

        self.warnings.extend(render.move_ended(move) for move in healed.moves)
        if (damaged := store.damaged_refs()) and not self.quiet_checks:
            self.warnings.append(render.damaged_refs(str(path), damaged))
        return store

    def _keep_private(self, path: Path) -> None:
        """Give new files what the repo's sharing allows; once a run, warn when others can read it.

        The umask :func:`gitsessions.cli.run` set is private; a repo shared with git's
        ``core.sharedRepository`` widens it as git would (:mod:`gitsessions.store.privacy`).
        """
        owner = privacy.foreign_owner(path)
        if owner is not None and not self._trusted(path):
            raise RepoError(str(path), f"it belongs to another account ({owner}), and gs writes there and runs its "
                            "hooks as you (git calls this dubious ownership); use a repo of your own, or, if you "
                            f"trust it, say so as for git: git config --global --add safe.directory {path}")
        perm = privacy.sharing(path)
        os.umask(privacy.umask_for(perm))
        if self._privacy_checked or self.quiet_checks:
            return
        self._privacy_checked = True
        if privacy.exposed(path, perm, walk=False).paths:
            err(f"warning: other accounts on this machine can read the session repo {path}; "
                f"fix with: {privacy.fix_advice(path, perm)}")

    @staticmethod
    def _trusted(path: Path) -> bool:
        """True when git's ``safe.directory`` (in the user's git config) names ``path``, or is ``*``."""
        from dulwich.config import StackedConfig

        try:
            values = [v.decode("utf-8", "replace") for v in StackedConfig.default().get_multivar(
                (b"safe",), b"directory")]
        except (KeyError, OSError, ValueError):
            return False
        return "*" in values or any(Path(v).expanduser().resolve() == path.resolve() for v in values)

    def lock_wait(self, seconds: float) -> LockWait:
        """How a write waits ``seconds`` for another writer, saying so on stderr when it does."""

        def notify(session_id: str, holder: str) -> None:
            err(f"gs: {SessionLocked.said(session_id, holder)}; waiting up to {seconds:g} s")

        return LockWait(seconds, notify)

    def take_warnings(self) -> list[str]:
        """Return the warnings collected so far and forget them."""
        out = list(self.warnings)
        self.warnings.clear()  # the same list the hook runners append to
        return out

    def print_warnings(self) -> None:
        """Print the warnings this run collected on stderr."""
        for warning in self.take_warnings():
            err(f"gs: warning: {warning}")


def detector_cache() -> Path:
    """The file that keeps what redaction reads of detect-secrets (see :mod:`gitsessions.secrets.detector_cache`).

    In the platform's user cache dir: it derives from the installed library, so every
    session repo shares it, and a read-only repo is never written for it.
    """
    from ..places import default_cache_dir

    return default_cache_dir() / "detectors.json"


def err(message: str) -> None:
    """Print a one-line message for the user on stderr.

    On a terminal a line longer than it is wide is wrapped at word boundaries (ids, paths and
    URLs are never broken; the lines after the first are indented), as the terminal itself
    would break it mid-word; elsewhere (a pipe, a log) each message stays one line.
    """
    if len(message) > 60 and is_terminal(sys.stderr):
        message = wrapped(message, shutil.get_terminal_size().columns - 1)
    print(message, file=sys.stderr, flush=True)


def wrapped(message: str, width: int) -> str:
    """``message`` with each of its lines wrapped at ``width`` at word boundaries, later lines indented by two."""
    import textwrap

    return "\n".join(textwrap.fill(line, max(width, 20), subsequent_indent="  ", break_long_words=False,
                                    break_on_hyphens=False) if len(line) > width else line
                      for line in message.split("\n"))


def write_lines(lines: Iterable[str]) -> None:
    """Print ``lines`` on stdout, each ended by a newline, control characters shown (render.terminal_safe)."""
    from .display.render import terminal_safe

    sys.stdout.write(terminal_safe("".join(line + "\n" for line in lines)))
    sys.stdout.flush()


def short(commit: str | None) -> str:
    """Return the 7-digit abbreviation git uses by default."""
    return (commit or "")[:7]
