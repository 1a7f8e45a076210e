"""``/copy``: the last reply onto the clipboard through the tool the system has.

The clipboard tools are stand-ins on ``PATH`` (shell scripts named as the real tools), run
as real processes by the real chat; the chat runs in-process over a pipe.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from fakeapi import text


def _tool(folder: Path, name: str, body: str) -> None:
    folder.mkdir(exist_ok=True)
    (folder / name).write_text("#!/bin/sh\n" + body)
    (folder / name).chmod(0o755)


def test_copy_puts_the_last_reply_on_the_clipboard(gs, fake_api, tmp_path):
    fake_api.script(text("first reply"), text("line one\nline two"))
    clip = tmp_path / "clipboard"
    _tool(tmp_path / "bin", "xclip", f'[ "$1 $2" = "-selection clipboard" ] && exec /bin/cat > {clip}\n')
    r = gs("chat", "work", input="one\ntwo\n/copy\n/exit\n", env={"PATH": str(tmp_path / "bin")})
    assert r.code == 0, r.err
    assert "(copied the last reply: 2 lines, with xclip)" in r.out
    assert clip.read_text() == "line one\nline two"


def test_copy_says_which_tools_it_looked_for_or_why_the_one_found_failed(gs, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    r = gs("chat", "work", input="hi\n/copy\n/exit\n", env={"PATH": str(empty)})
    assert r.code == 0, r.err
    assert ("error: nothing copied: no clipboard tool found (looked for wl-copy, xclip, xsel, pbcopy); "
            "install one of them, or select the reply with the mouse") in r.out

    _tool(tmp_path / "bin", "wl-copy", 'echo "Failed to connect to a Wayland server" >&2\nexit 1\n')
    r = gs("chat", "work", input="/copy\n/exit\n", env={"PATH": str(tmp_path / "bin")})
    assert "error: nothing copied: wl-copy failed: Failed to connect to a Wayland server" in r.out


def test_copy_with_no_reply_yet_copies_nothing(gs, tmp_path):
    _tool(tmp_path / "bin", "pbcopy", f"exec /bin/cat > {tmp_path / 'clipboard'}\n")
    r = gs("chat", "fresh", input="/copy\n/exit\n", env={"PATH": str(tmp_path / "bin")})
    assert r.code == 0, r.err
    assert "(nothing to copy: no reply in this session yet)" in r.out
    assert not (tmp_path / "clipboard").exists()


def test_a_tool_that_leaves_a_process_serving_the_clipboard_does_not_hold_the_chat(gs, fake_api, tmp_path):
    """xclip and wl-copy fork a process that keeps the clipboard (and their stdout, stderr) open."""
    fake_api.script(text("kept"))
    pid = tmp_path / "server.pid"
    _tool(tmp_path / "bin", "wl-copy", f"/bin/cat > {tmp_path / 'clipboard'}\n/bin/sleep 60 &\necho $! > {pid}\n")
    try:
        r = gs("chat", "work", input="hi\n/copy\n/exit\n", env={"PATH": str(tmp_path / "bin")}, timeout=30)
    finally:
        if pid.exists():
            os.kill(int(pid.read_text()), signal.SIGTERM)
    assert "(copied the last reply: 1 line, with wl-copy)" in r.out, r.out
    assert (tmp_path / "clipboard").read_text() == "kept"
