"""Claude Code 2.1.197's own files (tests/data/claude_code/real2/) imported as they grew, and continued.

Each file is imported at every line it had (a cron import may find it at any): no import
forks a turn another one committed, and the last one leaves the sessions a single import of
the whole file writes, commit for commit. What a compaction kept word for word is sent after
its summary; the reply Claude Code wrote itself on resuming is never sent.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from fakeapi import validate_messages
from test_import_real import CLAUDE_FOLDER, COMPACT, EXIT, ORIGIN, REWIND, REWOUND_LEAF, _claude

from gitsessions.ids import imported_fork_id
from gitsessions.log.transcript import SUMMARY_LEAD, derive_messages
from gitsessions.store import GitStore


def _lines(sid: str) -> list[str]:
    return (CLAUDE_FOLDER / f"{sid}.jsonl").read_text(encoding="utf-8").splitlines(keepends=True)


def _refs(repo: Path) -> dict[str, str]:
    out = subprocess.run(["git", "-C", str(repo), "for-each-ref", "--format=%(refname:short) %(objectname)"],
                         capture_output=True, text=True, check=True).stdout.split()
    return dict(zip(out[0::2], out[1::2], strict=True))


def _events(repo: Path, sid: str) -> list:
    with GitStore(repo) as store:
        return list(store.load(sid).events)


@pytest.mark.parametrize("sid", [COMPACT, EXIT, ORIGIN], ids=["compact", "exit", "plain"])
def test_imported_at_every_line_it_had_it_never_forks_and_ends_as_one_import_of_it(gs, tmp_path, sid):
    lines = _lines(sid)
    path = tmp_path / "projects" / "-home-user-proj" / f"{sid}.jsonl"
    path.parent.mkdir(parents=True)
    repo = tmp_path / "grown.git"
    for n in range(1, len(lines) + 1):
        path.write_text("".join(lines[:n]), encoding="utf-8")
        r = gs("import", str(path), env={"GS_REPO": str(repo)})
        assert r.code == 0 or "holds no conversation with a prompt" in r.err, (n, r.err)
        assert "a branch of" not in r.err, (n, r.err)
    whole = tmp_path / "whole.git"
    assert gs("import", str(path), env={"GS_REPO": str(whole)}).code == 0
    assert _refs(repo) == _refs(whole) and len(_refs(whole)) == 1
    subprocess.run(["git", "-C", str(repo), "fsck", "--strict"], check=True, capture_output=True)


def test_a_session_resumed_after_a_local_command_grows_by_the_turn_and_never_sends_the_tools_reply(
        gs, git, repo_path, tmp_path, fake_api):
    """Left after ``/context`` and ``/exit`` (line 13), resumed with ``-p``: Claude Code writes its own
    "No response requested." (line 17) before the new prompt."""
    lines = _lines(EXIT)
    path = tmp_path / f"{EXIT}.jsonl"
    path.write_text("".join(lines[:14]), encoding="utf-8")
    session = _claude(EXIT, "Hello from the TUI")
    r = gs("import", str(path))
    assert r.code == 0 and r.out.split() == [session], r.err
    tip = git("rev-parse", session).strip()
    path.write_text("".join(lines), encoding="utf-8")
    r = gs("import", str(path))
    assert r.code == 0 and r.out.split() == [session] and f"{session}: 1 turn new" in r.err, r.err
    assert git("rev-parse", f"{session}^").strip() == tip
    assert len(git("for-each-ref", "refs/heads").splitlines()) == 1
    events = _events(repo_path, session)
    messages = derive_messages(events)
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant"]
    aside = [(e.data["name"], e.data["content"]) for e in events if e.type == "import/message"]
    assert ("claude-code synthetic reply", "No response requested.") in aside
    system = [name for name, _ in aside if name.startswith("claude-code system")]
    assert system == ["claude-code system local_command"] * 2
    assert all("\x1b" not in text for _, text in aside)  # /context's output came styled for a terminal
    assert "\x1b" not in gs("show", session).out
    assert gs("ask", "-S", session, "one more").code == 0
    sent = fake_api.requests[-1]["messages"]
    assert validate_messages(sent) is None and "No response requested." not in json.dumps(sent)


def test_after_the_real_compaction_its_summary_then_the_reply_it_kept_are_sent(gs, repo_path, fake_api):
    r = gs("import", str(CLAUDE_FOLDER / f"{COMPACT}.jsonl"))
    assert r.code == 0, r.err
    session = _claude(COMPACT, "Please run echo hi")
    events = _events(repo_path, session)
    summary = next(e for e in events if e.type == "compaction/summary")
    assert derive_messages(events) == [
        {"role": "user", "content": SUMMARY_LEAD + summary.data["summary"]},
        {"role": "assistant", "content": "Reply 3 to: What did it print?"},  # preservedMessages: line 13
        {"role": "user", "content": "What do you remember after the compaction?"},
        {"role": "assistant", "content": "Reply 5 to: What do you remember after the compaction?"},
        {"role": "user", "content": "And one more turn"},
        {"role": "assistant", "content": "Reply 6 to: And one more turn"}]
    assert gs("ask", "-S", session, "one more").code == 0
    sent = fake_api.requests[-1]["messages"]
    assert validate_messages(sent) is None and sent[0]["content"].startswith(SUMMARY_LEAD)
    assert sent[1] == {"role": "assistant", "content": "Reply 3 to: What did it print?"}


def test_a_rewind_made_after_an_import_forks_it_after_the_turn_before(gs, git, tmp_path):
    """Imported before Esc Esc (line 12), then after: the session stays, the new branch is a fork."""
    lines = _lines(REWIND)
    path = tmp_path / f"{REWIND}.jsonl"
    path.write_text("".join(lines[:12]), encoding="utf-8")
    session = _claude(REWIND, "First question")
    assert gs("import", str(path)).code == 0
    before = git("rev-parse", session).strip()
    path.write_text("".join(lines), encoding="utf-8")
    r = gs("import", str(path))
    forked = r.out.split()
    assert r.code == 0 and len(forked) == 1 and "(2 turns of its own)" in r.err, r.err
    assert git("rev-parse", session).strip() == before  # the old line: as it was
    assert git("merge-base", session, forked[0]).strip() == git("rev-parse", f"{session}~1").strip()
    assert git("log", "--format=%s", forked[0]).splitlines()[:2] == [
        "turn 3: Third question after the rewind", "turn 2: A different second question"]
    assert imported_fork_id(session, REWOUND_LEAF) not in forked
    git("fsck", "--strict")
