"""Claude Code 2.1's ``--fork-session`` copies imported without their origin, and copies begun at one time.

A copy repeats its origin's lines under its own id and names no origin, so the origin's
session cannot be made from the copy. The origin's file may be missing when a copy is
imported (Claude Code deletes transcripts after 30 days; a user copied one file): when it
turns up later it is imported as it would have been beside its copy, with or without turns
of its own after the fork point: never "nothing new" because the copy repeats its lines.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from gitsessions.ids import imported_session_id

REAL = Path(__file__).parent / "data" / "claude_code" / "real" / "projects" / "-home-user-proj"
ORIGIN_ID, COPY_ID = "90db39e8-d010-41f7-9e46-35f238abb614", "ba86959a-5d04-4b85-95c9-4fb3424581b1"
TITLE = "Please run echo hi"


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, check=True).stdout


def _refs(repo: Path) -> dict[str, str]:
    out = _git(repo, "for-each-ref", "--format=%(refname:short) %(objectname)").split()
    return dict(zip(out[0::2], out[1::2], strict=True))


def _grow_origin(path: Path) -> None:
    """The origin resumed after the copy was made: a turn of its own past the fork point."""
    with path.open("a", encoding="utf-8") as f:
        f.write(json.dumps({"parentUuid": "bbec82b7-f34c-4a0a-93ac-a1a2f17e4aa7", "isSidechain": False,
                            "type": "user", "message": {"role": "user", "content": "And a third?"},
                            "uuid": "u-more", "timestamp": "2026-12-01T18:53:00.000Z", "sessionId": ORIGIN_ID}) + "\n")
        f.write(json.dumps({"parentUuid": "u-more", "isSidechain": False, "type": "assistant",
                            "message": {"role": "assistant", "id": "msg_more",
                                        "content": [{"type": "text", "text": "Yes."}]},
                            "uuid": "a-more", "timestamp": "2026-12-01T18:53:01.000Z", "sessionId": ORIGIN_ID}) + "\n")


@pytest.mark.parametrize("grown", [False, True], ids=["all-its-lines-in-the-copy", "a-turn-past-the-fork"])
def test_an_origin_imported_after_its_copy_is_imported_as_it_would_have_been(gs, tmp_path, grown):
    origin = imported_session_id("claude-code", ORIGIN_ID, TITLE)
    copy = imported_session_id("claude-code", COPY_ID, TITLE)
    both = tmp_path / "both" / "projects" / "-home-user-proj"
    late = tmp_path / "late" / "projects" / "-home-user-proj"
    for folder in (both, late):
        folder.mkdir(parents=True)
        shutil.copy(REAL / f"{COPY_ID}.jsonl", folder)
    shutil.copy(REAL / f"{ORIGIN_ID}.jsonl", both)
    if grown:
        _grow_origin(both / f"{ORIGIN_ID}.jsonl")
    r = gs("import", str(both / f"{ORIGIN_ID}.jsonl"), str(both / f"{COPY_ID}.jsonl"),
           env={"GS_REPO": str(tmp_path / "both.git")})
    assert r.code == 0, r.err

    repo = tmp_path / "late.git"
    r = gs("import", str(late / f"{COPY_ID}.jsonl"), env={"GS_REPO": str(repo)})  # the origin's file is not there
    assert r.code == 0 and list(_refs(repo)) == [copy], r.err
    shutil.copy(both / f"{ORIGIN_ID}.jsonl", late)  # it turns up (restored from a backup, copied over)
    r = gs("import", str(late / f"{ORIGIN_ID}.jsonl"), env={"GS_REPO": str(repo)})
    assert r.code == 0 and "nothing new" not in r.err and r.out.split() == [origin], r.err
    assert _git(repo, "log", "--format=%s", origin).splitlines() == [
        *(["turn 3: And a third?"] if grown else []),
        "turn 2: And a second question", f"turn 1: {TITLE}", f"import: claude-code {ORIGIN_ID}"]
    assert _refs(repo)[origin] == _refs(tmp_path / "both.git")[origin]  # the commits it makes beside its copy
    kept = _refs(repo)
    r = gs("import", str(late / f"{COPY_ID}.jsonl"), str(late / f"{ORIGIN_ID}.jsonl"), env={"GS_REPO": str(repo)})
    assert r.code == 0 and "nothing new" in r.err and _refs(repo) == kept, r.err
    _git(repo, "fsck", "--strict")


def test_copies_begun_at_one_time_are_each_a_session_the_same_in_every_order(gs, tmp_path):
    """Two copies whose first stamps tie: neither is taken for the other's origin, whatever is read first."""
    twin_id = "c0ffee00-0000-4000-8000-000000000001"
    folder = tmp_path / "projects" / "-home-user-proj"
    folder.mkdir(parents=True)
    for sid in (ORIGIN_ID, COPY_ID):
        shutil.copy(REAL / f"{sid}.jsonl", folder)
    twin = (REAL / f"{COPY_ID}.jsonl").read_text(encoding="utf-8").replace(COPY_ID, twin_id)
    (folder / f"{twin_id}.jsonl").write_text(twin, encoding="utf-8")
    files = [folder / f"{sid}.jsonl" for sid in (ORIGIN_ID, COPY_ID, twin_id)]
    seen = []
    for n, order in enumerate([files, files[::-1], [files[1], files[2], files[0]], [files[2], files[0], files[1]]]):
        repo = tmp_path / f"r{n}.git"
        for f in order:  # one file per run: what is imported already differs at each
            r = gs("import", str(f), env={"GS_REPO": str(repo)})
            assert r.code == 0, r.err
        seen.append(_refs(repo))
        _git(repo, "fsck", "--strict")
    assert len(seen[0]) == 3, seen[0]
    assert all(refs == seen[0] for refs in seen), seen
