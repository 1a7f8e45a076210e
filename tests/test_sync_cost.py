"""Sync is cheap when little changed: bytes, not timings.

A push sends what the remote lacks, each new save as a delta on the blob the remote has
(a thin pack the receiver completes), and runs no repack of the local repo. What a server
received is measured from the packs it kept (``receive.unpackLimit 1``): the bytes of the
objects it did not hold before (completing a thin pack appends bases it already had; those
are not counted). Timings are figures for benchmarks/bench_sync.py, not asserted here.
"""

from __future__ import annotations

import os
import subprocess
import zlib
from pathlib import Path

import pytest
from gitservers import init_bare
from test_transports import Transport, transport  # noqa: F401 - the fixture, shared

from gitsessions.log.commits import CommitMessage, commit_message
from gitsessions.log.events import make_event, make_header
from gitsessions.store import GitStore
from gitsessions.store.remote.remotes import Remotes
from gitsessions.store.thinpack import PushPack

TURN_WORDS = "the quick brown fox jumps over a lazy dog while seven wizards quietly judge boxing".split()


def _git(repo: Path, *args: str, input: bytes | None = None) -> str:
    proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, input=input)
    assert proc.returncode == 0, proc.stderr.decode()
    return proc.stdout.decode()


def _objects(bare: Path) -> set[str]:
    return set(_git(bare, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split())


def _packs(bare: Path) -> set[Path]:
    return set((bare / "objects" / "pack").glob("*.pack"))


def _received(bare: Path, had: set[str], packs_before: set[Path]) -> int:
    """Bytes of the objects ``bare`` holds in packs newer than ``packs_before`` and did not have before."""
    assert "count: 0\n" in _git(bare, "count-objects", "-v"), "objects were unpacked: not measurable"
    total = 0
    for pack in _packs(bare) - packs_before:
        for line in _git(bare, "verify-pack", "-v", str(pack)).splitlines():
            fields = line.split()
            if len(fields) >= 5 and len(fields[0]) == 40 and fields[0] not in had:
                total += int(fields[3])  # size in the pack file, compressed
    return total


def _turn(n: int, turn: int) -> list:
    """One finished turn (~2.5 KB of prose) whose events start at seq ``n``."""
    words = [TURN_WORDS[(turn * 7 + i * 3) % len(TURN_WORDS)] + str((turn * i) % 97) for i in range(400)]
    return [make_event(n, "turn/start", {"turn": turn}),
            make_event(n + 1, "user/message", {"content": " ".join(words[:80])}),
            make_event(n + 2, "assistant/message", {"content": " ".join(words[80:]), "model": "m", "tool_calls": []}),
            make_event(n + 3, "turn/end", {"turn": turn, "reason": "completed"})]


class Grower:
    """Session ``sid`` of ``store`` grown turn by turn, as gs saves it (one commit per turn)."""

    def __init__(self, store: GitStore, sid: str = "w"):
        self.store, self.sid, self.events, self.tip = store, sid, [], None

    def turns(self, count: int) -> bytes:
        """Save ``count`` turns; return the bytes the last one appended to ``session.jsonl``."""
        added = b""
        for _ in range(count):
            new = _turn(len(self.events), len(self.events) // 4 + 1)
            self.events += new
            self.tip = self.store.append(self.sid, new, commit_message(self.sid, self.events, len(self.events) - 4),
                                         expected_tip=self.tip,
                                         header=make_header(self.sid) if self.tip is None else None)
            added = b"".join(ev.encode() for ev in new)
        return added


@pytest.fixture
def grown(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolated_home: Path) -> Grower:
    """A session repo holding session ``w`` of 80 turns (~200 KB), packed once as gs gc would."""
    with monkeypatch.context() as setup:  # undo() would also undo the isolated environment
        setup.setattr("os.fsync", lambda fd: None)  # setup only: a slow disk is not under test
        store = GitStore(tmp_path / "local.git")
        grower = Grower(store)
        grower.turns(80)
        store.gc()
    return grower


@pytest.mark.parametrize("transport", ["path", "git", "http"], indirect=True)
def test_one_new_turn_sends_about_that_turn(transport: Transport, grown: Grower):  # noqa: F811 - the fixture
    store = grown.store
    remote = init_bare(transport.root / "R.git", keep_packs=True)
    url = transport.url("R.git")
    login = {"username": transport.server.username, "password": transport.server.password} \
        if transport.kind == "http" else {}
    assert Remotes(store, **login).push(url).pushed == ["refs/heads/w"]
    had, packs = _objects(remote), _packs(remote)

    turn = grown.turns(1)
    report = Remotes(store, **login).push(url)

    assert report.pushed == ["refs/heads/w"] and not report.failed
    _git(remote, "fsck", "--strict")
    assert _git(remote, "rev-parse", "w").strip() == grown.tip
    whole = store.read_raw("w", grown.tip)
    assert _git(remote, "cat-file", "blob", "w:session.jsonl").encode() == whole
    sent = _received(remote, had, packs)
    compressed_turn = len(zlib.compress(turn))
    print(f"\n[{transport.kind}] session.jsonl {len(whole)} B ({len(zlib.compress(whole))} B compressed); "
          f"one turn {len(turn)} B ({compressed_turn} B compressed); the push sent {sent} B")
    assert sent < len(whole) / 20  # not the file again
    assert sent < 2 * compressed_turn + 1024  # the turn, its commit and its tree


def test_push_runs_no_repack(grown: Grower):
    store = grown.store
    remote = init_bare(grown.store.path.parent / "R.git")
    assert Remotes(store).push(str(remote)).pushed == ["refs/heads/w"]
    packs = _packs(store.path)
    grown.turns(2)
    loose = int(_git(store.path, "count-objects", "-v").split("count: ")[1].split()[0])
    assert loose == 6  # two saves: blob, tree and commit each

    assert Remotes(store).push(str(remote)).pushed == ["refs/heads/w"]

    assert _packs(store.path) == packs
    assert f"count: {loose}\n" in _git(store.path, "count-objects", "-v")
    _git(remote, "fsck", "--strict")
    _git(store.path, "fsck", "--strict")


def test_a_fork_of_an_older_save_sends_one_commit(grown: Grower, tmp_path: Path):
    """The fork's tree is on the remote already, reachable only from far below its tip."""
    store = grown.store
    remote = init_bare(tmp_path / "R.git", keep_packs=True)
    assert Remotes(store).push(str(remote)).pushed == ["refs/heads/w"]
    had, packs = _objects(remote), _packs(remote)
    old = store.log("w")[40].commit
    fork = store.branch_from("older", old, CommitMessage("fork of w", {"Session": "older"}))

    assert Remotes(store).push(str(remote)).pushed == ["refs/heads/older"]

    _git(remote, "fsck", "--strict")
    assert _git(remote, "rev-parse", "older").strip() == fork
    assert _objects(remote) - had == {fork}
    assert _received(remote, had, packs) < 600


def test_without_thin_packs_the_pack_stands_alone(grown: Grower, tmp_path: Path):
    """A server that cannot complete thin packs (``no-thin``) gets whole bases: real git's
    ``index-pack`` without ``--fix-thin`` takes the pack, and refuses the thin one."""
    store = grown.store
    remote = init_bare(tmp_path / "R.git")
    assert Remotes(store).push(str(remote)).pushed == ["refs/heads/w"]
    have = {_git(remote, "rev-parse", "w").strip().encode()}
    grown.turns(1)
    want = {grown.tip.encode()}
    repo = store.repo()

    def pack_file(thin: bool) -> bytes:
        from dulwich.objects import DEFAULT_OBJECT_FORMAT
        from dulwich.pack import PackChunkGenerator

        pack = PushPack(repo)
        pack.thin = thin
        count, records = pack(have, want, ofs_delta=True)
        return b"".join(PackChunkGenerator(DEFAULT_OBJECT_FORMAT, num_records=count, records=records))

    def index(data: bytes, *flags: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(remote), "index-pack", "--stdin", "--strict", *flags],
                              input=data, capture_output=True)

    thin, whole = pack_file(True), pack_file(False)
    assert index(thin).returncode != 0  # a thin pack needs its base completed
    assert index(whole).returncode == 0
    assert index(thin, "--fix-thin").returncode == 0
    assert len(thin) < len(whole) / 10


def test_the_first_list_after_a_clone_reads_no_log(grown: Grower, tmp_path: Path, gs):
    """gs list of a fresh clone takes counts from the trailers gs wrote on the other machine
    (no log is parsed: nothing becomes verified); opening a session still checks its log."""
    remote = init_bare(tmp_path / "R.git")
    other = Grower(grown.store, "second")
    other.turns(3)
    header = b'{"type":"session","version":1,"created":1}\n'
    damaged = header + b'{"seq":0,"time":1,"type":"user/message","data":{"content":"x"}}\n{"seq":5,'
    blob = _git(grown.store.path, "hash-object", "-w", "--stdin", input=damaged).strip()
    tree = _git(grown.store.path, "mktree", input=f"100644 blob {blob}\tsession.jsonl\n".encode()).strip()
    message = "turn 1: x\n\nSession: torn\nTurn: 1\nMessages: 1"  # gs's trailers over a torn log
    commit = _git(grown.store.path, "commit-tree", tree, "-m", message).strip()
    _git(grown.store.path, "update-ref", "refs/heads/torn", commit)
    assert len(Remotes(grown.store).push(str(remote)).pushed) == 3
    clone = tmp_path / "clone.git"
    assert gs("clone", str(remote), str(clone)).code == 0

    rows = {row["id"]: row for row in gs("--repo", str(clone), "list", "--json").json()}

    assert (rows["w"]["turns"], rows["w"]["messages"], rows["w"]["error"]) == (80, 160, None)
    assert (rows["second"]["turns"], rows["second"]["messages"]) == (3, 6)
    assert set(rows) == {"w", "second", "torn"}
    assert not (clone / "gs" / "verified").exists()  # list parsed no log
    with GitStore(clone) as cloned:  # sync tells these are sessions without reading their objects
        assert cloned.known_logs() == {grown.tip, other.tip, commit}
    assert gs("--repo", str(clone), "show", "second").code == 0
    assert (clone / "gs" / "verified").read_text().split() == [other.tip]
    r = gs("--repo", str(clone), "show", "torn")
    assert r.code == 1 and "corrupt" in r.err  # the log is checked where it is read


def test_packs_piling_up_from_fetches_make_a_repack_due(grown: Grower, tmp_path: Path):
    """Each fetch that brings objects adds a pack; lookups search them one by one."""
    from dulwich.objects import Blob

    from gitsessions.store.pack import AUTO_PACKS

    store = grown.store
    assert not store.pack_due()
    for i in range(AUTO_PACKS - 1):  # one pack is there already
        store.repo().object_store.add_objects([(Blob.from_string(b"fetched %d\n" % i), None)])
    store.close()
    assert store.pack_due()
    store.gc()
    assert not store.pack_due()
    _git(store.path, "fsck", "--strict")


def test_tips_read_in_one_pass_agree_with_git(grown: Grower):
    """Loose refs over packed ones, symbolic refs followed, a ref being written (``.lock``) is none."""
    store = grown.store
    second = Grower(store, "second")
    second.turns(1)
    _git(store.path, "pack-refs", "--all")
    second.turns(1)  # loose again, newer than its packed line
    _git(store.path, "symbolic-ref", "refs/heads/alias", "refs/heads/second")
    _git(store.path, "update-ref", "refs/heads/feature/x", grown.tip)
    (store.path / "refs" / "heads" / "half.lock").write_text(grown.tip + "\n")
    store.close()

    tips = store.tips()

    assert tips == {"alias": second.tip, "second": second.tip, "w": grown.tip}
    listed = _git(store.path, "for-each-ref", "--format=%(refname:short) %(objectname)", "refs/heads/").split()
    assert dict(zip(listed[::2], listed[1::2], strict=True)) == {**tips, "feature/x": grown.tip}
    assert store.session_ids() == ["alias", "second", "w"]


def test_the_automatic_repack_packs_only_the_loose_objects(grown: Grower, gs):
    store = grown.store
    old_packs = _packs(store.path)
    grown.turns(10)
    loose = int(_git(store.path, "count-objects", "-v").split("count: ")[1].split()[0])
    assert loose == 30

    result = store.gc(incremental=True)

    assert result is not None and result.objects == 30 and result.deltas == 10 and result.loose_removed == 30
    assert old_packs < _packs(store.path) and len(_packs(store.path)) == 2  # the old pack is left alone
    assert "count: 0\n" in _git(store.path, "count-objects", "-v")
    _git(store.path, "fsck", "--strict")
    with GitStore(store.path) as fresh:
        assert fresh.load("w").events == grown.events
    assert gs("--repo", str(store.path), "gc").code == 0  # by hand: everything into one pack
    assert len(_packs(store.path)) == 1
    _git(store.path, "fsck", "--strict")


def _object_reads(monkeypatch: pytest.MonkeyPatch) -> list[bytes]:
    """The ids of the objects read from here on (by dulwich, whoever asks), as they are read."""
    from dulwich.object_store import PackBasedObjectStore

    reads: list[bytes] = []
    get_raw = PackBasedObjectStore.get_raw
    monkeypatch.setattr(PackBasedObjectStore, "get_raw", lambda self, sha: reads.append(sha) or get_raw(self, sha))
    return reads


def test_a_sync_that_moves_nothing_reads_no_object(grown: Grower, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A tip the known-logs caches name is a session: no commit or tree is read to tell it from a stranger."""
    store = grown.store
    Remotes(store).add("origin", str(init_bare(tmp_path / "R.git")))
    Remotes(store).push("origin")
    store.close()
    reads = _object_reads(monkeypatch)

    with GitStore(store.path) as again:  # a new process: nothing cached in memory
        report = Remotes(again).sync("origin")

    assert report.pull.unchanged == 1 and report.push.unchanged == 1 and not report.push.connected
    assert reads == []


@pytest.mark.parametrize("transport", ["path", "file", "git", "http"], indirect=True)
def test_a_fetch_that_brings_nothing_reads_no_branch_here(transport: Transport, grown: Grower,  # noqa: F811
                                                           monkeypatch: pytest.MonkeyPatch):
    """dulwich's fetch reads every branch here (its graph walker) before it knows whether anything is wanted."""
    from dulwich.repo import Repo

    store = grown.store
    init_bare(transport.root / "R.git")
    url = transport.url("R.git")
    login = {"username": transport.server.username, "password": transport.server.password} \
        if transport.kind == "http" else {}
    Remotes(store, **login).push(url)
    walks: list[Repo] = []
    get_graph_walker = Repo.get_graph_walker
    monkeypatch.setattr(Repo, "get_graph_walker",
                        lambda self, heads=None: walks.append(self) or get_graph_walker(self, heads))

    assert Remotes(store, **login).fetch(url) == {b"refs/heads/w": grown.tip.encode()}
    assert walks == []


def test_a_sync_after_a_pull_reads_no_object(grown: Grower, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Tips a pull takes are known to hold a log, as a clone's are: the next no-op sync reads none of them."""
    remote = init_bare(tmp_path / "R.git")
    Remotes(grown.store).push(str(remote))
    here = GitStore(tmp_path / "here.git")
    Remotes(here).add("origin", str(remote))
    assert Remotes(here).pull("origin").created == ["w"]
    here.close()
    reads = _object_reads(monkeypatch)

    with GitStore(here.path) as again:  # a new process: nothing cached in memory
        report = Remotes(again).sync("origin")

    assert report.pull.unchanged == 1 and not report.push.connected
    assert reads == []


@pytest.mark.parametrize("command", ["pull", "sync"])
def test_packs_piled_up_by_fetches_are_merged_in_the_background_after_a_pull(grown: Grower, tmp_path: Path, gs,
                                                                              command: str):
    import time

    from dulwich.objects import Blob

    from gitsessions.store.pack import AUTO_PACKS

    store = grown.store
    remote = init_bare(tmp_path / "R.git")
    Remotes(store).add("origin", str(remote))
    Remotes(store).push("origin")
    for i in range(AUTO_PACKS - 1):  # as that many fetches leave them (one pack is there already)
        store.repo().object_store.add_objects([(Blob.from_string(b"fetched %d\n" % i), None)])
    store.close()

    assert gs("--repo", str(store.path), command, "origin").code == 0  # starts gs gc --auto in the background

    deadline = time.monotonic() + 60
    while len(_packs(store.path)) > 1 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert len(_packs(store.path)) == 1, "the background repack did not run"
    _git(store.path, "fsck", "--strict")


def test_a_pull_lists_the_refs_here_as_often_for_many_new_sessions_as_for_few(tmp_path: Path,
                                                                               monkeypatch: pytest.MonkeyPatch):
    """The case check of each new session read every session ref here again: half of a 1,000-session clone."""
    monkeypatch.setattr("os.fsync", lambda fd: None)  # setup only: a slow disk is not under test
    source = GitStore(tmp_path / "source.git")
    for i in range(12):
        Grower(source, f"s{i:02d}").turns(1)
    few, many = init_bare(tmp_path / "few.git"), init_bare(tmp_path / "many.git")
    Remotes(source).push(str(few), only={"s00", "s01"})
    Remotes(source).push(str(many))
    listed: list[Path] = []
    scandir = os.scandir

    def counted(path=".") -> object:  # type: ignore[no-untyped-def]
        if not isinstance(path, int):  # shutil.rmtree scans folders by descriptor
            listed.append(Path(os.fsdecode(path)))
        return scandir(path)

    monkeypatch.setattr("os.scandir", counted)

    def lists_here(remote: Path) -> int:
        here = GitStore(tmp_path / f"from-{remote.stem}.git")
        listed.clear()
        report = Remotes(here).pull(str(remote))
        assert len(report.created) == len(_git(remote, "for-each-ref", "refs/heads/").splitlines())
        return listed.count(here.path / "refs" / "heads")

    assert lists_here(many) == lists_here(few)
