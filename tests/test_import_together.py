"""Imports run one at a time: two at once (cron overlapping ``--watch``) write each conversation once.

Real processes, started together on one repo: the second waits for the first (the repo-wide
import lock, ``<repo>/gs/import.lock``) and then finds what it wrote.
"""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
from pathlib import Path

from conftest import GS

DATA = Path(__file__).parent / "data"
FILES = [str(DATA / "claude_code" / "session.jsonl"), str(DATA / "chatgpt" / "conversations.json"),
         *map(str, sorted((DATA / "codex").glob("rollout-*.jsonl")))]


def _sessions(gs) -> list[str]:
    return sorted(row["id"] for row in json.loads(gs("list", "--json").out))


def _many(tmp_path: Path, n: int) -> str:
    """A ChatGPT export of ``n`` copies of the fixture's conversations (edits, regenerations), each its own id."""
    convs = json.loads((DATA / "chatgpt" / "conversations.json").read_text(encoding="utf-8"))
    out = []
    for i in range(n):
        for conv in convs:
            copy = json.loads(json.dumps(conv).replace(conv["id"], f"{conv['id'][:-4]}{i:04d}"))
            out.append(copy)
    path = tmp_path / "many" / "conversations.json"
    path.parent.mkdir()
    path.write_text(json.dumps(out), encoding="utf-8")
    return str(path)


def test_three_imports_started_together_write_each_conversation_once(gs, repo_path, tmp_path):
    files = [*FILES, _many(tmp_path, 20)]
    procs = [subprocess.Popen([*GS, "import", *files], env=os.environ.copy(), stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(3)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0, 0], [err for _, err in outs]
    wrote = [out.split() for out, _ in outs]
    assert sum(1 for w in wrote if w) == 1, wrote  # one wrote them all, the others found them
    assert sorted(wrote, key=len)[-1] and not any(sorted(wrote, key=len)[:2])
    assert _sessions(gs) == sorted(sorted(wrote, key=len)[-1])
    assert sum("nothing new" in err for _, err in outs) == 2, [err for _, err in outs]
    subprocess.run(["git", "-C", str(repo_path), "fsck", "--strict"], check=True, capture_output=True)


def test_an_import_waits_for_the_one_under_way_and_says_so(gs, repo_path):
    assert gs("import", FILES[0]).code == 0  # the repo exists
    before = _sessions(gs)
    lock = repo_path / "gs" / "import.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        os.pwrite(fd, json.dumps({"pid": 4242, "host": "there", "started": 0}).encode(), 0)
        proc = subprocess.Popen([*GS, "import", FILES[1]], env=os.environ.copy(), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        assert proc.stderr is not None
        said = proc.stderr.readline()  # said before it waits
        assert said.startswith("gs: waiting for another import (pid 4242 on there"), said
        assert proc.poll() is None and _sessions(gs) == before  # waiting, nothing written
    finally:
        os.close(fd)  # the other import ends
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, said + err
    assert out.split() and set(_sessions(gs)) > set(before)
