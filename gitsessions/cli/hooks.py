"""``gs hooks``: install the hooks gitsessions ships into the session repo, and list its hooks.

gs runs the session repo's ``pre-commit``, ``commit-msg`` and ``post-commit`` hooks around
every save, with git's meaning (see :mod:`gitsessions.store.hooks`).
"""

from __future__ import annotations

from typing import Annotated

import typer

from ..secrets.detectors import hook_patterns
from ..store.hook_install import backup_remote, hook_status, install_hooks, shipped_hooks
from ..text import dumps
from .common import Context, detector_cache, err
from .help import Group

app = typer.Typer(
    cls=Group,
    help="""Git hooks of the session repo: gs runs pre-commit, commit-msg and post-commit around
    every save (only executable ones; chmod -x disables a hook).

    Examples:
        gs hooks list
        gs hooks install
    """,
    no_args_is_help=True,
)


@app.command()
def install(
    ctx: typer.Context,
    names: Annotated[list[str] | None, typer.Argument(
        help="Hooks to install (default: all that gitsessions ships).", show_default=False,
        metavar="NAME")] = None,
    force: Annotated[bool, typer.Option(
        "--force", "-f", help="Replace a hook that differs (yours is kept as NAME.orig).")] = False,
) -> None:
    """Copy the hooks gitsessions ships into the session repo and make them executable.

    pre-commit refuses a save whose new events hold something shaped like a credential;
    post-commit pushes every save to a backup remote in the background. An existing hook
    that differs is left alone unless --force. Each script's header says how to configure it.

    Examples:
        gs hooks install                    # every hook gitsessions ships
        gs hooks install pre-commit --force
    """
    c: Context = ctx.obj
    available = list(shipped_hooks())
    unknown = [n for n in names or [] if n not in available]
    if unknown:
        raise typer.BadParameter(f"no shipped hook {', '.join(unknown)}; available: {', '.join(available)}",
                                 param_hint="NAMES")
    with c.store() as store:
        store.repo(create=True)
        repo_path = store.path
    for name, what, backup in install_hooks(repo_path, names, force=force,
                                           secret_patterns=hook_patterns(c.config.redact_patterns, detector_cache())):
        path = repo_path / "hooks" / name
        if what == "replaced":
            print(f"{name}: replaced {path} (the old one is now {backup})")
        elif what == "enabled":
            print(f"{name}: already installed; made executable again: {path}")
        elif what == "unchanged":
            print(f"{name}: already installed: {path}")
        else:
            print(f"{name}: installed {path}")
        if name == "post-commit":
            remote, url = backup_remote(repo_path)
            if url:
                print(f"  every save is pushed to remote {remote!r} ({url}) in the background")
            else:
                print(f"  it pushes every save to remote {remote!r}, which is not set up yet; add it with:\n"
                      f"    git -C {repo_path} remote add {remote} URL")


@app.command("list")
def list_(
    ctx: typer.Context,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON array, stable keys.")] = False,
) -> None:
    """Show the session repo's hooks: whether each runs, and whether it is the shipped version.

    Lists every hook file in <repo>/hooks (but *.sample) and the shipped hooks not installed.
    VERSION is 'shipped' (identical to gitsessions's), 'modified', or 'own' (not one it ships).

    Examples:
        gs hooks list
        gs hooks list --json
    """
    c: Context = ctx.obj
    repo_path = c.repo_path()
    rows = hook_status(repo_path)
    if as_json:
        print(dumps([{"name": r.name, "path": str(r.path), "installed": r.installed,
                             "executable": r.executable, "version": r.origin, "run_by_gs": r.run_by_gs}
                            for r in rows]))
        return
    print(f"hooks of {repo_path / 'hooks'}")
    width = max([len(r.name) for r in rows] + [4])
    print(f"{'HOOK':<{width}}  {'STATE':<22}  VERSION")
    for r in rows:
        if not r.installed:
            state, version = "not installed", "-"
        else:
            state = "active" if r.executable else "disabled (not +x)"
            if not r.run_by_gs:
                state = "not run by gs"
            version = r.origin or "-"
        print(f"{r.name:<{width}}  {state:<22}  {version}")
    if not any(r.installed for r in rows):
        err("no hooks installed; install the shipped ones with: gs hooks install")
