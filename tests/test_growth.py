"""Growth: loose objects are packed with deltas automatically, storage follows what was
added (not the number of saves), reflogs stay consistent, and branches never move back."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from gitsessions.log.commits import CommitMessage
from gitsessions.log.events import make_event, make_header
from gitsessions.store import GitStore
from gitsessions.store.pack import AUTO_SAVES, BLOCK, append_delta, base_position


def _loose_count(repo: Path) -> int:
    out = subprocess.run(["git", "-C", str(repo), "count-objects", "-v"], capture_output=True, text=True).stdout
    return int(dict(line.split(": ") for line in out.splitlines())["count"])


def _grow(store: GitStore, sid: str, saves: int, size: int = 2000) -> str:
    tip = store.tip(sid)
    seq = len(store.load(sid).events) if tip else 0
    for i in range(saves):
        ev = make_event(seq, "user/message", {"content": f"{i} " + "lorem ipsum " * (size // 12)})
        tip = store.append(sid, [ev], CommitMessage(f"turn {i}"), expected_tip=tip,
                           header=make_header(sid) if tip is None else None)
        seq += 1
    return tip


def test_append_delta_rebuilds_the_target():
    """The hand-made delta is checked by git itself in the test below; here its shape."""
    base = b"x" * 70000
    target = base + b"appended line\n" * 50
    delta = b"".join(append_delta(len(base), target))
    assert len(delta) < 1000
    assert base_position(0) is None and base_position(5) == 4
    assert base_position(BLOCK) == 0 and base_position(3 * BLOCK) == 2 * BLOCK


def test_auto_pack_after_enough_saves(gs, git, repo_path):
    store = GitStore(repo_path)
    _grow(store, "big", AUTO_SAVES + 5)
    store.close()
    loose_before = _loose_count(repo_path)
    assert loose_before >= 3 * AUTO_SAVES
    assert gs("ask", "-S", "big", "one more").code == 0  # starts gs gc --auto in the background
    deadline = time.monotonic() + 60
    while _loose_count(repo_path) > 10 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _loose_count(repo_path) <= 10, "the background repack did not run"
    # removing packed loose objects is the packer's last step: what it left is final
    git("fsck", "--strict")
    final = len(git("show", "big:session.jsonl").encode())
    packed = sum(p.stat().st_size for p in (repo_path / "objects" / "pack").glob("*.pack"))
    assert packed < 3 * final, (packed, final)
    # every save is still readable, through plain git
    assert len(git("log", "--format=%H", "big").split()) == AUTO_SAVES + 6
    first = git("rev-list", "--max-parents=0", "big").strip()
    assert git("show", f"{first}:session.jsonl").count("\n") == 2


def test_gc_keeps_reflogs_and_history_and_storage_is_linear(gs, git, repo_path):
    store = GitStore(repo_path)
    _grow(store, "a", 200, size=3000)
    store.close()
    r = gs("gc")
    assert r.code == 0 and "packed" in r.out
    git("fsck", "--strict")
    assert len(git("reflog", "show", "a").splitlines()) == 200
    final = len(git("show", "a:session.jsonl").encode())
    packed = sum(p.stat().st_size for p in (repo_path / "objects" / "pack").glob("*.pack"))
    # 200 saves of a file growing to ~600 KB: loose that is ~60 MB uncompressed; packed it is
    # about what was added, compressed.
    assert packed < final, (packed, final)
    depth = max(int(line.split()[5]) for line in subprocess.run(
        ["git", "-C", str(repo_path), "verify-pack", "-v", *map(str, (repo_path / "objects" / "pack").glob("*.idx"))],
        capture_output=True, text=True).stdout.splitlines() if len(line.split()) == 7 and line.split()[1] == "blob")
    assert depth <= 50
    # another gc on top: idempotent, one pack
    assert gs("gc").code == 0
    assert len(list((repo_path / "objects" / "pack").glob("*.pack"))) == 1
    git("fsck", "--strict")
