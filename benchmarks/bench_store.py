"""In-process store benchmarks: save time vs git plumbing, opening a 10,000-event session,
repo size after packing."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from _common import (
    Builder,
    FixtureStore,
    Settings,
    Timing,
    dir_sizes,
    fresh_dir,
    git,
    git_env,
    human_bytes,
    measure,
    row,
    run_cmd,
    section,
    target,
    turn_events,
)

from gitsessions.log.commits import CommitMessage
from gitsessions.log.events import make_header, parse_log
from gitsessions.log.transcript import derive_messages
from gitsessions.store import GitStore

SAVE_SIZES = [("10 KB", 10 * 1024), ("1 MB", 1024 * 1024), ("5 MB", 5 * 1024 * 1024)]
SAVE_TURN_BYTES = 2048


# --------------------------------------------------------------------------- 1. save


class GitPlumbingSession:
    """A session saved the way a script over ``git`` would: the full new file through
    ``hash-object -w --stdin``, ``mktree``, ``commit-tree -p``, ``update-ref`` with the old value."""

    def __init__(self, repo: Path, ref: str = "refs/heads/s", extra_config: dict[str, str] | None = None):
        self.repo = repo
        self.ref = ref
        self.env = git_env()
        run_cmd(["git", "init", "--bare", "-q", str(repo)], env=self.env)
        git(repo, "config", "core.looseCompression", "1")
        git(repo, "config", "gc.auto", "0")
        for key, value in (extra_config or {}).items():
            git(repo, "config", key, value)
        self.tip: str | None = None
        self.content = b""

    def save(self, new_bytes: bytes, subject: str) -> str:
        content = self.content + new_bytes
        blob = git(self.repo, "hash-object", "-w", "--stdin", input=content).strip()
        tree = git(self.repo, "mktree", input=f"100644 blob {blob}\tsession.jsonl\n".encode()).strip()
        args = ["commit-tree", tree, "-m", subject]
        if self.tip:
            args += ["-p", self.tip]
        commit = git(self.repo, *args).strip()
        git(self.repo, "update-ref", "-m", "commit: " + subject, self.ref, commit, self.tip or "0" * 40)
        self.tip, self.content = commit, content
        return commit


def _grow(builder: Builder, size: int) -> None:
    """Bring a session to ``size`` bytes in a handful of commits (one big one, then turns)."""
    turn_size = 2048
    first_turns = max(1, (size - 8 * turn_size) // turn_size)
    builder.save(turns=first_turns, turn_size=turn_size)
    while builder.size < size:
        builder.save(turns=1, turn_size=turn_size)


def bench_save(s: Settings) -> None:
    section("1. time per save: GitStore.append of one ~2 KB turn vs git plumbing (full new file)")
    print("  Every repetition saves a new, distinct turn onto the same base commit (the branch is reset\n"
          "  to the base, untimed, between repetitions), so the file size stays as labelled.\n"
          "  gs warm: GitStore.append in a long-lived store (as gs chat/ask do: the session was loaded\n"
          "  when opened, so the previous file is in memory); gs cold: a fresh GitStore, so append\n"
          "  first reads and parses the tip's blob.\n"
          "  git: hash-object -w --stdin | mktree | commit-tree -p | update-ref <new> <old>, 4 processes.\n"
          "  Both repos: bare, core.looseCompression=1, gc.auto=0. gs fsyncs each object file;\n"
          "  git 2.36+ by default does not fsync loose objects, so a 'git+fsync' row sets\n"
          "  core.fsync=loose-object,reference (same durability as gs).")
    reps = s.reps * 2 if not s.quick else s.reps
    probe = fresh_dir(s, "fsync-probe")
    n = [0]

    def write_fsync() -> None:
        n[0] += 1
        with open(probe / f"f{n[0]}", "wb") as f:
            f.write(b"x" * 4096)
            f.flush()
            os.fsync(f.fileno())

    row("context: write + fsync of a 4 KB file (disk latency)", measure(write_fsync, 20).fmt())
    print("  (a gs save fsyncs 4 files: blob, tree, commit, ref; git by default none)")
    for label, size in SAVE_SIZES:
        _save_at(s, label, size, reps)


def _save_at(s: Settings, label: str, size: int, reps: int) -> None:
    ref = b"refs/heads/s"
    base = fresh_dir(s, f"save-{label.replace(' ', '')}")
    # --- gs
    fx = FixtureStore(base / "gs.git")
    b = Builder(fx, "s")
    _grow(b, size)
    fx.close()
    store = GitStore(base / "gs.git")
    base_tip, base_seq = b.tip, b.seq
    base_raw = store.read_raw("s", base_tip)
    turn_no = [b.turn + 1000]

    def reset_gs(st: GitStore = store) -> None:
        st.repo().refs.set_if_equals(ref, None, base_tip.encode())
        st.load("s", base_tip)  # what open_session did: the tip is in memory

    def gs_save() -> None:
        turn_no[0] += 1
        evs = turn_events(base_seq, turn_no[0], SAVE_TURN_BYTES)
        msg = CommitMessage(f"turn {turn_no[0]}: a prompt", {"Session": "s", "Turn": str(turn_no[0])})
        store.append("s", evs, msg, expected_tip=base_tip)

    t_gs = measure(gs_save, reps, setup=reset_gs)
    last_gs = store.read_raw("s", store.tip("s"))

    def reset_cold() -> None:
        store.repo().refs.set_if_equals(ref, None, base_tip.encode())

    def gs_cold_save() -> None:
        cold = GitStore(base / "gs.git")
        try:
            turn_no[0] += 1
            evs = turn_events(base_seq, turn_no[0], SAVE_TURN_BYTES)
            msg = CommitMessage(f"turn {turn_no[0]}: a prompt", {"Session": "s"})
            cold.append("s", evs, msg, expected_tip=base_tip)
        finally:
            cold.close()

    t_gs_cold = measure(gs_cold_save, reps, setup=reset_cold)
    store.close()

    # --- git plumbing (same starting content)
    results: dict[str, Timing] = {}
    fsck_git = None
    for name, extra in (("git", None),
                        ("git+fsync", {"core.fsync": "loose-object,reference", "core.fsyncMethod": "fsync"})):
        g = GitPlumbingSession(base / f"{name}.git", extra_config=extra)
        g.save(base_raw, "initial")
        g_base_tip, g_base_content = g.tip, g.content
        k = [0]

        def reset_git(g: GitPlumbingSession = g, tip: str = g_base_tip, content: bytes = g_base_content) -> None:
            git(g.repo, "update-ref", g.ref, tip)
            g.tip, g.content = tip, content

        def git_save(g: GitPlumbingSession = g, k: list[int] = k) -> None:
            k[0] += 1
            evs = turn_events(base_seq, turn_no[0] + 10_000 + k[0], SAVE_TURN_BYTES)
            g.save(b"".join(e.encode() for e in evs), f"turn {k[0]}: a prompt")

        results[name] = measure(git_save, reps, setup=reset_git)
        if name == "git":
            fsck_git = subprocess.run(["git", f"--git-dir={g.repo}", "fsck", "--strict"],
                                      env=git_env(), capture_output=True)
    fsck_gs = subprocess.run(["git", f"--git-dir={base / 'gs.git'}", "fsck", "--strict"],
                             env=git_env(), capture_output=True)
    print(f"\n  session of {label}: base file {human_bytes(len(base_raw))}, saved file "
          f"{human_bytes(len(last_gs))} (+{human_bytes(len(last_gs) - len(base_raw))} per save):")
    row("gs   GitStore.append (warm store)", t_gs.fmt())
    row("gs   GitStore.append (cold: new store, reads tip)", t_gs_cold.fmt())
    row("git  plumbing, 4 processes", results["git"].fmt())
    row("git  plumbing + fsync loose objects/refs", results["git+fsync"].fmt())
    ratio = t_gs.median / results["git"].median
    ratio_cold = t_gs_cold.median / results["git"].median
    row("ratio gs/git (warm | cold)", f"{ratio:.2f}x | {ratio_cold:.2f}x   "
        f"(warm vs git+fsync: {t_gs.median / results['git+fsync'].median:.2f}x)")
    clean_gs = fsck_gs.returncode == 0 and not fsck_gs.stderr.strip()
    row("git fsck --strict (gs repo | git repo)",
        f"{'clean' if clean_gs else 'PROBLEMS: ' + fsck_gs.stderr.decode()[:300]}"
        f" | {'clean' if fsck_git.returncode == 0 else 'PROBLEMS'}")
    target(s, f"save at {label}", f"gs {t_gs.median * 1e3:.1f} ms vs git {results['git'].median * 1e3:.1f} ms "
           f"= {ratio:.2f}x (cold {ratio_cold:.2f}x)", "gs faster than git plumbing (< 1.0x)", ratio < 1.0)


def profile_save(s: Settings, size: int = 5 * 1024 * 1024) -> None:
    """Where a warm save's time goes at ``size`` (cProfile, top functions by own time)."""
    import cProfile
    import io
    import pstats

    base = fresh_dir(s, "save-profile")
    fx = FixtureStore(base / "gs.git")
    b = Builder(fx, "s")
    _grow(b, size)
    fx.close()
    store = GitStore(base / "gs.git")
    store.load("s", b.tip)  # as open_session does: the tip is in memory before the first save
    pr = cProfile.Profile()
    for i in range(5):
        evs = turn_events(b.seq, b.turn + 1 + i, SAVE_TURN_BYTES)
        msg = CommitMessage(f"turn {b.turn + 1 + i}: p", {"Session": "s"})
        pr.enable()
        b.tip = store.append("s", evs, msg, expected_tip=b.tip)
        pr.disable()
        b.seq += len(evs)
    store.close()
    out = io.StringIO()
    pstats.Stats(pr, stream=out).sort_stats("tottime").print_stats(8)
    print(f"\n  cProfile of 5 warm saves at {human_bytes(size)} (top by own time):")
    for line in out.getvalue().splitlines():
        if line.strip() and not line.startswith(("   Ordered", "         ")) or "ncalls" in line:
            print("    " + line[:150])


# --------------------------------------------------------------------------- 2. open


def bench_open(s: Settings) -> None:
    section("2. open a 10,000-event session: GitStore.load + transcript.derive_messages")
    base = fresh_dir(s, "open")
    store = FixtureStore(base / "gs.git")
    b = Builder(store, "big")
    # 10,000 events: turns of 6 events, every 5th turn with a tool call (9 events),
    # saved in 40 commits, ~1.3 KB per turn.
    while b.seq < 10_000:
        b.save(turns=40, turn_size=1300, tools_every=5)
    store.close()
    n_events = b.seq

    def one_open(path: Path) -> tuple[float, float, float, float]:
        st = GitStore(path)
        try:
            t0 = time.perf_counter()
            tip = st.tip("big")
            raw = st.read_raw("big", tip)
            t1 = time.perf_counter()
            parsed = parse_log(raw, "big")
            t2 = time.perf_counter()
            msgs = derive_messages(parsed.events)
            t3 = time.perf_counter()
            assert len(parsed.events) == n_events and msgs
        finally:
            st.close()
        return t1 - t0, t2 - t1, t3 - t2, t3 - t0

    def open_full(path: Path) -> None:
        st = GitStore(path)
        try:
            snap = st.load("big")
            derive_messages(snap.events)
        finally:
            st.close()

    for state in ("loose", "packed"):
        _open_state(s, state, base, b, one_open, open_full)


def _open_state(s: Settings, state: str, base: Path, b: Builder, one_open, open_full) -> None:
    n_events, size = b.seq, b.size
    if state == "packed":
        with GitStore(base / "gs.git") as st:
            res = st.gc()
        print(f"\n  (gc: {res.objects} objects, {res.deltas} deltas, depth <= {res.max_depth}, "
              f"{human_bytes(res.pack_bytes)} pack, {res.seconds * 1e3:.0f} ms)")
    t = measure(lambda: open_full(base / "gs.git"), s.reps * 2)
    parts = [one_open(base / "gs.git") for _ in range(s.reps)]
    med = lambda i: sorted(p[i] for p in parts)[len(parts) // 2] * 1e3  # noqa: E731
    print(f"\n  {n_events} events, {human_bytes(size)} session.jsonl, {b.turn} turns, objects {state}:")
    row("load + derive_messages (fresh GitStore each time)", t.fmt())
    row("  of which: read blob | parse_log | derive_messages",
        f"{med(0):.1f} ms | {med(1):.1f} ms | {med(2):.1f} ms")
    if state == "loose":
        import json

        with GitStore(base / "gs.git") as st:
            raw = st.read_raw("big", st.tip("big"))
        lines = raw.split(b"\n")[:-1]
        t_lines = measure(lambda: [json.loads(x) for x in lines], s.reps * 2)
        t_array = measure(lambda: json.loads(b"[" + b",".join(lines) + b"]"), s.reps * 2)
        row("  context: json.loads line by line (as parse_log)", t_lines.fmt())
        row("  context: json.loads of all lines as one array", t_array.fmt())
    target(s, f"open 10k events ({state})", f"{t.median * 1e3:.1f} ms", "< 150 ms", t.median < 0.150)


# --------------------------------------------------------------------------- 5. size


def bench_size(s: Settings) -> None:
    section("5. repo size: a session grown over 300 saves to ~1 MB, loose vs after GitStore.gc()")
    base = fresh_dir(s, "size")
    repo = base / "gs.git"
    store = GitStore(repo)
    b = Builder(store, "grown")
    saves = 300
    per_save = (1024 * 1024) // saves  # ~3.4 KB per save
    t0 = time.perf_counter()
    for _ in range(saves):
        b.save(turns=1, turn_size=per_save)
    build_s = time.perf_counter() - t0
    store.close()
    final = b.size
    files, apparent, allocated = dir_sizes(repo / "objects")
    print(f"  {saves} saves in {build_s:.1f} s ({build_s / saves * 1e3:.1f} ms/save); "
          f"final session.jsonl {human_bytes(final)}")
    row("objects/ before packing (loose)",
        f"{files} files, {human_bytes(apparent)} apparent, {human_bytes(allocated)} on disk "
        f"= {apparent / final:.1f}x the file")
    with GitStore(repo) as st:
        t0 = time.perf_counter()
        res = st.gc()
        gc_s = time.perf_counter() - t0
    files, apparent, allocated = dir_sizes(repo / "objects")
    row("GitStore.gc()", f"{gc_s * 1e3:.0f} ms: {res.objects} objects, {res.deltas} deltas, "
        f"max depth {res.max_depth}, removed {res.loose_removed} loose")
    row("objects/ after packing", f"{files} files, {human_bytes(apparent)} apparent, "
        f"{human_bytes(allocated)} on disk")
    ratio = apparent / final
    row("ratio objects after packing / final file", f"{ratio:.2f}x")
    # Opening the packed tip (delta chain) must stay fast.
    t_open = measure(lambda: _open(repo, "grown"), s.reps)
    row("open tip after packing (load + derive)", t_open.fmt())
    # For context: what git's own gc makes of the same repo (a copy).
    import shutil

    copy = base / "git-gc-copy.git"
    shutil.copytree(repo, copy)
    t0 = time.perf_counter()
    git(copy, "gc", "--prune=now", "-q")
    git_gc_s = time.perf_counter() - t0
    _, g_apparent, _ = dir_sizes(copy / "objects")
    row("for context: `git gc` on a copy of the packed repo", f"{human_bytes(g_apparent)} "
        f"({g_apparent / final:.2f}x) in {git_gc_s * 1e3:.0f} ms")
    fsck = subprocess.run(["git", f"--git-dir={repo}", "fsck", "--strict"], env=git_env(),
                          capture_output=True, text=True)
    print(f"\n  $ git fsck --strict   (exit {fsck.returncode})")
    for line in (fsck.stdout + fsck.stderr).strip().splitlines() or ["(no output: clean)"]:
        print("    " + line)
    print("  $ git count-objects -v")
    for line in git(repo, "count-objects", "-v").strip().splitlines():
        print("    " + line)
    target(s, "objects after packing / final file", f"{ratio:.2f}x "
           f"({human_bytes(apparent)} vs {human_bytes(final)})", "< 3x", ratio < 3.0)
    target(s, "git fsck --strict after packing", "clean" if fsck.returncode == 0 and not fsck.stderr.strip()
           else "problems", "clean", fsck.returncode == 0 and not fsck.stderr.strip())


def _open(repo: Path, sid: str) -> None:
    with GitStore(repo) as st:
        derive_messages(st.load(sid).events)


def run(s: Settings, only: set[str]) -> None:
    if "save" in only:
        bench_save(s)
        if not s.quick:
            profile_save(s)
    if "open" in only:
        bench_open(s)
    if "size" in only:
        bench_size(s)


__all__ = ["run", "make_header"]
