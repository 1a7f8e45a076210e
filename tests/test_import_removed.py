"""A session removed with ``gs rm`` stays removed: importing its file again does not bring it back as ``-1``."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

FILE = str(Path(__file__).parent / "data" / "claude_code" / "session.jsonl")  # a session, a fork, a sub-agent


def _sessions(gs) -> list[str]:
    return sorted(row["id"] for row in json.loads(gs("list", "--json").out))


def test_an_archived_session_fork_or_sub_agent_is_not_imported_again(gs, repo_path):
    assert gs("import", FILE).code == 0
    written = _sessions(gs)
    assert len(written) == 3
    for sid in written:
        assert gs("rm", sid).code == 0, sid
    r = gs("import", FILE)
    assert r.code == 0, r.err
    assert _sessions(gs) == [] and r.out == ""
    for sid in written:
        assert f"archived as {sid}; gs restore {sid} to import into it again" in r.err
    assert "nothing new" in r.err
    subprocess.run(["git", "-C", str(repo_path), "fsck", "--strict"], check=True, capture_output=True)


def test_one_archived_branch_leaves_the_others_as_they_are(gs):
    assert gs("import", FILE).code == 0
    fork = next(sid for sid in _sessions(gs) if sid.count("-") > 5 and not sid.startswith("sub-agent"))
    assert gs("rm", fork).code == 0
    left = _sessions(gs)
    r = gs("import", FILE)
    assert r.code == 0 and _sessions(gs) == left and r.out == "", r.err


def test_a_restored_session_is_imported_into_again(gs):
    assert gs("import", FILE).code == 0
    written = _sessions(gs)
    assert gs("rm", written[0]).code == 0 and gs("restore", written[0]).code == 0
    r = gs("import", FILE)
    assert r.code == 0 and _sessions(gs) == written and "archived" not in r.err, r.err
