"""The ``gs`` command line (typer). Library errors become one-line messages here, once."""

from __future__ import annotations

import functools
import gc
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.main

from .. import __version__
from ..errors import GitSessionsError
from . import admin, background, chat, history, hooks, lifecycle, remote, share, transfer
from .common import Context, err

#: The exit status of an internal error (a bug), apart from typer's 2 for a usage error:
#: EX_SOFTWARE of sysexits(3). The others: 0 success, 1 a failure the user can act on
#: (:attr:`GitSessionsError.exit_code`), 2 a usage error, 130 interrupted.
EXIT_INTERNAL = 70

app = typer.Typer(
    name="gs",
    help="gitsessions: chat with any OpenAI-compatible model; every session is a git branch "
    "and every turn a commit. (Also installed as 'gitsessions', since 'gs' is Ghostscript on "
    "many systems.)",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        print(f"gitsessions {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    ctx: typer.Context,
    repo: Annotated[Path | None, typer.Option(
        "--repo", help="Session repo path (default: $GS_REPO, config, platform data dir).")] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of unexpected errors.")] = False,
    version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version.")] = False,
) -> None:
    ctx.obj = Context(repo=repo, debug=debug or bool(os.environ.get("GS_DEBUG")))
    ctx.call_on_close(ctx.obj.print_warnings)  # also when the command fails


for sub in (chat.app, history.app, lifecycle.app, remote.app, share.app, admin.app, transfer.app):
    for command in sub.registered_commands:
        app.registered_commands.append(command)
    app.registered_groups.extend(sub.registered_groups)
app.add_typer(hooks.app, name="hooks")  # a group: gs hooks install / gs hooks list


def run(args: Sequence[str] | None = None, *, prog_name: str | None = None) -> int:
    """Run one ``gs`` command in this process and translate its outcome to an exit status.

    The one place where library errors become a one-line message on stderr (design.md,
    "Faults"): :class:`GitSessionsError` -> its message and ``exit_code``, Ctrl+C -> 130, a
    closed stdout (``gs log | head``) -> 0, anything else -> :data:`EXIT_INTERNAL` with a
    hint to run with ``--debug`` (which re-raises it, traceback and all). The real entry
    point and the in-process tests both call this.

    Args:
        args: the command line after the program name (None: ``sys.argv[1:]``).
        prog_name: the program name shown in usage messages (None: as typed by the user).

    Returns:
        The exit status: 0 success, 1 a failure the user can act on, 2 a usage error,
        70 an unexpected (internal) error, 130 interrupted.

    Raises:
        Exception: an unexpected error, when ``--debug`` or ``$GS_DEBUG`` asks to see it.
    """
    log = background.started_in_background()  # a gs run after a save: its failure is kept
    status = _run(args, prog_name)
    background.finish(log, status)
    return status


def _run(args: Sequence[str] | None, prog_name: str | None) -> int:
    """:func:`run` without the record of a background run."""
    argv = list(sys.argv[1:] if args is None else args)
    debug = "--debug" in argv or bool(os.environ.get("GS_DEBUG"))
    try:
        # args=None lets click read sys.argv itself (on Windows it also expands globs there).
        _command()(args=None if args is None else argv, prog_name=prog_name)
    except SystemExit as exc:  # typer (click) always ends this way, with the status
        return _status(exc.code)
    except GitSessionsError as exc:
        err(f"gs: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        err("gs: interrupted")
        return 130
    except BrokenPipeError:
        # The reader went away (gs log | head): not an error. Point stdout at /dev/null so
        # that flushing it at exit does not fail again.
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):  # stdout is no file (captured in-process): nothing to flush
            pass
        return 0
    except Exception as exc:  # last resort: never show a user a traceback unasked
        if debug:
            raise
        err(f"gs: unexpected error: {exc.__class__.__name__}: {exc} (run with --debug for details)")
        return EXIT_INTERNAL
    return 0


@functools.cache
def _command() -> Callable[..., Any]:
    """The click command typer builds from ``app``, built once per process.

    Typer rebuilds it from every command's signature on each call of ``app()`` (tens of
    milliseconds); a process that runs several commands (the tests) builds it once.
    """
    return typer.main.get_command(app)


def _status(code: object) -> int:
    """The exit status ``sys.exit(code)`` would give: None 0, an int itself, else 1 (printed)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    err(str(code))
    return 1


def main() -> None:
    """Entry point of ``gs`` / ``gitsessions``: :func:`run` the command line, exit with its status."""
    # Most commands live well under a second and make little cyclic garbage, while the
    # cyclic collector costs ~10% of importing the model SDK; `gs chat` turns it back on.
    gc.disable()
    sys.exit(run())
