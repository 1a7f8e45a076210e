"""A file imported whole before is passed over when unchanged, and read again on any change."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from gitsessions.secrets.redact import NO_REDACTION, Redactor, from_environment
from gitsessions.store import GitStore
from gitsessions.transfer.ahead import FEWEST, ReadAhead
from gitsessions.transfer.read import read_import
from gitsessions.transfer.readers import chatgpt
from gitsessions.transfer.readers.stream import Conversations, Source
from gitsessions.transfer.seen import FORMAT, SeenFiles, options_digest
from gitsessions.transfer.write import redact_plan, write_import

FIXTURE = Path(__file__).parent / "data" / "claude_code" / "session.jsonl"  # a session, a fork, a sub-agent


def _sessions(gs) -> list[str]:
    return sorted(row["id"] for row in json.loads(gs("list", "--json").out))


def _copy(tmp_path: Path, name: str = "session.jsonl") -> Path:
    path = tmp_path / "in" / name
    path.parent.mkdir(exist_ok=True)
    path.write_bytes(FIXTURE.read_bytes())
    return path


def test_a_file_recorded_with_its_sessions_at_their_tips_is_not_read(gs, repo_path, tmp_path):
    path = _copy(tmp_path)
    assert gs("import", str(path)).code == 0
    cache = repo_path / "gs" / "imported"
    files = json.loads(cache.read_text())["files"]
    (entry,) = files.values()
    assert sorted(entry["tips"]) == _sessions(gs)
    # Another file recorded as that one: an import takes the record's word for it and reads nothing.
    other = tmp_path / "other.jsonl"
    other.write_text(FIXTURE.read_text().replace("5f0c6a1e-2b7d", "6f0c6a1e-2b7d"))  # another conversation
    content = SeenFiles.key(other.read_bytes(), "auto", None, NO_REDACTION)[0]
    files[content] = entry
    cache.write_text(json.dumps({"format": FORMAT, "files": files}))
    r = gs("import", str(other))
    assert r.code == 0 and r.out == "" and "nothing new in other.jsonl" in r.err, r.err
    assert len(_sessions(gs)) == 3
    cache.write_text("not json")  # a cache that cannot be read is an empty one: the file is read
    r = gs("import", str(other))
    assert r.code == 0 and r.out.strip(), r.err


def test_the_same_file_again_says_what_reading_it_says(gs, repo_path, tmp_path):
    path = _copy(tmp_path)
    first = gs("import", str(path), str(FIXTURE))
    assert first.code == 0 and len(_sessions(gs)) == 3
    again = gs("import", str(path), str(FIXTURE))
    (repo_path / "gs" / "imported").unlink()
    read = gs("import", str(path), str(FIXTURE))
    assert again.code == read.code == 0
    assert again.out == read.out == "" and again.err == read.err, (again.err, read.err)
    assert "2 files, 0 sessions written, 0 turns, 0 skipped" in again.err


def test_a_changed_file_is_read_though_its_size_and_time_are_the_same(gs, git, tmp_path):
    path = _copy(tmp_path)
    assert gs("import", str(path)).code == 0
    before = _sessions(gs)
    stat = path.stat()
    data = path.read_bytes()
    assert b"Renamed to `--loud`." in data  # the last reply
    path.write_bytes(data.replace(b"Renamed to `--loud`.", b"Renamed to `--LOUD`.", 1))
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_size == stat.st_size and path.stat().st_mtime_ns == stat.st_mtime_ns
    r = gs("import", str(path))
    assert r.code == 0 and r.out.strip() and "nothing new" not in r.err, r.err  # the edit gave a branch
    assert len(_sessions(gs)) > len(before)
    git("fsck", "--strict")


def test_a_session_changed_since_has_its_file_read_again(gs, tmp_path):
    path = _copy(tmp_path)
    assert gs("import", str(path)).code == 0
    assert gs("import", str(path)).code == 0  # recorded, and passed over
    sid = _sessions(gs)[0]
    assert gs("rm", sid).code == 0
    r = gs("import", str(path))
    assert r.code == 0 and f"archived as {sid}" in r.err, r.err  # read: what it says of the archived one


def test_what_an_import_depends_on_besides_the_bytes_is_in_its_key_but_no_secret_value():
    base = Redactor({"hunter2hunter2": "DB_PASSWORD"}, {"a": "foo"})
    same = options_digest("auto", None, base)
    assert options_digest("auto", None, Redactor({"other-value-1": "DB_PASSWORD"}, {"a": "foo"})) == same
    for other in (options_digest("claude-code", None, base), options_digest("auto", "/x/session.jsonl", base),
                  options_digest("auto", None, Redactor({"hunter2hunter2": "OTHER"}, {"a": "foo"})),
                  options_digest("auto", None, Redactor({"hunter2hunter2": "DB_PASSWORD"}, {"a": "bar"})),
                  options_digest("auto", None, NO_REDACTION)):
        assert other != same


def _files(tmp_path: Path, n: int) -> list[str]:
    """``n`` Claude Code transcripts: the fixture under other session ids, a secret in each."""
    out = []
    for i in range(n):
        path = tmp_path / "many" / f"{i}.jsonl"
        path.parent.mkdir(exist_ok=True)
        text = FIXTURE.read_text().replace("5f0c6a1e-2b7d", f"5f0c6a1e-{i:04x}")
        path.write_text(text.replace("Renamed to `--loud`.", f"Renamed; key sk-proj-{i:04d}A1b2C3d4E5f6G7h8I9j0K1l2"))
        out.append(str(path))
    return out


def test_files_read_ahead_in_a_worker_are_written_as_those_read_one_by_one(gs, tmp_path, monkeypatch):
    files = _files(tmp_path, FEWEST + 2)
    broken = tmp_path / "many" / "broken.jsonl"
    broken.write_text('{"type": "user", "uuid": "x"')
    files.insert(3, str(broken))
    r = gs("import", *files)
    assert r.code == 1 and "broken.jsonl" in r.err and f"{len(files)} files (1 failed)" in r.err, r.err
    ahead = {sid: gs("show", sid, "--format", "json").json()["events"] for sid in _sessions(gs)}
    assert len(ahead) == 3 * (FEWEST + 2) and "sk-proj-" not in json.dumps(ahead)
    monkeypatch.setenv("GS_REPO", str(tmp_path / "one-by-one.git"))
    for file in files:
        gs("import", file)
    assert {sid: gs("show", sid, "--format", "json").json()["events"] for sid in _sessions(gs)} == ahead


def test_a_plan_read_ahead_is_the_plan_read_here_and_only_for_the_same_bytes(tmp_path):
    files = _files(tmp_path, 4)
    redactor = from_environment({})
    seen = SeenFiles(tmp_path / "imported")  # none recorded: every file is read ahead
    with ReadAhead(files, "auto", False, redactor, seen, workers=1) as ahead:
        got = [ahead.take(file, None, None)[1] for file in files[:3]]
        Path(files[3]).write_text(Path(files[3]).read_text().replace("Renamed", "Named"))  # after it was sent
        changed = ahead.take(files[3], None, None)[1]
    assert got[0] is None  # the first is read here, while the worker starts
    for file, plan in zip(files[1:3], got[1:], strict=True):
        here = redact_plan(read_import(Path(file).read_bytes(), Path(file).name, path=Path(file)), redactor)
        assert plan == here and "sk-proj-" not in repr(plan)
    if changed is not None:  # the worker read it after the change: the plan of those bytes
        assert "Named" in repr(changed) and "Renamed" not in repr(changed)


def test_the_worker_ignores_ctrl_c_from_its_start(tmp_path):
    # Not only once its initializer runs: a Ctrl+C while it imported printed its traceback.
    import signal

    files = _files(tmp_path, 3)
    with ReadAhead(files, "auto", False, from_environment({}), SeenFiles(tmp_path / "imported"), workers=1) as ahead:
        ahead.take(files[0], None, None)  # sends the next files: the worker starts now
        pids = list(ahead._pool._processes)  # type: ignore[union-attr]
        assert pids
        for pid in pids:  # at once, while it is still starting
            status = Path(f"/proc/{pid}/status").read_text()
            ignored = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigIgn:")), 16)
            assert ignored & (1 << (signal.SIGINT - 1)), status
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # this process's is back


def test_a_transcript_read_with_its_fork_session_kin_is_not_recorded(gs, repo_path, tmp_path):
    # The copy's plan holds what its origin's file holds (the lines they share): not its bytes alone.
    # The origin's is its own bytes' (a copy, begun after it, is never its origin).
    real = Path(__file__).parent / "data" / "claude_code" / "real" / "projects" / "-home-user-proj"
    folder = tmp_path / "projects" / "-home-user-proj"
    folder.mkdir(parents=True)
    ids = ("90db39e8-d010-41f7-9e46-35f238abb614", "ba86959a-5d04-4b85-95c9-4fb3424581b1")  # a session, its copy
    files = [shutil.copy(real / f"{sid}.jsonl", folder) for sid in ids]
    alone = _copy(tmp_path)
    assert gs("import", *map(str, files), str(alone)).code == 0
    recorded = json.loads((repo_path / "gs" / "imported").read_text())["files"]
    own = (Path(files[0]), alone)
    assert sorted(recorded) == sorted(SeenFiles.key(f.read_bytes(), "auto", None, NO_REDACTION)[0] for f in own)


def test_a_file_is_keyed_by_its_bytes_read_a_piece_at_a_time(tmp_path):
    # A data export may be hundreds of MB: its digest is read from the file, the same as of its bytes.
    big = tmp_path / "conversations.json"
    big.write_bytes(b"[" + b" " * (3 << 20) + b"]")
    assert SeenFiles.key(big, "auto", None, NO_REDACTION) == SeenFiles.key(big.read_bytes(), "auto", None, NO_REDACTION)
    assert SeenFiles.key(big, "auto", None, NO_REDACTION)[0] != SeenFiles.key(b"[]", "auto", None, NO_REDACTION)[0]


def test_a_large_export_is_recorded_from_its_write_not_read_a_third_time(tmp_path, repo_path):
    path = tmp_path / "conversations.json"
    path.write_text(json.dumps([{"id": f"c{i}", "title": f"Chat {i}", "create_time": 1700000000, "current_node": "a",
                                 "mapping": {"q": {"id": "q", "parent": None, "children": ["a"], "message": {
                                     "id": "q", "author": {"role": "user"}, "create_time": 1700000000 + i,
                                     "content": {"content_type": "text", "parts": [f"question {i}"]}}},
                                     "a": {"id": "a", "parent": "q", "children": [], "message": {
                                         "id": "a", "author": {"role": "assistant"}, "create_time": 1700000001 + i,
                                         "content": {"content_type": "text", "parts": [f"answer {i}"]}}}}}
                                for i in range(3)]))
    reads: list[int] = []

    def convert(elements):  # ChatGPT's own conversion, each read of the file counted
        reads.append(1)
        yield from chatgpt.convert(elements)

    plan = read_import(None, path.name, path=path)
    plan.conversations = Conversations(Source(None, path, path.name), convert, keep=0)  # too large to keep
    seen = SeenFiles(tmp_path / "imported")
    key = seen.key(path, "auto", None, NO_REDACTION)
    with GitStore(repo_path) as store:
        result = write_import(store, plan)
        assert len(reads) == 2 and len(result.conversations) == 3  # checked, then read again as it was written
        seen.record(store, key, plan, result)
    assert len(reads) == 2 and seen.recorded(key)


def test_the_files_of_a_run_are_checked_in_one_store_opened_once_that_sees_every_move(gs, git, repo_path, tmp_path):
    files = []
    for i in range(3):  # the fixture under other session ids, each alone in its folder
        files.append(tmp_path / f"in{i}" / "session.jsonl")
        files[-1].parent.mkdir()
        files[-1].write_text(FIXTURE.read_text().replace("5f0c6a1e-2b7d", f"5f0c6a1e-{i:04x}"))
    assert gs("import", *map(str, files)).code == 0
    recorded = json.loads((repo_path / "gs" / "imported").read_text())["files"]
    keys = [(content, entry["options"]) for content, entry in recorded.items()]
    assert len(keys) == 3
    opened: list[GitStore] = []

    def open_store() -> GitStore:  # what each check asked of: counted
        opened.append(GitStore(repo_path))
        return opened[-1]

    with SeenFiles(repo_path / "gs" / "imported") as seen:
        assert all(seen.unchanged(open_store, key) for key in keys)
        sid, tip = next(iter(recorded[keys[1][0]]["tips"].items()))
        git("update-ref", f"refs/heads/{sid}", f"{tip}~1")  # moved by another writer: that store sees it
        assert [seen.unchanged(open_store, key) for key in keys] == [True, False, True]
    assert len(opened) == 1 and opened[0]._repo is None  # closed with the run
