"""``gs list`` over 1,000 sessions and ``gs log`` over 1,000 commits: the real CLI as a
subprocess and the store call in-process, with loose objects and after packing."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

from _common import (
    PY,
    Builder,
    FixtureStore,
    Settings,
    fresh_dir,
    measure,
    parse_importtime,
    row,
    run_cmd,
    section,
    target,
)

from gitsessions.store import GitStore

N_SESSIONS = 1000
N_COMMITS = 1000


def gs_env(repo: Path, tmp: Path) -> dict[str, str]:
    """Environment for a gs subprocess: this repo, no user config, no API settings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GS_"))}
    env["GS_REPO"] = str(repo)
    env["GS_CONFIG"] = str(tmp / "no-config.yaml")
    return env


def gs_cmd(*args: str) -> list[str]:
    return [PY, "-m", "gitsessions", *args]


def baseline_python(s: Settings) -> float:
    """Median wall time of ``python -c pass`` — the floor under every CLI figure."""
    t = measure(lambda: run_cmd([PY, "-c", "pass"]), s.cli_reps)
    return t.median


def bench_list(s: Settings) -> None:
    section(f"3. gs list with {N_SESSIONS} sessions (CLI subprocess and in-process list_sessions)")
    base = fresh_dir(s, "list")
    repo = base / "gs.git"
    t0 = time.perf_counter()
    with FixtureStore(repo) as store:
        for i in range(N_SESSIONS):
            Builder(store, f"s{i:04d}").save(turns=1, turn_size=1024)
    print(f"  created {N_SESSIONS} sessions (1 commit each) via GitStore.append (no fsync) in "
          f"{time.perf_counter() - t0:.1f} s")
    env = gs_env(repo, base)
    floor = baseline_python(s)
    row("floor: python -c pass", f"median {floor * 1e3:9.2f} ms")
    for state in ("loose", "packed"):
        if state == "packed":
            with GitStore(repo) as st:
                st.gc()
        out = run_cmd(gs_cmd("list", "--json"), env=env).stdout
        rows = json.loads(out)
        assert len(rows) == N_SESSIONS and not any(r["error"] for r in rows), "gs list output wrong"
        t_cli = measure(lambda: run_cmd(gs_cmd("list", "--json"), env=env), s.cli_reps)
        t_txt = measure(lambda: run_cmd(gs_cmd("list"), env=env), s.cli_reps)

        def in_process() -> None:
            with GitStore(repo) as st:
                assert len(st.list_sessions()) == N_SESSIONS

        t_in = measure(in_process, s.reps)
        print(f"\n  objects {state}, {N_SESSIONS} loose refs:")
        row("CLI  python -m gitsessions list --json", t_cli.fmt())
        row("CLI  python -m gitsessions list (table)", t_txt.fmt())
        row("in-process GitStore.list_sessions()", t_in.fmt())
        row("CLI minus python startup floor", f"{(t_cli.median - floor) * 1e3:.1f} ms")
        target(s, f"gs list 1000 sessions, CLI ({state})", f"{t_cli.median * 1e3:.0f} ms", "< 1 s",
               t_cli.median < 1.0)
    _profile_in_process("list_sessions (packed)", lambda: _with_store(repo, lambda st: st.list_sessions()))
    _importtime(gs_cmd("list", "--json"), env, "list --json")


def bench_log(s: Settings) -> None:
    section(f"4. gs log of a session with {N_COMMITS} commits (CLI subprocess and in-process)")
    base = fresh_dir(s, "log")
    repo = base / "gs.git"
    t0 = time.perf_counter()
    with FixtureStore(repo) as store:
        b = Builder(store, "long")
        for _ in range(N_COMMITS):
            b.save(turns=1, turn_size=300)
            if store.pack_due():  # as gs does after a save (there: in a background process)
                store.gc()
    print(f"  created {N_COMMITS} commits via GitStore.append (no fsync) in {time.perf_counter() - t0:.1f} s "
          f"(repacking whenever pack_due(), as gs does); final file {b.size / 1024:.0f} KiB")
    env = gs_env(repo, base)
    with GitStore(repo) as st:
        st.gc()
    out = json.loads(run_cmd(gs_cmd("log", "long", "--json"), env=env).stdout)
    assert len(out) == N_COMMITS, len(out)
    cases = [("log long (all 1000, text)", ["log", "long"]),
             ("log long --json (all 1000)", ["log", "long", "--json"]),
             ("log long --oneline", ["log", "long", "--oneline"]),
             ("log long -n 5", ["log", "long", "-n", "5"])]
    for label, args in cases:
        t = measure(lambda args=args: run_cmd(gs_cmd(*args), env=env), s.cli_reps)
        row(f"CLI  gs {label}", t.fmt())

    def in_process(limit: int | None) -> None:
        with GitStore(repo) as st:
            st.log("long", limit=limit)

    row("in-process GitStore.log() all 1000", measure(lambda: in_process(None), s.reps).fmt())
    row("in-process GitStore.log(limit=5)", measure(lambda: in_process(5), s.reps).fmt())
    row("for context: git log --format=%H%s long | wc -l",
        measure(lambda: run_cmd(["git", f"--git-dir={repo}", "log", "--format=%H %s", "long"]),
                s.cli_reps).fmt())
    _profile_in_process("GitStore.log all 1000 (packed)", lambda: _with_store(repo, lambda st: st.log("long")))


def _with_store(repo: Path, fn):
    with GitStore(repo) as st:
        return fn(st)


def _profile_in_process(label: str, fn) -> None:
    import cProfile
    import io
    import pstats

    pr = cProfile.Profile()
    pr.enable()
    fn()
    pr.disable()
    out = io.StringIO()
    st = pstats.Stats(pr, stream=out)
    st.sort_stats("tottime").print_stats(6)
    print(f"\n  cProfile of {label}, top by own time (total {st.total_tt * 1e3:.0f} ms under the profiler):")
    keep = False
    for line in out.getvalue().splitlines():
        if "ncalls" in line:
            keep = True
        if keep and line.strip():
            print("    " + line[:160])


def _importtime(argv: list[str], env: dict[str, str], label: str, top: int = 12) -> None:
    """Print the heaviest imports of one CLI run and whether heavy UI/model libraries load."""
    proc = run_cmd([argv[0], "-X", "importtime", *argv[1:]], env=env)
    entries = parse_importtime(proc.stderr.decode())
    total = sum(e[1] for e in entries)
    names = {e[0] for e in entries}
    heavy = [m for m in ("openai", "httpx", "prompt_toolkit", "rich", "pydantic", "llama_cpp", "yaml",
                         "typer", "click", "dulwich") if m in names]
    print(f"\n  python -X importtime -m gitsessions {label}: {len(entries)} modules, "
          f"{total / 1e3:.0f} ms total self time of imports")
    print(f"    heavy packages imported: {', '.join(heavy) or 'none'}"
          f"   (must be absent: openai, prompt_toolkit -> "
          f"{'OK' if not {'openai', 'prompt_toolkit'} & names else 'PRESENT'})")
    tops = [e for e in entries if e[3] <= 2]
    tops.sort(key=lambda e: -e[2])
    print(f"    top {top} by cumulative time (top-level and first-nested imports):")
    for name, _self, cum, indent in tops[:top]:
        print(f"      {cum / 1e3:8.1f} ms  {'  ' * (indent // 2)}{name}")


def run(s: Settings, only: set[str]) -> None:
    if "list" in only:
        bench_list(s)
    if "log" in only:
        bench_log(s)
