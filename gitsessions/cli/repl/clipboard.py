"""``/copy``: text onto the system clipboard, through the clipboard tool the system has."""

from __future__ import annotations

import shutil
import subprocess
import tempfile

from ...errors import GitSessionsError

#: The clipboard tools tried, in order, with the arguments that make them read stdin into
#: the clipboard: Wayland, X11 (two tools), macOS. The first that runs and succeeds wins.
TOOLS: tuple[tuple[str, ...], ...] = (
    ("wl-copy",),
    ("xclip", "-selection", "clipboard"),
    ("xsel", "--clipboard", "--input"),
    ("pbcopy",),
)

#: How long a clipboard tool may take to take the text, seconds.
TOOL_TIMEOUT = 5.0


def copy(text: str) -> str:
    """Put ``text`` on the clipboard with the first tool of :data:`TOOLS` that works.

    The tool's output is not read through a pipe: wl-copy and xclip leave a process behind
    that serves the clipboard and would hold a pipe open until the clipboard changes.

    Args:
        text: what to copy.

    Returns:
        The name of the tool that took it.

    Raises:
        GitSessionsError: no tool is installed, or every one installed failed (the message
            names the tools looked for, or the last one's error).
    """
    failed: str | None = None
    for name, *args in TOOLS:
        path = shutil.which(name)
        if path is None:
            continue
        with tempfile.TemporaryFile() as errors:
            try:
                status = subprocess.run([path, *args], input=text.encode("utf-8"), stdout=subprocess.DEVNULL,
                                        stderr=errors, timeout=TOOL_TIMEOUT).returncode
            except (OSError, subprocess.TimeoutExpired) as exc:
                failed = f"{name} did not run ({exc})"
                continue
            errors.seek(0)
            said = errors.read().decode("utf-8", "replace").strip().splitlines()
        if status == 0:
            return name
        failed = f"{name} failed" + (f": {said[0]}" if said else f" (exit status {status})")
    if failed is not None:
        raise GitSessionsError(f"nothing copied: {failed}")
    looked = ", ".join(name for name, *_ in TOOLS)
    raise GitSessionsError(f"nothing copied: no clipboard tool found (looked for {looked}); "
                           "install one of them, or select the reply with the mouse")
