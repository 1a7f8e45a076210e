"""``gs sync --watch`` and ``gs import --watch``: keep going as things change, until Ctrl+C.

``gs import --watch`` (:func:`watch_files`) imports again each file that changed.

``gs sync --watch`` keeps a machine that just mirrors in sync: a round is one ``gs sync``.
One runs at start, then whenever the sessions' refs here changed since the last round (a
save, a rename, an archive: seen by watching the repo folder with ``watchfiles``), and
every ``interval`` seconds for what changed on the remote.
A round that moved nothing and has nothing to report prints nothing (no line per interval);
one that fails says so in one line and the loop goes on; Ctrl+C ends it with exit 0.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import typer

from ..errors import GitSessionsError
from .common import Context, collect_cycles, err

#: Seconds between two rounds that look for remote changes, unless ``--interval`` says otherwise.
DEFAULT_INTERVAL_S = 60.0


def _session_refs(c: Context) -> dict[str, str | None]:
    """The tip of every live and archived session here: what a local change moves."""
    with c.store() as store:
        refs: dict[str, str | None] = {f"heads/{sid}": tip for sid, tip in store.tips().items()}  # one pass
        refs.update({f"archive/{name}": store.archive_ref(name) for name in store.archived_ids()})
    return refs


def _round(sync_once: Callable[[], None], retry_in: float) -> None:
    """Run one sync; a failure becomes one line (the round's own lines say what was refused)."""
    try:
        sync_once()
    except typer.Exit as exc:
        if exc.exit_code:
            err(f"gs: this round did not sync everything; next try in {retry_in:g} s or on the next save")
    except GitSessionsError as exc:
        err(f"gs: sync failed: {exc}; next try in {retry_in:g} s or on the next save")


def watch_sync(c: Context, where: str, sync_once: Callable[[], None], interval: float | None = None) -> None:
    """Sync with ``where`` at start, on every local change of a session ref and every ``interval`` s.

    Args:
        c: the command's context (its repo is the one watched).
        where: the remote's name or URL (for the messages).
        sync_once: one round: the ``gs sync`` command with its arguments, raising
            :class:`typer.Exit` (1) when something was refused.
        interval: seconds between rounds that look for remote changes (default
            :data:`DEFAULT_INTERVAL_S`).
    """
    import watchfiles

    interval = DEFAULT_INTERVAL_S if interval is None else interval
    collect_cycles()  # it runs until stopped
    with c.store() as store:
        store.repo(create=True)  # something to watch before the first save or pull
    path = c.repo_path()
    err(f"gs: syncing {path} with {where} on every change here and every {interval:g} s; Ctrl+C stops")
    try:
        # The refs are read before each round: a save made while it runs is not taken for
        # one the round sent, it starts the next round (a pull that moved refs costs one more).
        synced, due = _session_refs(c), time.monotonic() + interval
        _round(sync_once, interval)
        # No watch_filter: a filtered change does not come back from watch(), so a stream of
        # journal writes would keep its timeout from firing. Waking at least every second
        # keeps the interval whatever else is written meanwhile.
        for changes in watchfiles.watch(path, rust_timeout=int(min(interval, 1.0) * 1000),
                                        yield_on_timeout=True, debounce=200):
            is_due = time.monotonic() >= due
            if not changes and not is_due:
                continue
            now = _session_refs(c)
            if now != synced or is_due:
                synced, due = now, time.monotonic() + interval
                _round(sync_once, interval)
    except KeyboardInterrupt:
        err(f"gs: stopped syncing {path} with {where}")


def _stats(files: list[str]) -> dict[str, tuple[int, int]]:
    """Each file's modification time (ns) and size (bytes), those that can be read."""
    out = {}
    for f in files:
        try:
            st = os.stat(f)
        except OSError:
            continue
        out[f] = (st.st_mtime_ns, st.st_size)
    return out


def watch_files(roots: list[Path], wanted: Callable[[], list[str]], again: Callable[[list[str]], None]) -> None:
    """Import again each file of ``wanted()`` that changed, whenever something changes under ``roots``, until Ctrl+C.

    Which files changed is judged by their size and time, not by the events alone: a file
    written at once into a folder just made can come before the folder is watched.

    Args:
        roots: the folders watched (with ``watchfiles``, as ``gs sync --watch`` watches the repo).
        wanted: the files to import, in order (asked again on each change: a new transcript counts).
        again: imports the changed files and says what they gave.
    """
    import watchfiles

    seen = _stats(wanted())
    try:
        ready = False
        for changes in watchfiles.watch(*roots, debounce=500, rust_timeout=1000, yield_on_timeout=True):
            if not changes and ready:
                continue
            now = _stats(wanted())
            todo = [f for f, stat in now.items() if seen.get(f) != stat]
            seen = now
            if todo:
                again(todo)
            if not ready:  # watching now (what changed since the first import was taken up above)
                ready = True
                err(f"gs: importing again as {', '.join(str(r) for r in roots)} change; Ctrl+C stops")
    except KeyboardInterrupt:
        err("gs: stopped importing")
