#!/usr/bin/env python
"""Run the gitsessions benchmarks and print figures next to same-run baselines.

    .venv/bin/python benchmarks/run.py            # everything (a few minutes on 2 cores)
    .venv/bin/python benchmarks/run.py --quick    # fewer repetitions
    .venv/bin/python benchmarks/run.py --only save,open

Sections: save, open, list, log, size, llm, request, sync, push, clone, turn, stream, startup,
memory, scale, redact, import, tools (see benchmarks/README.md). No thresholds are asserted: each target is
printed as MET / NOT MET and summarised at the end; the exit status is 0 unless a benchmark itself failed to run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import Settings, machine_info, section  # noqa: E402

SECTIONS = ("save", "open", "list", "log", "size", "llm", "request", "sync", "push", "clone", "turn", "stream",
            "startup", "memory", "scale", "redact", "import", "tools")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="fewer repetitions (same sizes)")
    ap.add_argument("--only", default=",".join(SECTIONS),
                    help=f"comma-separated sections to run (default: all of {','.join(SECTIONS)})")
    ap.add_argument("--tmp", type=Path, default=None,
                    help="directory for the scratch repos (default: a new temp dir, removed at the end)")
    ap.add_argument("--keep", action="store_true", help="keep the scratch repos")
    args = ap.parse_args()
    only = {x.strip() for x in args.only.split(",") if x.strip()}
    unknown = only - set(SECTIONS)
    if unknown:
        ap.error(f"unknown sections: {', '.join(sorted(unknown))}")

    owned = args.tmp is None
    tmp = Path(tempfile.mkdtemp(prefix="gs-bench-")) if owned else args.tmp
    tmp.mkdir(parents=True, exist_ok=True)
    settings = Settings.make(args.quick, tmp)
    # Every subprocess (gs, llm, git, python) gets a bytecode cache, as an installed program
    # has; it lives in the scratch dir so nothing is written into the source tree. (Some
    # sandboxes set PYTHONDONTWRITEBYTECODE=1, which would make gs -- an editable install
    # without __pycache__ -- recompile itself on every start while llm's .pyc files exist.)
    dont_write = os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    os.environ["PYTHONPYCACHEPREFIX"] = str(tmp / "pycache")
    machine_info(settings)
    if dont_write:
        print("  (PYTHONDONTWRITEBYTECODE was set; unset for the subprocesses, bytecode cached in "
              f"{tmp / 'pycache'})")

    import bench_cli
    import bench_import
    import bench_llm
    import bench_memory
    import bench_redact
    import bench_scale
    import bench_startup
    import bench_store
    import bench_sync
    import bench_tool_bounds
    import bench_turn

    started = time.perf_counter()
    failed = []
    for name, fn in (("store", lambda: bench_store.run(settings, only)),
                     ("cli", lambda: bench_cli.run(settings, only)),
                     ("llm", lambda: bench_llm.run(settings, only)),
                     ("sync", lambda: bench_sync.run(settings, only)),
                     ("turn", lambda: bench_turn.run(settings, only)),
                     ("startup", lambda: bench_startup.run(settings, only)),
                     ("memory", lambda: bench_memory.run(settings, only)),
                     ("scale", lambda: bench_scale.run(settings, only)),
                     ("redact", lambda: bench_redact.run(settings, only)),
                     ("import", lambda: bench_import.run(settings, only)),
                     ("tools", lambda: bench_tool_bounds.run(settings, only))):
        try:
            fn()
        except Exception:  # keep going: report what ran
            failed.append(name)
            print(f"\n!! benchmark group {name} failed:")
            traceback.print_exc(file=sys.stdout)

    section(f"summary ({time.perf_counter() - started:.0f} s; load average now "
            f"{' '.join(f'{x:.1f}' for x in os.getloadavg())})")
    for t in settings.results:
        print(f"  {'MET    ' if t.met else 'NOT MET'}  {t.name:<44} {t.figure}  [target {t.target}]")
    met = sum(t.met for t in settings.results)
    print(f"\n  {met} of {len(settings.results)} targets met" + (f"; FAILED groups: {failed}" if failed else ""))
    if owned and not args.keep:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)
    else:
        print(f"  scratch repos kept in {tmp}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
