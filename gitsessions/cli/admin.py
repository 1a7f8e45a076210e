"""Repository upkeep: ``gs gc``, and starting an automatic repack in the background."""

from __future__ import annotations

from typing import Annotated

import typer

from ..store import GitStore
from .background import run_in_background
from .common import Context, err

__all__ = ["app", "pack_in_background", "run_in_background"]

app = typer.Typer()


@app.command()
def gc(
    ctx: typer.Context,
    auto: Annotated[bool, typer.Option("--auto", help="Only repack when enough saves piled up.")] = False,
) -> None:
    """Pack the session repo: one delta pack, bounded delta depth, reflogs kept.

    Runs by itself in the background after enough saves; this runs it now.

    Example: gs gc
    """
    c: Context = ctx.obj
    with c.store() as store:
        if auto and not store.pack_due():
            return
        result = store.gc(incremental=auto)
    if result is None:
        err("another gs process is packing the repo right now; nothing to do")
    elif not auto:
        print(f"packed {result.objects} objects ({result.deltas} deltas, depth ≤ {result.max_depth}) "
              f"into {result.pack_bytes} bytes in {result.seconds:.2f} s; removed "
              f"{result.loose_removed} loose objects and {result.packs_removed} old packs"
              + (f"; removed {result.tmp_removed} temporary packs a killed gc left" if result.tmp_removed else ""))


def pack_in_background(store: GitStore) -> None:
    """Start ``gs gc --auto`` in the background when a repack is due."""
    if store.pack_due():
        run_in_background(store.path, "gc", "--auto")
