"""Shared helpers of the benchmark scripts: timing, reporting, synthetic sessions, git.

Nothing here asserts a threshold: every figure is printed next to a baseline measured in the
same run, and the targets are printed beside them for a human (or a CI log) to read.
"""

from __future__ import annotations

import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from gitsessions.log.commits import CommitMessage  # noqa: E402
from gitsessions.log.events import Event, make_event, make_header  # noqa: E402
from gitsessions.store import GitStore  # noqa: E402

PY = sys.executable
VENV_BIN = Path(PY).parent


# --------------------------------------------------------------------------- settings


@dataclass
class Settings:
    """What one run of the benchmarks does (``--quick`` shrinks repetitions, not sizes)."""

    quick: bool = False
    tmp: Path = Path("/tmp")
    reps: int = 7          # in-process repetitions
    cli_reps: int = 7      # subprocess repetitions (gs list / gs log)
    llm_reps: int = 10     # gs ask vs llm, gs log vs llm logs
    results: list[Target] = field(default_factory=list)

    @classmethod
    def make(cls, quick: bool, tmp: Path) -> Settings:
        if quick:
            return cls(quick=True, tmp=tmp, reps=3, cli_reps=3, llm_reps=5)
        return cls(quick=False, tmp=tmp)


@dataclass
class Target:
    """One target of the issue and whether this run met it."""

    name: str
    figure: str
    target: str
    met: bool


# --------------------------------------------------------------------------- timing


@dataclass
class Timing:
    """Wall times (and CPU times: this process + its children) of repeated runs, seconds."""

    samples: list[float]
    cpu: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)

    @property
    def min(self) -> float:
        return min(self.samples)

    @property
    def max(self) -> float:
        return max(self.samples)

    @property
    def cpu_median(self) -> float:
        return statistics.median(self.cpu) if self.cpu else float("nan")

    def fmt(self, unit: str = "ms") -> str:
        scale = {"ms": 1e3, "s": 1.0, "us": 1e6}[unit]
        cpu = f", cpu {self.cpu_median * scale:.1f}" if self.cpu else ""
        return (f"median {self.median * scale:9.2f} {unit}  "
                f"(min {self.min * scale:.2f}, max {self.max * scale:.2f}{cpu}, n={len(self.samples)})")


def _cpu_now() -> float:
    """CPU seconds used so far by this process and its waited-for children."""
    import resource

    ch = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + ch.ru_utime + ch.ru_stime


def measure(fn: Callable[[], object], reps: int, warmup: int = 1,
            setup: Callable[[], object] | None = None) -> Timing:
    """Run ``fn`` ``warmup`` times untimed, then ``reps`` times timed (``setup`` untimed before each).

    Records wall time (``time.perf_counter``) and CPU time (this process, including other
    threads, plus the children it waited for): on a busy machine the CPU time is the steadier one.
    """
    for _ in range(warmup):
        if setup:
            setup()
        fn()
    samples, cpu = [], []
    for _ in range(reps):
        if setup:
            setup()
        c0 = _cpu_now()
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
        cpu.append(_cpu_now() - c0)
    return Timing(samples, cpu)


def measure_interleaved(fns: dict[str, Callable[[], object]], reps: int, warmup: int = 1) -> dict[str, Timing]:
    """Like :func:`measure` for several commands, alternating them run by run (hyperfine-style,
    but interleaved so that drift of the machine hits every command alike)."""
    for _ in range(warmup):
        for fn in fns.values():
            fn()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    cpu: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):
        for name, fn in fns.items():
            c0 = _cpu_now()
            t0 = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - t0)
            cpu[name].append(_cpu_now() - c0)
    return {k: Timing(v, cpu[k]) for k, v in samples.items()}


def run_cmd(argv: list[str], env: dict[str, str] | None = None, input: bytes | None = None,
            check: bool = True) -> subprocess.CompletedProcess:
    """Run a command, capturing output; raise with its stderr when it fails.

    With no ``input``, stdin is ``/dev/null``: ``gs ask`` (as ``llm``) reads a stdin that is
    not a terminal, and would wait on the one this process was given.
    """
    proc = subprocess.run(argv, env=env, input=input, capture_output=True,
                          stdin=subprocess.DEVNULL if input is None else None)
    if check and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} failed ({proc.returncode}): "
                           f"{proc.stderr.decode(errors='replace')[-2000:]}")
    return proc


@dataclass
class Measured:
    """One child process run by :func:`run_measured`: what it cost and what it said."""

    wall: float  #: seconds, start to exit
    cpu: float  #: seconds, user + system of the child and the children it waited for
    peak: int  #: peak resident set, bytes
    returncode: int
    stderr: str


def run_measured(argv: list[str], env: dict[str, str] | None = None) -> Measured:
    """Run ``argv`` (stdin ``/dev/null``, stdout discarded) under GNU ``/usr/bin/time``.

    Why not this process's own ``wait4``: Linux carries the forking process's resident set
    into the child's ``ru_maxrss`` (``vfork``/``fork`` then ``exec`` keep the old memory's high
    water), so a child of a benchmark that has built large fixtures reports the benchmark's
    size, not its own. ``time`` is small, and its child's peak is the child's.

    Raises:
        RuntimeError: ``/usr/bin/time`` left no figures (it is missing, or was killed).
    """
    with tempfile.NamedTemporaryFile("r", suffix=".time") as out:
        t0 = time.perf_counter()
        proc = subprocess.run(["/usr/bin/time", "-o", out.name, "-f", "%U %S %M", *argv], env=env,
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall = time.perf_counter() - t0
        figures = out.read().split()[-3:]  # after "Command exited with non-zero status N", if it did
    if len(figures) != 3:
        raise RuntimeError(f"{argv[0]}: /usr/bin/time printed no figures (exit {proc.returncode})")
    user, system, kb = figures
    return Measured(wall, float(user) + float(system), int(kb) * 1024, proc.returncode,
                    proc.stderr.decode(errors="replace"))


# --------------------------------------------------------------------------- reporting


def section(title: str) -> None:
    print()
    print("=" * 100)
    print(title)
    print("=" * 100, flush=True)


def row(label: str, value: str) -> None:
    print(f"  {label:<52} {value}", flush=True)


def target(settings: Settings, name: str, figure: str, target_text: str, met: bool) -> None:
    settings.results.append(Target(name, figure, target_text, met))
    print(f"  -> TARGET {'MET    ' if met else 'NOT MET'}  {name}: {figure} (target {target_text})", flush=True)


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(n) < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.2f} {unit}"
        n /= 1024
    return f"{n:.2f} GiB"


def dir_sizes(path: Path) -> tuple[int, int, int]:
    """Return (files, apparent bytes, allocated bytes on disk) under ``path``."""
    files = apparent = allocated = 0
    for p in path.rglob("*"):
        if p.is_file():
            st = p.stat()
            files += 1
            apparent += st.st_size
            allocated += st.st_blocks * 512
    return files, apparent, allocated


# --------------------------------------------------------------------------- machine


def _version_of(module: str) -> str:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:  # noqa: BLE001 - informational only
        return "not installed"


def machine_info(settings: Settings) -> None:
    cpu = "unknown"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    git = run_cmd(["git", "--version"]).stdout.decode().strip()
    fs = "?"
    try:
        best = ""
        tmp = str(settings.tmp.resolve())
        for line in Path("/proc/mounts").read_text().splitlines():
            dev, mnt, typ = line.split()[:3]
            if tmp.startswith(mnt) and len(mnt) >= len(best):
                best, fs = mnt, f"{typ} on {dev} (mounted at {mnt})"
    except OSError:
        pass
    section("machine")
    row("CPU", cpu)
    row("cores (os.cpu_count / usable)", f"{os.cpu_count()} / {usable}")
    row("OS", platform.platform())
    row("Python", f"{platform.python_version()} ({PY})")
    row("dulwich", _version_of("dulwich"))
    row("git", git)
    row("gitsessions", _version_of("gitsessions"))
    row("llm / openai / typer", f"{_version_of('llm')} / {_version_of('openai')} / {_version_of('typer')}")
    row("temp dir (repos live here)", f"{settings.tmp}  [{fs}]")
    row("load average (1/5/15 min) at start", " ".join(f"{x:.2f}" for x in os.getloadavg()))
    row("mode", "quick" if settings.quick else "full")
    row("repetitions (in-process / CLI / vs llm)", f"{settings.reps} / {settings.cli_reps} / {settings.llm_reps}")


# --------------------------------------------------------------------------- synthetic sessions

_CORPUS: str | None = None


def _corpus() -> str:
    """2 MB of deterministic pseudo-prose that zlib compresses about as well as real chat text
    (~2.5x at level 1; a small repeated vocabulary would compress 30x and flatter every size)."""
    global _CORPUS
    if _CORPUS is None:
        import itertools
        import random

        rng = random.Random(42)
        letters = "etaoinshrdlcumwfgypbvkjxqz"
        freq = [12.7, 9.1, 8.2, 7.5, 7.0, 6.7, 6.3, 6.1, 6.0, 4.3, 4.0, 2.8, 2.8, 2.4, 2.4, 2.2, 2.0,
                2.0, 1.9, 1.5, 1.0, 0.8, 0.15, 0.15, 0.1, 0.07]
        lengths = [1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 7, 8, 9, 10]
        vocab = ["".join(rng.choices(letters, freq, k=rng.choice(lengths))) for _ in range(5000)]
        cum = list(itertools.accumulate(1 / (i + 1) for i in range(len(vocab))))
        _CORPUS = " ".join(rng.choices(vocab, cum_weights=cum, k=2 * 1024 * 1024 // 5))
    return _CORPUS


def words(n_bytes: int, salt: int = 0) -> str:
    """Deterministic prose of ``n_bytes`` bytes (a different stretch for each ``salt``)."""
    corpus = _corpus()
    if n_bytes >= len(corpus):
        return (corpus * (n_bytes // len(corpus) + 1))[:n_bytes]
    start = (salt * 7919) % (len(corpus) - n_bytes)
    return corpus[start:start + n_bytes]


def turn_events(seq: int, turn: int, size: int = 2048, tools: bool = False) -> list[Event]:
    """The events of one finished turn of about ``size`` bytes encoded, starting at ``seq``.

    Same shapes as :func:`gitsessions.chat.loop.run_turn` writes; with ``tools`` the turn
    has a tool-call step before the answer.
    """
    user = words(max(40, size // 5), salt=turn)
    reply = words(max(80, size - size // 5 - 700), salt=turn + 1)
    usage = {"prompt_tokens": 100 + turn, "completion_tokens": 50, "total_tokens": 150 + turn}
    spec: list[tuple[str, dict]] = [("turn/start", {"turn": turn}), ("user/message", {"content": user})]
    step = 1
    if tools:
        call = {"id": f"call_{turn}", "name": "get_current_time", "arguments": "{}"}
        spec += [
            ("step/start", {"step": step}),
            ("assistant/message", {"content": "", "tool_calls": [call], "finish_reason": "tool_calls",
                                   "model": "gpt-4o-mini", "usage": usage, "interrupted": False}),
            ("tool/call", {"id": call["id"], "name": call["name"]}),
            ("tool/result", {"id": call["id"], "name": call["name"],
                             "content": "2025-01-01T12:00:00+00:00", "is_error": False}),
            ("step/end", {"step": step}),
        ]
        step += 1
    spec += [
        ("step/start", {"step": step}),
        ("assistant/message", {"content": reply, "tool_calls": [], "finish_reason": "stop",
                               "model": "gpt-4o-mini", "usage": usage, "interrupted": False}),
        ("step/end", {"step": step}),
        ("turn/end", {"reason": "completed"}),
    ]
    t0 = 1_735_732_800_000 + turn * 60_000
    return [make_event(seq + i, typ, data, time_ms=t0 + i) for i, (typ, data) in enumerate(spec)]


def message_for(session_id: str, turn: int, events: list[Event], n_messages: int) -> CommitMessage:
    """A commit message shaped like :func:`gitsessions.writer.session.commit_message` writes
    (without re-deriving the whole transcript for every synthetic save)."""
    prompt = next((e.data["content"] for e in events if e.type == "user/message"), "save")
    trailers = {"Session": session_id, "Turn": str(turn), "Model": "gpt-4o-mini",
                "Events": f"{events[0].seq}-{events[-1].seq}", "Messages": str(n_messages),
                "Title": "benchmark session about parsing YAML"}
    return CommitMessage(f"turn {turn}: {prompt.splitlines()[0]}", trailers)


class FixtureStore(GitStore):
    """A GitStore for building fixtures quickly: no fsync of object files (never used for a
    timed save; gs itself always fsyncs)."""

    def repo(self, create: bool = False):
        repo = super().repo(create)
        if repo is not None:
            repo.object_store.fsync_object_files = False
        return repo


class Builder:
    """Grows one session through ``GitStore.append`` the way gs saves do (one commit per call)."""

    def __init__(self, store: GitStore, session_id: str):
        self.store = store
        self.id = session_id
        self.tip: str | None = None
        self.seq = 0
        self.turn = 0
        self.messages = 0
        self.size = 0  # bytes of session.jsonl at the tip

    def save(self, turns: int = 1, turn_size: int = 2048, tools_every: int = 0) -> str:
        """Append ``turns`` turns as ONE commit; return the commit id."""
        events: list[Event] = []
        for _ in range(turns):
            self.turn += 1
            tools = bool(tools_every) and self.turn % tools_every == 0
            evs = turn_events(self.seq + len(events), self.turn, turn_size, tools)
            events += evs
            self.messages += 4 if tools else 2
        header = make_header(self.id, created=1_735_732_800_000, cwd="/bench",
                             generator="gitsessions benchmarks") if self.tip is None else None
        msg = message_for(self.id, self.turn, events, self.messages)
        self.tip = self.store.append(self.id, events, msg, expected_tip=self.tip, header=header)
        self.seq += len(events)
        self.size += sum(len(e.encode()) for e in events)
        if header is not None:
            from gitsessions.log.events import encode_header

            self.size += len(encode_header(header))
        return self.tip


# --------------------------------------------------------------------------- git plumbing


def git_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """An environment where git reads no user or system config and has an identity."""
    env = dict(os.environ)
    env.update({
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@localhost",
        "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@localhost",
        "LC_ALL": "C",
    })
    if extra:
        env.update(extra)
    return env


def fast_import(repo: Path, commits: Iterable[tuple[str, bytes, int, bytes]]) -> None:
    """Write ``(session id, commit message, commit time in epoch s, session.jsonl)`` with ``git fast-import``.

    Each is one commit on ``refs/heads/<id>`` (following that branch's previous one), the
    fastest way to build a large archive of gs-shaped sessions.
    """
    proc = subprocess.Popen(["git", f"--git-dir={repo}", "fast-import", "--quiet"], stdin=subprocess.PIPE,
                            env=git_env())
    assert proc.stdin is not None
    for sid, msg, when, data in commits:
        proc.stdin.write(b"commit refs/heads/%s\ncommitter bench <bench@localhost> %d +0000\n" % (sid.encode(), when))
        proc.stdin.write(b"data %d\n%s\n" % (len(msg), msg))
        proc.stdin.write(b"M 100644 inline session.jsonl\ndata %d\n%s\n" % (len(data), data))
    proc.stdin.close()
    assert proc.wait() == 0


def git(repo: Path, *args: str, input: bytes | None = None, env: dict[str, str] | None = None) -> str:
    return run_cmd(["git", f"--git-dir={repo}", *args], env=env or git_env(), input=input).stdout.decode()


def fresh_dir(settings: Settings, name: str) -> Path:
    path = settings.tmp / name
    if path.exists():
        shutil.rmtree(path)
    path.mkdir(parents=True)
    return path


def parse_importtime(stderr: str) -> list[tuple[str, int, int, int]]:
    """Parse ``-X importtime`` output into (module, self us, cumulative us, indent)."""
    out = []
    for line in stderr.splitlines():
        m = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
        if m:
            out.append((m.group(4), int(m.group(1)), int(m.group(2)), len(m.group(3))))
    return out
