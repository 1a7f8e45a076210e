"""The segmented loose blob (store/loose.py): whatever its bytes, it holds what a plain zlib write
holds, and git (cat-file, fsck --strict), dulwich and the repacks read it, over many saves."""

from __future__ import annotations

import random
import subprocess
import zlib
from pathlib import Path

import pytest
from dulwich.objects import Blob

from gitsessions.log.commits import CommitMessage
from gitsessions.log.events import make_event, make_header
from gitsessions.store import GitStore
from gitsessions.store.loose import SEGMENT, ZLIB_HEADER, Deflated, adler32_combine, blob_header, deflate_segment


def _text(rng: random.Random, n: int) -> str:
    """``n`` characters of JSON-friendly prose with some non-ASCII, compressible like chat text."""
    words = ["the", "session", "parse", "YAML", "json.loads", "✓", "日本", "tool", "result", "line\n"]
    out: list[str] = []
    size = 0
    while size < n:
        w = rng.choice(words) if rng.random() < 0.9 else str(rng.random())
        out.append(w)
        size += len(w) + 1
    return " ".join(out)[:n]


def test_adler32_combine_is_zlibs():
    rng = random.Random(7)
    cases = [(b"", b""), (b"a", b""), (b"", b"b"), (b"\xff" * 70_000, b"\xff" * 131_071)]
    cases += [(rng.randbytes(rng.randrange(0, 3000)), rng.randbytes(rng.randrange(0, 200_000))) for _ in range(50)]
    for a, b in cases:
        assert adler32_combine(zlib.adler32(a), zlib.adler32(b), len(b)) == zlib.adler32(a + b)


def test_grown_holds_what_one_stream_holds():
    """Growing by pieces of every size (nothing, a few bytes, several segments at once) gives a
    stream zlib reads as exactly the object a plain one-stream write compresses."""
    rng = random.Random(11)
    content = b""
    state = Deflated(1)
    kept = []
    for _ in range(60):
        size = rng.choice([0, 1, 50, 700, 5000, 5000, SEGMENT - 1, SEGMENT, SEGMENT + 1, 3 * SEGMENT + 17])
        content += _text(rng, size).encode()
        before = state
        state = state.grown(content)
        stream = b"".join(state.loose_object())
        plain = zlib.compress(blob_header(len(content)) + content, 1)  # what dulwich and git write
        assert zlib.decompress(stream) == zlib.decompress(plain)
        # a frozen segment is never compressed again: its bytes are the earlier state's
        assert state.frozen[: len(before.frozen)] == before.frozen
        assert all(len(seg) > 0 for seg in state.frozen)
        kept.append((content, state))
    assert len(state.frozen) == len(content) // SEGMENT
    # an older state stays valid after newer ones were made from it (a save onto an older tip)
    old_content, old_state = kept[30]
    assert zlib.decompress(b"".join(old_state.loose_object())) == blob_header(len(old_content)) + old_content
    with pytest.raises(ValueError):
        state.grown(content[:-1])


def _loose_file(repo: Path, sha: str) -> bytes:
    return (repo / "objects" / sha[:2] / sha[2:]).read_bytes()


def _git(repo: Path, *args: str, input_bytes: bytes | None = None) -> bytes:
    proc = subprocess.run(["git", "-C", str(repo), *args], input=input_bytes, capture_output=True)
    assert proc.returncode == 0, f"git {' '.join(args)}: {proc.stderr.decode()}"
    return proc.stdout


def _fsck(repo: Path) -> None:
    proc = subprocess.run(["git", "-C", str(repo), "fsck", "--strict", "--full"], capture_output=True, text=True)
    assert proc.returncode == 0 and "error" not in proc.stderr and "warning" not in proc.stderr, proc.stderr


def _save(store: GitStore, sid: str, tip: str | None, seq: int, content: str) -> str:
    ev = make_event(seq, "user/message", {"content": content}, time_ms=1_735_732_800_000 + seq)
    return store.append(sid, [ev], CommitMessage(f"turn {seq}: x", {"Session": sid}), expected_tip=tip,
                        header=make_header(sid, created=1_735_732_800_000) if tip is None else None)


def _check_blobs(repo: Path, saved: list[tuple[str, bytes]]) -> None:
    """Every saved log reads back through git and through a fresh dulwich store, byte for byte."""
    names = b"".join(f"{commit}:session.jsonl\n".encode() for commit, _ in saved)
    out = subprocess.run(["git", "-C", str(repo), "cat-file", "--batch"], input=names, capture_output=True,
                         check=True).stdout
    at = 0
    with GitStore(repo) as fresh:
        for commit, raw in saved:
            end = out.index(b"\n", at)
            assert out[at:end].endswith(b" blob %d" % len(raw)), out[at:end]
            assert out[end + 1:end + 1 + len(raw)] == raw
            at = end + 2 + len(raw)
            assert fresh.read_raw("s", commit) == raw


def test_segmented_saves_are_plain_git_objects(repo_path: Path):
    """Many saves of one long-lived store (each reusing the last one's segments), saves onto an
    older tip, a full repack and an incremental one: git and dulwich read every log, fsck is clean."""
    rng = random.Random(3)
    store = GitStore(repo_path)
    tip, seq, saved = None, 0, []
    for _ in range(30):
        tip = _save(store, "s", tip, seq, _text(rng, rng.choice([100, 3000, 20_000, SEGMENT + 5000])))
        seq += 1
        raw = store.read_raw("s", tip)
        saved.append((tip, raw))
        sha = _git(repo_path, "rev-parse", f"{tip}:session.jsonl").decode().strip()
        assert sha == Blob.from_string(raw).id.decode()
        loose = _loose_file(repo_path, sha)
        assert zlib.decompress(loose) == blob_header(len(raw)) + raw
        # written from segments: the header line is a segment of its own
        assert loose.startswith(ZLIB_HEADER + deflate_segment(blob_header(len(raw)), 1))
    assert len(saved[-1][1]) > 5 * SEGMENT
    # the next save's object begins with this one's frozen segments, reused byte for byte
    prev_raw = saved[-1][1]
    prev = _loose_file(repo_path, Blob.from_string(prev_raw).id.decode())
    tip = _save(store, "s", tip, seq, "one more")
    seq += 1
    raw = store.read_raw("s", tip)
    saved.append((tip, raw))
    new = _loose_file(repo_path, Blob.from_string(raw).id.decode())
    reused = (len(prev_raw) // SEGMENT) * SEGMENT
    start = len(ZLIB_HEADER) + len(deflate_segment(blob_header(len(raw)), 1))
    start_prev = len(ZLIB_HEADER) + len(deflate_segment(blob_header(len(prev_raw)), 1))
    frozen = b"".join(deflate_segment(prev_raw[i:i + SEGMENT], 1) for i in range(0, reused, SEGMENT))
    assert new[start:start + len(frozen)] == prev[start_prev:start_prev + len(frozen)] == frozen
    _fsck(repo_path)
    _check_blobs(repo_path, saved)

    # a save onto an older commit (the branch moved back, as after a lost race) reuses its state
    old_tip, old_raw = saved[20]
    store.repo().refs.set_if_equals(b"refs/heads/s", tip.encode(), old_tip.encode())
    branch = _save(store, "s", old_tip, 21, "another future")
    assert store.read_raw("s", branch).startswith(old_raw)
    saved.append((branch, store.read_raw("s", branch)))
    _fsck(repo_path)

    store.gc(incremental=True)  # what the automatic repack writes: new saves as deltas (thinpack)
    tip, seq = branch, 22
    for _ in range(5):
        tip = _save(store, "s", tip, seq, _text(rng, 10_000))
        seq += 1
        saved.append((tip, store.read_raw("s", tip)))
    store.gc()  # everything into one delta pack
    tip = _save(store, "s", tip, seq, "after the repack")
    saved.append((tip, store.read_raw("s", tip)))
    store.close()
    _fsck(repo_path)
    _check_blobs(repo_path, saved)


def test_blobs_git_packed_itself_read_without_dulwich(repo_path: Path):
    """Loose objects git wrote and packs git made (its own deltas, OFS and REF) are read by the
    store's own reader (store/unpack.py), byte for byte what git shows."""
    from gitsessions.store.unpack import read_blob

    rng = random.Random(5)
    store = GitStore(repo_path)
    tip, saved = None, []
    for seq in range(12):
        tip = _save(store, "s", tip, seq, _text(rng, 30_000))
        saved.append(tip)
    store.close()
    blobs = [_git(repo_path, "rev-parse", f"{c}:session.jsonl").decode().strip() for c in saved]
    extra = _git(repo_path, "hash-object", "-w", "--stdin", input_bytes=b"written by git\n" * 5000).decode().strip()
    for packing in ((), ("repack", "-adf", "--depth=50", "--window=50"),  # OFS_DELTA
                    ("-c", "pack.useDeltaBaseOffset=false", "repack", "-adF")):  # REF_DELTA
        if packing:
            _git(repo_path, *packing)
        with GitStore(repo_path) as fresh:
            repo = fresh.repo()
            for sha in [*blobs, extra]:
                got = read_blob(repo, sha.encode())
                assert got is not None and got == _git(repo_path, "cat-file", "blob", sha)
        if packing:
            idx = [str(p) for p in (repo_path / "objects" / "pack").glob("*.idx")]
            listing = _git(repo_path, "verify-pack", "-v", *idx).decode().splitlines()
            assert any(len(line.split()) == 7 and line.split()[1] == "blob" for line in listing), "no blob deltas"


def test_saves_that_share_a_buffer_never_change_an_earlier_log(repo_path: Path):
    """The saves of one store append to one buffer in place; a save onto an older commit (a lost
    race, a branch moved back) and one after a refused save get logs of their own, and every
    earlier log still reads as it was saved."""
    store = GitStore(repo_path)
    a = _save(store, "s", None, 0, "first")
    raw_a = store.read_raw("s", a)
    b = _save(store, "s", a, 1, "second")
    raw_b = store.read_raw("s", b)
    store.repo().refs.set_if_equals(b"refs/heads/s", b.encode(), a.encode())
    c = _save(store, "s", a, 1, "another second")  # onto a, still kept, whose buffer b grew
    d = _save(store, "s", c, 2, "third")
    store.repo().refs.set_if_equals(b"refs/heads/s", d.encode(), b.encode())
    e = _save(store, "s", b, 2, "after b")
    for commit, before in ((a, raw_a), (b, raw_b)):
        assert store.read_raw("s", commit) == before
    assert store.read_raw("s", c).startswith(raw_a) and b"another second" in store.read_raw("s", c)
    assert b'"content":"second"' not in store.read_raw("s", c)
    assert store.read_raw("s", e).startswith(raw_b) and store.read_raw("s", d).startswith(store.read_raw("s", c))
    store.close()
    _check_blobs(repo_path, [(x, raw) for x, raw in ((a, raw_a), (b, raw_b))])
    with GitStore(repo_path) as fresh:
        assert [len(fresh.load("s", x).events) for x in (a, b, c, d, e)] == [1, 2, 2, 3, 3]
    _fsck(repo_path)


def test_a_delta_that_does_not_fit_its_base_is_damage_for_both_appliers():
    """The compiled applier (dulwich's) and the store's own refuse the same deltas, as ValueError,
    so read_blob hands damage to dulwich either way; a sound delta makes the same bytes."""
    from gitsessions.store.unpack import _apply, apply_delta

    base = bytes(range(100))
    bad = {"base size": bytes([50, 10, 0x90, 10]), "past the end": bytes([100, 20, 0x91, 95, 20]),
           "target size": bytes([100, 11, 0x90, 10]), "op 0": bytes([100, 1, 0])}
    for delta in bad.values():
        for applier in (_apply, apply_delta):
            with pytest.raises(ValueError):
                applier(base, delta)
    sound = bytes([100, 13, 0x91, 5, 10, 3]) + b"new"  # copy 10 bytes from 5, insert 3
    assert _apply(base, sound) == apply_delta(base, sound) == bytes(range(5, 15)) + b"new"


def test_a_pack_a_repack_takes_away_while_blobs_are_read_is_read_from_the_one_replacing_it(repo_path: Path):
    """A background ``gs gc`` (``git repack -adf``) deletes packs a reader has just listed: every
    read still gives the blob (dulwich looks again), never a PackFileDisappeared (an import
    crashed so, exit 70)."""
    import threading

    from gitsessions.store.unpack import read_blob

    store = GitStore(repo_path)
    tip, saved = None, []
    for seq in range(6):
        tip = _save(store, "s", tip, seq, f"turn {seq}\n" * 2000)
        saved.append(tip)
        _git(repo_path, "repack", "-dq")  # a pack per save, as an import leaves them
    store.close()
    blobs = [_git(repo_path, "rev-parse", f"{c}:session.jsonl").strip() for c in saved]
    want = {sha: _git(repo_path, "cat-file", "blob", sha.decode()) for sha in blobs}
    done, errors = threading.Event(), []

    def repack() -> None:
        while not done.is_set():
            subprocess.run(["git", f"--git-dir={repo_path}", "repack", "-adfq"], check=True)

    with GitStore(repo_path) as reader:
        worker = threading.Thread(target=repack)
        worker.start()
        try:
            for _ in range(300):
                for sha, content in want.items():
                    try:
                        got = read_blob(reader.repo(), sha)
                    except Exception as exc:  # the defect: PackFileDisappeared
                        errors.append(exc)
                        continue
                    assert got in (None, content)  # None: dulwich reads it
                    if got is None:
                        assert reader.repo().object_store[sha].as_raw_string() == content
        finally:
            done.set()
            worker.join()
    assert not errors, errors[:3]
