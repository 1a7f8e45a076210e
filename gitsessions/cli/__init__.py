"""The ``gs`` command line (typer). Library errors become one-line messages here, once."""

from __future__ import annotations

import gc
import os
import sys
from pathlib import Path
from typing import Annotated

import typer

from .. import __version__
from ..errors import GitSessionsError
from . import admin, chat, history, hooks, lifecycle, remote, transfer
from .common import Context, err

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


for sub in (chat.app, history.app, lifecycle.app, remote.app, admin.app, transfer.app):
    for command in sub.registered_commands:
        app.registered_commands.append(command)
    app.registered_groups.extend(sub.registered_groups)
app.add_typer(hooks.app, name="hooks")  # a group: gs hooks install / gs hooks list


def main() -> None:
    """Entry point of ``gs`` / ``gitsessions``: run the app, translate errors to one line."""
    # Most commands live well under a second and make little cyclic garbage, while the
    # cyclic collector costs ~10% of importing the model SDK; `gs chat` turns it back on.
    gc.disable()
    debug = "--debug" in sys.argv or bool(os.environ.get("GS_DEBUG"))
    try:
        app()
    except GitSessionsError as exc:
        err(f"gs: {exc}")
        sys.exit(exc.exit_code)
    except KeyboardInterrupt:
        err("gs: interrupted")
        sys.exit(130)
    except BrokenPipeError:
        # The reader went away (gs log | head): not an error.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)
    except Exception as exc:  # last resort: never show a user a traceback unasked
        if debug:
            raise
        err(f"gs: unexpected error: {exc.__class__.__name__}: {exc} (run with --debug for details)")
        sys.exit(2)
