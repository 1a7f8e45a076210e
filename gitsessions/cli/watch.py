"""``gs sync --watch``: keep a machine that just mirrors in sync, until Ctrl+C.

A round is one ``gs sync``. One runs at start, then whenever the sessions' refs here
changed since the last round (a save, a rename, an archive: seen by watching the repo
folder with ``watchfiles``), and every ``interval`` seconds for what changed on the remote.
A round that moved nothing and has nothing to report prints nothing (no line per interval);
one that fails says so in one line and the loop goes on; Ctrl+C ends it with exit 0.
"""

from __future__ import annotations

import time
from collections.abc import Callable

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
