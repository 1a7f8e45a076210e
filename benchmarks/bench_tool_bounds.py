"""Peak memory of the tools on inputs without a bound: a flood of output, a huge file.

Each figure is the peak resident set (what ``/usr/bin/time -v`` calls "Maximum resident set
size") of a Python process of its own that imports the tools and makes one call:

- **run_command, flood**: ``yes | head -c N`` (N = 1 GiB; ``--flood-mb``), and ``yes`` until
  the command's timeout (8 s; ``--yes-s``), beside the cap (16,000 characters returned);
- **read_file, huge file**: a 4 GiB sparse file (20,000 lines of text, then a hole: one
  endless line of NULs): its first part, its line 20,001 (skipped to a block at a time), and
  an offset past its end (the whole file counted; a read stops after 10 s and says so);
- **list_files** over a folder tree 400 levels deep (time only).

Baselines, same run: ``python -c pass``, and the same child making the same call on an
input with nothing in it (``run_command("true")``, ``read_file`` of a 3-line file): the
difference is what the input's size costs.

    python benchmarks/bench_tool_bounds.py                       # all
    python benchmarks/bench_tool_bounds.py --flood-mb 256 --yes-s 2 --file-gb 1   # a short run
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

from _common import PY, ROOT, Settings, fresh_dir, human_bytes, row, run_measured, section, target

HERE = Path(__file__).resolve().parent
FLOOD_BYTES = 1024 ** 3
YES_SECONDS = 8.0
FILE_BYTES = 4 * 1024 ** 3
DEPTH = 400
#: A peak within this of the empty input's is "bounded" (buffers of 64 KiB to 1 MiB, the cap itself).
BOUNDED = 16 * 1024 * 1024

#: Runs in the child: one tool call, then its result's length and how it ends, as JSON on stderr.
_CALL = r"""
import json, sys, time
from pathlib import Path
from gitsessions.chat.tools import files, shell
from gitsessions.chat.tools.files import ToolFailed, Workspace
kind, where, arg = sys.argv[1], Path(sys.argv[2]), json.loads(sys.argv[3])
t0 = time.perf_counter()
try:
    if kind == "run":
        out = shell.run_command(where, arg["command"], arg.get("timeout"))
    elif kind == "read":
        out = files.read_file(Workspace(where), arg["path"], arg.get("offset", 1))
    else:
        out = files.list_files(Workspace(where), ".", True)
except ToolFailed as exc:
    out = f"error: {exc}"
print(json.dumps({"chars": len(out), "end": out[-160:], "seconds": time.perf_counter() - t0}), file=sys.stderr)
"""


def call(kind: str, where: Path, **arg: object) -> tuple[int, dict]:
    """Run one tool call in a child of its own; return its peak RSS (bytes) and what it reported."""
    done = run_measured([PY, "-c", _CALL, kind, str(where), json.dumps(arg)],
                        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    if done.returncode != 0:
        raise RuntimeError(f"{kind} {arg}: exit {done.returncode}: {done.stderr[-800:]}")
    return done.peak, json.loads(done.stderr.strip().splitlines()[-1])


def bench_run_command(s: Settings, work: Path, flood: int, yes_s: float) -> None:
    section(f"run_command: a flood of output ({human_bytes(flood)}, and yes for {yes_s:g} s) against the cap "
            "of 16,000 characters")
    base = run_measured([PY, "-c", "pass"]).peak
    empty, _ = call("run", work, command="true")
    row("python -c pass (baseline)", human_bytes(base))
    row("run_command('true') (baseline: nothing printed)", human_bytes(empty))
    peak, said = call("run", work, command=f"yes | head -c {flood}")
    row(f"run_command('yes | head -c {flood}')", f"{human_bytes(peak)} ({peak / empty:.2f}x the empty call; "
        f"{said['seconds']:.1f} s, {flood / said['seconds'] / 1e6:.0f} MB/s; returned {said['chars']:,} characters)")
    row("  its result ends", repr(said["end"][-90:]))
    yes_peak, yes_said = call("run", work, command="yes", timeout=yes_s)
    row(f"run_command('yes', timeout={yes_s:g})", f"{human_bytes(yes_peak)} ({yes_peak / empty:.2f}x the empty "
        f"call; returned {yes_said['chars']:,} characters)")
    worst = max(peak, yes_peak)
    target(s, "run_command flood: peak RSS over the empty call", human_bytes(worst - empty),
           f"< {human_bytes(BOUNDED)}", worst - empty < BOUNDED)


def bench_read_file(s: Settings, work: Path, size: int) -> None:
    section(f"read_file: a {human_bytes(size)} sparse file (20,000 lines, then one endless line of NULs)")
    small = work / "small.txt"
    small.write_text("one\ntwo\nthree\n")
    big = work / "big.txt"
    with open(big, "wb") as f:
        f.write(b"".join(b"line %d\n" % n for n in range(1, 20_001)))
        f.truncate(size)
    empty, _ = call("read", work, path="small.txt")
    row("read_file of a 3-line file (baseline)", human_bytes(empty))
    worst = empty
    for label, offset in (("its start", 1), ("line 20,001: the endless one", 20_001)):
        peak, said = call("read", work, path="big.txt", offset=offset)
        worst = max(worst, peak)
        row(f"read_file, {label}", f"{human_bytes(peak)} ({peak / empty:.2f}x the small file; "
            f"{said['seconds'] * 1000:.0f} ms; returned {said['chars']:,} characters)")
    for label in ("first time: the kernel makes the hole's pages", "again: from the page cache"):
        peak, said = call("read", work, path="big.txt", offset=30_000)
        worst = max(worst, peak)
        row(f"read_file, offset past the end ({label})", f"{human_bytes(peak)} ({said['seconds']:.1f} s, "
            f"{size / said['seconds'] / 1e9:.2f} GB/s)")
    row("  its result", repr(said["end"][:100]))
    target(s, f"read_file of {human_bytes(size)}: peak RSS over a small file's", human_bytes(worst - empty),
           f"< {human_bytes(BOUNDED)}", worst - empty < BOUNDED)


def bench_list_files(s: Settings, work: Path) -> None:
    section(f"list_files: a folder tree {DEPTH} levels deep (recursive)")
    deep = work / "deep"
    folder = deep
    for _ in range(DEPTH):
        folder = folder / "d"
    folder.mkdir(parents=True)
    t0 = time.perf_counter()
    peak, said = call("list", deep)
    row("list_files(recursive=True)", f"{said['seconds'] * 1000:.0f} ms in the call, "
        f"{time.perf_counter() - t0:.2f} s with the process; {human_bytes(peak)}; ends {said['end'][-60:]!r}")


def run(s: Settings, only: set[str], flood: int = FLOOD_BYTES, yes_s: float = YES_SECONDS,
        file_bytes: int = FILE_BYTES) -> None:
    if "tools" not in only:
        return
    work = fresh_dir(s, "tool-bounds")
    try:
        bench_run_command(s, work, flood, yes_s)
        bench_read_file(s, work, file_bytes)
        bench_list_files(s, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--flood-mb", type=float, default=FLOOD_BYTES / 1024 ** 2, help="bytes of yes | head -c, MiB")
    ap.add_argument("--yes-s", type=float, default=YES_SECONDS, help="seconds yes runs (the command's timeout)")
    ap.add_argument("--file-gb", type=float, default=FILE_BYTES / 1024 ** 3, help="the sparse file's size, GiB")
    ap.add_argument("--tmp", type=Path, default=Path("/tmp/gs-bench-tools"))
    args = ap.parse_args()
    args.tmp.mkdir(parents=True, exist_ok=True)
    s = Settings.make(True, args.tmp)
    run(s, {"tools"}, int(args.flood_mb * 1024 ** 2), args.yes_s, int(args.file_gb * 1024 ** 3))
    for t in s.results:
        print(f"  {'MET    ' if t.met else 'NOT MET'}  {t.name:<44} {t.figure}  [target {t.target}]")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
