"""gs commands started in the background after a save (a push, a repack), and their failures.

Such a command runs detached, with nobody to read what it says. Its stderr goes to a file
under the repo's ``gs/background/``; when it fails, that file is kept as ``<command>-*.failed``
and the next gs command in the foreground prints it once, as a warning, then removes it (a
background push refused as diverged is then seen, not believed done). The file is held with
``flock`` for as long as the command runs (:func:`.store.writers.hold_new`: the command's
stderr is that very open file), so one whose command was killed before it could say how it
ended is known too: the next gs command removes it (and says what it held).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

#: The environment variable naming, for a background gs, the file its stderr goes to.
LOG_ENV = "GS_BACKGROUND_LOG"
#: Characters of a failure's text a warning shows at most.
MAX_SHOWN = 400
#: Whether this process is a background gs (its own warnings go to its log, not the failures' ones).
_background = False


def folder(repo: Path) -> Path:
    """The folder of the background commands' records, in the repo's own ``gs/``."""
    return repo / "gs" / "background"


def run_in_background(repo: Path, *args: str) -> None:
    """Start ``gs --repo <repo> ARGS...`` detached from this process and terminal; never wait.

    Used for upkeep after a save (packing, pushing); a failure to start is ignored because
    the next save tries again. Its stderr is kept for :func:`finish` (a repo that cannot be
    written keeps none).
    """
    import subprocess  # only a save that starts one pays for these imports

    from ..store.writers import hold_new

    log: str | None = None
    out = subprocess.DEVNULL
    try:
        name = f"{args[0]}-{os.urandom(4).hex()}.log"
        out = hold_new(folder(repo), name, b"")  # held by the command, whose stderr it is, until it ends
        log = str(folder(repo) / name)
    except OSError:
        pass
    try:
        subprocess.Popen(
            [sys.executable, "-m", "gitsessions", "--repo", str(repo), *args],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=out,
            env={**os.environ, LOG_ENV: log} if log else None, start_new_session=True,
        )
    except OSError:
        if log:
            os.remove(log)
    finally:
        if log:
            os.close(out)


def started_in_background() -> str | None:
    """Return (and forget, so that what this gs runs does not inherit it) the log this gs writes to, if any."""
    global _background
    log = os.environ.pop(LOG_ENV, None)
    _background = log is not None
    return log


def finish(log: str | None, status: int) -> None:
    """Keep the log of a background command that failed (status != 0); else drop it and the failures before.

    Args:
        log: :func:`started_in_background`'s answer (None: a foreground gs, nothing to do).
        status: the command's exit status.
    """
    if not log:
        return
    path = Path(log)
    try:
        sys.stderr.flush()
        if status != 0:
            os.replace(path, path.with_suffix(".failed"))
            return
        path.unlink(missing_ok=True)
        command = path.name.rsplit("-", 1)[0]
        for older in path.parent.glob(f"{command}-*.failed"):  # this later run went through: settled
            older.unlink(missing_ok=True)
    except OSError:
        pass


def take_failures(repo: Path) -> list[str]:
    """Return one warning per background command that failed since the last look, and forget them.

    A repo that cannot be written keeps them (they come again, which is better than never).
    A background gs takes none: the next gs in the foreground says them.
    """
    if _background:
        return []
    from ..store.writers import held

    try:
        failed = sorted(folder(repo).glob("*.failed"), key=lambda p: p.stat().st_mtime)
        killed = [path for path in folder(repo).glob("*.log") if not held(path)]  # its command ended unfinished
    except OSError:
        return []
    warnings = []
    for path in [*failed, *killed]:
        try:
            lines = [line.strip() for line in path.read_text("utf-8", "replace").splitlines() if line.strip()]
            path.unlink()
        except OSError:
            continue
        text = "; ".join(line.removeprefix("gs: ") for line in lines)
        if len(text) > MAX_SHOWN:
            text = text[:MAX_SHOWN] + "…"
        command = path.name.rsplit("-", 1)[0]
        if path.suffix == ".failed":
            warnings.append(f"the gs {command} run in the background after a save failed: {text or 'no message'}")
        elif text:  # killed before it could end: only what it said is worth a word
            warnings.append(f"the gs {command} run in the background after a save was stopped before it ended: "
                            f"{text}")
    return warnings
