"""Sync when little changed: a no-op ``gs sync`` of 1,000 sessions, the
bytes one new turn sends, and the first ``gs list`` after ``gs clone`` of 200 x 5,000 messages.

Remotes are bare repos served by ``git daemon`` on 127.0.0.1 (tests/gitservers.py) and, for
the no-op sync, also reached as a local path. Each figure has a plain-git baseline from the
same run: ``git fetch`` + ``git push`` of the same repo; ``git push`` of the same turn;
``git for-each-ref`` over the clone.
"""

from __future__ import annotations

import json
import shutil
import time
import zlib
from collections.abc import Iterator
from pathlib import Path

from _common import (
    PY,
    Builder,
    FixtureStore,
    Settings,
    fast_import,
    fresh_dir,
    git,
    human_bytes,
    measure,
    measure_interleaved,
    row,
    run_cmd,
    section,
    target,
    turn_events,
    words,
)
from bench_cli import gs_cmd, gs_env
from gitservers import GitDaemon, init_bare

from gitsessions.log.events import encode_header, make_header
from gitsessions.store import GitStore
from gitsessions.store.remote.remotes import Remotes

N_SYNC = 1000
N_CLONE, CLONE_MESSAGES = 200, 5000
PUSH_TURNS = 400  # ~1 MB session before the new turn


def _received(bare: Path, had: set[str], packs_before: set[Path]) -> int:
    """Bytes of the objects ``bare`` keeps in new packs and did not hold before (bases that
    completed a thin pack were there already and are not counted)."""
    total = 0
    for pack in set((bare / "objects" / "pack").glob("*.pack")) - packs_before:
        for line in git(bare, "verify-pack", "-v", str(pack)).splitlines():
            fields = line.split()
            if len(fields) >= 5 and len(fields[0]) == 40 and fields[0] not in had:
                total += int(fields[3])
    return total


def _objects(bare: Path) -> set[str]:
    return set(git(bare, "cat-file", "--batch-all-objects", "--batch-check=%(objectname)").split())


# --------------------------------------------------------------------------- 7. no-op sync


def bench_noop_sync(s: Settings) -> None:
    section(f"7. gs sync with nothing to move, {N_SYNC} sessions (CLI subprocess) vs git fetch + git push")
    base = fresh_dir(s, "sync")
    local = base / "local.git"
    t0 = time.perf_counter()
    with FixtureStore(local) as store:
        for i in range(N_SYNC):
            b = Builder(store, f"s{i:04d}")
            b.save(turns=2, turn_size=1024)
            b.save(turns=1, turn_size=1024)
        store.gc()
    remote = init_bare(base / "remote.git")
    with GitStore(local) as store:
        Remotes(store).add("origin", str(remote))
        Remotes(store).push("origin")
    print(f"  {N_SYNC} sessions of 2 commits, packed, pushed once (setup {time.perf_counter() - t0:.1f} s)")
    env = gs_env(local, base)
    requests = base / "requests.log"  # one line per connection the git daemon serves: the service
    hook = base / "count-requests.sh"
    hook.write_text(f'#!/bin/sh\necho "$1" >> {requests}\n')
    hook.chmod(0o755)
    with GitDaemon(base, access_hook=hook) as daemon:
        url = daemon.url("remote.git")
        git(local, "remote", "add", "daemon", url)
        git(local, "fetch", "-q", "origin")
        git(local, "fetch", "-q", "daemon")
        for label, name in (("path", "origin"), ("git://", "daemon")):
            check = run_cmd(gs_cmd("sync", name), env=env)
            said = (check.stdout + check.stderr).decode().strip().splitlines()
            times = measure_interleaved({
                "gs": lambda n=name: run_cmd(gs_cmd("sync", n), env=env),
                "git": lambda n=name: (git(local, "fetch", "-q", n),
                                       git(local, "push", "-q", n, "refs/heads/*:refs/heads/*")),
                "py": lambda: run_cmd([PY, "-c", "pass"]),
            }, s.cli_reps)
            row(f"[{label}] gs sync {name}, whole process (said: {said[-1] if said else ''})", times["gs"].fmt())
            row(f"[{label}] git fetch + git push", times["git"].fmt())
            row("  python -c pass (the floor under gs)", times["py"].fmt())
            ratio = times["gs"].median / times["git"].median
            row(f"[{label}] gs / git", f"{ratio:.2f}x")
            target(s, f"no-op sync {N_SYNC} sessions [{label}]", f"{times['gs'].median * 1e3:.0f} ms",
                   "< 500 ms + one round trip", times["gs"].median < 0.5)
        _round_trips(local, env, requests)
        _sync_breakdown(s, local, url)


def _round_trips(local: Path, env: dict[str, str], requests: Path) -> None:
    """Connections the server gets for one no-op sync, against git fetch + git push's."""
    def served(fn) -> list[str]:
        requests.write_text("")
        fn()
        return requests.read_text().split()

    gs_calls = served(lambda: run_cmd(gs_cmd("sync", "daemon"), env=env))
    git_calls = served(lambda: (git(local, "fetch", "-q", "daemon"),
                                git(local, "push", "-q", "daemon", "refs/heads/*:refs/heads/*")))
    row("[git://] connections for one no-op gs sync", f"{len(gs_calls)} ({', '.join(gs_calls) or 'none'})")
    row("[git://] connections for git fetch + git push", f"{len(git_calls)} ({', '.join(git_calls) or 'none'})")


def _sync_breakdown(s: Settings, local: Path, url: str) -> None:
    """Where a no-op sync's time goes, in-process: the whole sync over a path and git://, and its steps."""
    def step(what: str, where: str = url) -> None:
        with GitStore(local) as store:  # a new store and Remotes each time: nothing cached, as in a new process
            getattr(Remotes(store), what)(where)

    row("  in-process Remotes.sync (path)", measure(lambda: step("sync", "origin"), s.reps).fmt())
    row("  in-process Remotes.sync (git://)", measure(lambda: step("sync"), s.reps).fmt())
    for what in ("fetch", "pull", "push"):
        row(f"  in-process Remotes.{what} (git://)", measure(lambda w=what: step(w), s.reps).fmt())
    with GitStore(local) as store:
        row("  in-process GitStore.list_sessions (for scale)", measure(store.list_sessions, s.reps).fmt())
    floor = measure(lambda: run_cmd(gs_cmd("--version")), s.cli_reps)
    row("  gs --version, whole process (start-up and exit, for scale)", floor.fmt())


# --------------------------------------------------------------------------- 8. one new turn


def bench_turn_bytes(s: Settings) -> None:
    section("8. bytes one new turn sends: gs push vs the turn's compressed size vs git push (git://)")
    base = fresh_dir(s, "turn")
    local = base / "local.git"
    with FixtureStore(local) as store:
        b = Builder(store, "w")
        for _ in range(PUSH_TURNS // 10):
            b.save(turns=10, turn_size=2048)
        store.gc()
    r1 = init_bare(base / "R1.git", keep_packs=True)
    r2 = init_bare(base / "R2.git", keep_packs=True)
    with GitDaemon(base) as daemon, GitStore(local) as store:
        for r in ("R1.git", "R2.git"):
            Remotes(store).push(daemon.url(r))
        before = {r: (_objects(r), set((r / "objects" / "pack").glob("*.pack"))) for r in (r1, r2)}
        size_before = len(store.read_raw("w", b.tip))
        b.store = store  # the new turn is saved as gs saves it (fsynced)
        b.save(turns=1, turn_size=2048)
        raw = store.read_raw("w", b.tip)
        added = raw[size_before:]
        t0 = time.perf_counter()
        report = Remotes(store).push(daemon.url("R1.git"))
        gs_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        git(local, "push", "-q", daemon.url("R2.git"), "refs/heads/w")
        git_s = time.perf_counter() - t0
    assert report.pushed == ["refs/heads/w"], report
    for r in (r1, r2):
        git(r, "fsck", "--strict")
    gs_bytes, git_bytes = _received(r1, *before[r1]), _received(r2, *before[r2])
    turn_z = len(zlib.compress(added))
    row("session.jsonl before the turn", f"{human_bytes(size_before)} ({human_bytes(len(zlib.compress(raw)))} "
        "compressed after)")
    row("the new turn: bytes appended / compressed (zlib -1)", f"{len(added)} B / {turn_z} B")
    row("gs push sent (new objects the server kept)", f"{gs_bytes} B in {gs_s * 1e3:.0f} ms")
    row("git push sent (same measure)", f"{git_bytes} B in {git_s * 1e3:.0f} ms")
    row("gs / compressed turn ; gs / git", f"{gs_bytes / turn_z:.2f}x ; {gs_bytes / git_bytes:.2f}x")
    row("server fsck --strict", "clean (both)")
    target(s, "one new turn: bytes sent", f"{gs_bytes} B = {gs_bytes / turn_z:.2f}x the turn compressed",
           "about the turn's compressed size (< 2x, commit and tree included)", gs_bytes < 2 * turn_z)


# --------------------------------------------------------------------------- 9. list after clone


def _build_clone_source(remote: Path) -> int:
    """``N_CLONE`` sessions of ``CLONE_MESSAGES`` messages, two commits each, via ``git fast-import``.

    One template of events (2,500 turns: user + assistant messages) is encoded once; each
    session has its own header (its id), commit messages carry gs's trailers. Returns the
    final ``session.jsonl`` size, bytes.
    """
    turns = CLONE_MESSAGES // 2
    chunks, seq = [], 0
    for t in range(1, turns + 1):
        evs = turn_events(seq, t, 700)
        chunks.append(b"".join(ev.encode() for ev in evs))
        seq += len(evs)
    body = b"".join(chunks)
    cut = len(body) - len(chunks[-1])
    size = 0

    def commits() -> Iterator[tuple[str, bytes, int, bytes]]:
        nonlocal size
        for k in range(N_CLONE):
            sid = f"c{k:03d}"
            header = encode_header(make_header(sid, created=1_735_732_800_000 + k, generator="benchmarks"))
            for n, (data, turn) in enumerate(((header + body[:cut], turns - 1), (header + body, turns))):
                size = len(data)
                msg = (f"turn {turn}: {words(40, salt=k)}\n\nSession: {sid}\nTurn: {turn}\nModel: gpt-4o-mini\n"
                       f"Messages: {2 * turn}\nTitle: clone benchmark {k}\n").encode()
                yield sid, msg, 1_735_732_800 + k * 10 + n, data

    fast_import(remote, commits())
    return size


def bench_list_after_clone(s: Settings) -> None:
    section(f"9. the first gs list after gs clone of {N_CLONE} sessions x {CLONE_MESSAGES} messages "
            "vs git for-each-ref")
    base = fresh_dir(s, "clone")
    remote = init_bare(base / "remote.git")
    t0 = time.perf_counter()
    size = _build_clone_source(remote)
    print(f"  remote built with git fast-import: {N_CLONE} sessions, 2 commits each, session.jsonl "
          f"{human_bytes(size)} each ({time.perf_counter() - t0:.1f} s)")
    cloned = base / "cloned.git"
    with GitDaemon(base) as daemon:
        t0 = time.perf_counter()
        run_cmd(gs_cmd("clone", daemon.url("remote.git"), str(cloned)), env=gs_env(cloned, base))
        row("gs clone (git://), once, for scale", f"{time.perf_counter() - t0:.1f} s")
    pristine = base / "pristine.git"
    shutil.copytree(cloned, pristine)
    fresh = base / "fresh.git"
    env = gs_env(fresh, base)

    def reset() -> None:
        shutil.rmtree(fresh, ignore_errors=True)
        shutil.copytree(pristine, fresh)

    rows = None

    def first_list() -> None:
        nonlocal rows
        rows = run_cmd(gs_cmd("list", "--json"), env=env).stdout

    t_gs = measure(first_list, s.cli_reps, setup=reset)
    listed = json.loads(rows or b"[]")
    assert len(listed) == N_CLONE and all(r["messages"] == CLONE_MESSAGES and not r["error"] for r in listed), \
        listed[:2]
    t_git = measure(lambda: run_cmd(["git", f"--git-dir={pristine}", "for-each-ref", "--format=%(refname) "
                                     "%(objectname) %(subject)"]), s.cli_reps)
    floor = measure(lambda: run_cmd([PY, "-c", "pass"]), s.cli_reps)
    row("first gs list --json after the clone (fresh copy each run)", t_gs.fmt())
    row("git for-each-ref (refname, commit, subject)", t_git.fmt())
    row("python -c pass (the floor under gs)", floor.fmt())
    row("gs / git", f"{t_gs.median / t_git.median:.1f}x")
    if not s.quick:
        # for the record: what the first list cost when it parsed every log (no received tips)
        reset()
        (fresh / "gs" / "received").unlink()
        t0 = time.perf_counter()
        run_cmd(gs_cmd("list", "--json"), env=env)
        row("  for the record: the same list parsing every log (once)", f"{time.perf_counter() - t0:.1f} s")
    target(s, f"first gs list after clone {N_CLONE}x{CLONE_MESSAGES}", f"{t_gs.median:.2f} s", "< 2 s",
           t_gs.median < 2.0)


def run(s: Settings, only: set[str]) -> None:
    if "sync" in only:
        bench_noop_sync(s)
    if "push" in only:
        bench_turn_bytes(s)
    if "clone" in only:
        bench_list_after_clone(s)
