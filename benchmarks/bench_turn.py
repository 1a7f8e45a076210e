"""gs's own cost per turn and per streamed chunk, against an instant server.

- **The per-turn curve.** ``gs chat``'s loop (:class:`gitsessions.cli.repl.repl.Repl`, in-process, the
  real provider, store, journal and redactor; output discarded) runs turns 1..N of one new
  session against ``instant_server.py`` in its own process. A turn's gs time is its wall
  time (from the prompt read to the next prompt asked) minus the server's own time for the
  request, which the server reports; the CPU time of this process (the server is another;
  all its threads) is printed beside it, steadier on a busy machine. As on a terminal, each
  turn is committed behind the next prompt (``save_behind``), and the next line is sent
  once that commit landed, as by a person typing for longer than it takes (the commit's
  wall time is printed beside the turn); a second run sends the lines back to back, so a
  turn also waits for what is left of the commit before it.
- **A long session with tool results** (~10,000 messages, every turn a tool call), built
  directly through ``GitStore.append`` (not chatted), then a few turns chatted on it: the
  same figure at turn ~2,500 against turn 30 of the curve.
- **git plumbing saving the same file** in the same run: ``hash-object -w --stdin`` +
  ``mktree`` + ``commit-tree`` + ``update-ref`` of the session's ``session.jsonl`` at the
  end of the curve plus one turn.
- **CPU per streamed chunk**: one reply of many small chunks, gs's CPU (this process: the
  provider, ``Session.delta`` with its stream redactor and journal) per chunk, against
  ``curl`` reading the same stream from the same server.

    python benchmarks/bench_turn.py --turns 50 --long-turns 300 --stream-chunks 20000   # a short run
"""

from __future__ import annotations

import argparse
import collections
import json
import shutil
import statistics
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from _common import PY, Builder, FixtureStore, Settings, git, row, run_cmd, section, target

from gitsessions.chat.loop import run_turn
from gitsessions.cli.repl.environment import ChatEnvironment
from gitsessions.cli.repl.repl import Repl
from gitsessions.log.events import make_header
from gitsessions.provider.body import pieces as body_pieces
from gitsessions.provider.client import OpenAIProvider
from gitsessions.secrets.redact import from_environment
from gitsessions.store import GitStore
from gitsessions.writer.opening import open_session
from gitsessions.writer.session import Session

HERE = Path(__file__).resolve().parent
CURVE_POINTS = (1, 10, 30, 100, 200, 300, 1000, 3000)
REPLAY_BYTES = 40_000_000  # ~170,000 chunks of 4 characters, as the server frames them


@contextmanager
def instant_server() -> Iterator[str]:
    """Run ``instant_server.py`` in its own process; yield its base URL."""
    proc = subprocess.Popen([PY, str(HERE / "instant_server.py")], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline().split()[1])
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=10)


def server_times(url: str) -> list[float]:
    """The server's time (ms) of each request since the last call, in order."""
    with urllib.request.urlopen(url + "/timings") as r:
        return json.loads(r.read())


def _header(sid: str) -> dict:
    return make_header(sid, created=1_735_732_800_000, cwd="/bench", generator="gitsessions benchmarks")


class TimedStore(GitStore):
    """The git store, with the wall time of each save (``append``) noted, in ms (it may run behind the prompt)."""

    saves: list[float]

    def append(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        try:
            return super().append(*args, **kwargs)
        finally:
            self.saves.append((time.perf_counter() - t0) * 1e3)


Turn = tuple[int, float, float, float]  # turn, gs ms (wall - server), gs CPU ms, the turn's commit wall ms


def chat_turns(store: TimedStore, url: str, sid: str, turns: int, start_turn: int = 1,
               model: str = "gpt-4o-mini", typed: bool = True) -> list[Turn]:
    """Chat ``turns`` turns on ``sid`` through the REPL; return a :data:`Turn` for each.

    Args:
        typed: each line is sent once the commit behind the prompt landed, as by a person
            typing for longer than a commit takes (a turn is Enter to the next prompt); else
            at once, back to back (a turn then waits for what is left of the last commit).
    """
    provider = OpenAIProvider(model, "bench-key", url, max_retries=0)
    store.saves = []
    asked: list[tuple[float, float]] = []  # the prompt shown
    sent: list[tuple[float, float]] = []  # Enter
    prompts = iter(f"question {start_turn + i}: how do I parse YAML in Python, and why?" for i in range(turns))
    built: list[Repl] = []

    def read_line(_prompt: str) -> str | None:
        asked.append((time.perf_counter(), time.process_time()))
        if typed and built[0].session is not None:
            built[0].session.wait_saved()  # the person types meanwhile
        sent.append((time.perf_counter(), time.process_time()))
        return next(prompts, None)

    server_times(url)  # forget earlier requests
    env = ChatEnvironment(read_line=read_line, write=lambda _t: None, new_header=_header,
                          redactor=from_environment({}), save_behind=True)
    repl = Repl(store, provider, sid, env)
    built.append(repl)
    repl.run()
    answered = server_times(url)
    assert len(answered) == turns == len(store.saves), (len(answered), turns, len(store.saves))
    out = []
    for i in range(turns):
        (w0, c0), (w1, c1) = sent[i], asked[i + 1]
        out.append((start_turn + i, (w1 - w0) * 1e3 - answered[i], (c1 - c0) * 1e3, store.saves[i]))
    return out


def _window(curve: list[Turn], at: int, width: int = 5) -> tuple[float, float, float]:
    """Median gs ms, CPU ms and commit ms of the turns around turn ``at`` (``width`` each side)."""
    near = [t[1:] for t in curve if abs(t[0] - at) <= width]
    return tuple(statistics.median(column) for column in zip(*near, strict=True))  # type: ignore[return-value]


def print_curve(curve: list[Turn]) -> None:
    print("    turn   gs ms (wall - server)   gs CPU ms   its commit behind the prompt, wall ms"
          "   (medians, turns within 5)")
    for at in CURVE_POINTS:
        if curve[0][0] <= at <= curve[-1][0]:
            ms, cpu, save = _window(curve, at)
            print(f"    {at:5d}   {ms:10.2f}             {cpu:8.2f}    {save:8.2f}")


def git_plumbing_save(s: Settings, content: bytes, reps: int) -> float:
    """Median ms of git plumbing saving ``content`` as a session's next commit."""
    from bench_store import GitPlumbingSession

    shutil.rmtree(s.tmp / "turn-plumbing.git", ignore_errors=True)
    g = GitPlumbingSession(s.tmp / "turn-plumbing.git")
    g.save(content[: len(content) // 2], "base")
    base_tip, base = g.tip, g.content
    times = []
    for k in range(reps):
        git(g.repo, "update-ref", g.ref, str(base_tip))  # untimed: back to the same base
        g.tip, g.content = base_tip, base
        t0 = time.perf_counter()
        g.save(content[len(base):] + b"\n" * k, f"turn {k}")  # a distinct file each time
        times.append((time.perf_counter() - t0) * 1e3)
    shutil.rmtree(g.repo, ignore_errors=True)
    return statistics.median(times)


def build_long(store: GitStore, sid: str, turns: int) -> int:
    """Build a session of ``turns`` finished turns, each with a tool call (4 messages), directly."""
    fixture = FixtureStore(store.path)
    b = Builder(fixture, sid)
    while b.turn < turns:
        b.save(turns=min(100, turns - b.turn), turn_size=700, tools_every=1)
    fixture.close()
    return b.messages


def bench_turns(s: Settings, url: str, turns: int, long_turns: int) -> None:
    section(f"10. gs's own time per turn (wall - the instant server's time), turns 1..{turns}, in-process REPL")
    repo = s.tmp / "turns.git"
    shutil.rmtree(repo, ignore_errors=True)
    store = TimedStore(repo)
    curve = chat_turns(store, url, "curve", turns)
    print_curve(curve)
    final = store.read_raw("curve", store.tip("curve"))
    git_ms = git_plumbing_save(s, final + final[-2048:], s.reps)
    row(f"git plumbing saving the same file ({len(final) // 1024} KB + one turn)", f"{git_ms:.2f} ms")
    last_ms, last_cpu, _save = _window(curve, turns)
    target(s, f"gs time at turn {turns} vs git plumbing", f"{last_ms:.1f} ms (CPU {last_cpu:.1f}) vs "
           f"{git_ms:.1f} ms", "<= git plumbing", last_ms <= git_ms)
    if long_turns:
        messages = build_long(store, "long", long_turns)
        extra = 10
        tail = chat_turns(store, url, "long", extra, start_turn=long_turns + 1)
        ms, cpu, save = (statistics.median(column) for column in list(zip(*tail, strict=True))[1:])
        size = len(store.read_raw("long", store.tip("long")))
        at30, cpu30, save30 = _window(curve, 30) if turns >= 35 else (float("nan"),) * 3
        row(f"long session: {messages} messages, {size / 1e6:.1f} MB, turns {long_turns + 1}.."
            f"{long_turns + extra}", f"{ms:.2f} ms (CPU {cpu:.2f}; its commit behind the prompt {save:.2f} ms "
            f"wall; at turn 30 {at30:.2f} ms, CPU {cpu30:.2f}, commit {save30:.2f})")
        target(s, f"gs time at turn {long_turns} vs turn 30", f"{ms:.1f} ms vs {at30:.1f} ms = {ms / at30:.2f}x",
               "<= 1.3x", ms <= 1.3 * at30)
        # Lines sent back to back (a paste, a script): a turn waits for what is left of the commit before it.
        early = _window(chat_turns(store, url, "back-to-back", 40, typed=False), 30)[0]
        late = statistics.median(t[1] for t in chat_turns(store, url, "long", extra, start_turn=long_turns + extra + 1,
                                                            typed=False))
        row("  the same with each line sent at once (turn 30, the long session)",
            f"{early:.2f} ms, {late:.2f} ms = {late / early:.2f}x (a turn waits for the commit before it)")
    store.close()


def bench_stream(s: Settings, url: str, chunks: int, chars: int = 4) -> None:
    section(f"11. gs CPU per streamed chunk: one reply of {chunks} chunks of {chars} characters")
    repo = s.tmp / "stream.git"
    shutil.rmtree(repo, ignore_errors=True)
    store = GitStore(repo)
    session = open_session(store, "stream", new_header=_header("stream"), redactor=from_environment({}))
    provider = OpenAIProvider(f"stream:{chunks}:{chars}", "bench-key", url, max_retries=0)
    try:
        provider_warm = OpenAIProvider("stream:10:4", "bench-key", url, max_retries=0)
        run_turn(session, provider_warm, "warm up", tools=[])
        w0, c0 = time.perf_counter(), time.process_time()
        result = run_turn(session, provider, "stream me a long reply", tools=[])
        wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    finally:
        session.close()
        store.close()
    assert len(result.text) == chunks * chars, len(result.text)
    body = json.dumps({"model": f"stream:{chunks}:{chars}", "stream": True,
                       "messages": [{"role": "user", "content": "stream me a long reply"}]})
    curl_wall, curl_cpu = float("nan"), float("nan")
    if shutil.which("curl"):
        from _common import measure

        t = measure(lambda: run_cmd(["curl", "-sN", "-o", "/dev/null", "-H", "Content-Type: application/json",
                                     "-d", body, url + "/chat/completions"]),
                    reps=3 if chunks <= 300_000 else 1, warmup=1 if chunks <= 300_000 else 0)
        curl_wall, curl_cpu = t.median, t.cpu_median
    per_chunk = cpu / chunks * 1e6
    floor_s, pieces = http_floor(url, chunks, chars, whole_reads=True)
    h11_s, _ = http_floor(url, chunks, chars, whole_reads=False)
    row("gs: wall, CPU, CPU per chunk", f"{wall:.2f} s, {cpu:.2f} s, {per_chunk:.1f} us")
    row("  the HTTP stack under gs alone", f"{floor_s / chunks * 1e6:.1f} us per chunk (the same stream "
        "drained through the same client, as gs reads it: whole reads)")
    row("  the same through httpx's iter_bytes", f"{h11_s / chunks * 1e6:.1f} us per chunk (h11 parsing "
        "it one HTTP chunk at a time)")
    store = GitStore(repo)
    session = open_session(store, "stream", redactor=from_environment({}))
    try:
        own = replayed_turn(session, pieces, chars)
    finally:
        session.close()
        store.close()
    row("  gs's own code (the same pieces replayed, no network)", f"{own:.1f} us per chunk")
    row("curl -N reading the same stream: wall, CPU", f"{curl_wall:.2f} s, {curl_cpu:.2f} s")
    target(s, "gs CPU per streamed chunk", f"{per_chunk:.1f} us", "<= 20 us", per_chunk <= 20)
    target(s, "a long reply: gs wall vs curl", f"{wall:.2f} s vs {curl_wall:.2f} s = {wall / curl_wall:.2f}x",
           "<= 2x", wall <= 2 * curl_wall)


def http_floor(url: str, chunks: int, chars: int, whole_reads: bool) -> tuple[float, list[bytes]]:
    """CPU seconds the SDK's client takes to hand over the stream, nothing parsed; and the
    pieces it handed over (to replay).

    Args:
        whole_reads: read the body as the provider does (:func:`gitsessions.provider.body.pieces`);
            else through httpx's ``iter_bytes`` (h11 parses it one HTTP chunk at a time).
    """
    import httpx2

    provider = OpenAIProvider(f"stream:{chunks}:{chars}", "bench-key", url, max_retries=0)
    body = {"model": provider.model, "stream": True, "messages": [{"role": "user", "content": "x"}]}
    pieces: list[bytes] = []
    tail: collections.deque[bytes] = collections.deque(maxlen=4)  # the finish, usage and [DONE]
    kept = 0
    c0 = time.process_time()
    response = provider._client.post("/chat/completions", cast_to=httpx2.Response, body=body, stream=True)
    for piece in body_pieces(response) if whole_reads else response.iter_bytes():
        if kept < REPLAY_BYTES:  # enough to replay, without holding a 12 MB reply's 500 MB of events
            pieces.append(piece)
            kept += len(piece)
        else:
            tail.append(piece)
    response.close()
    return time.process_time() - c0, pieces + list(tail)


def replayed_turn(session: Session, pieces: list[bytes], chars: int) -> float:
    """CPU microseconds per chunk of one turn whose reply is ``pieces`` handed over at once:
    gs's own code (provider, loop, Session.delta with its redactor and journal), no network."""
    import httpx2

    provider = OpenAIProvider("replay", "bench-key", "http://127.0.0.1:9/v1", max_retries=0)
    provider._client.post = lambda *_a, **_k: httpx2.Response(200, content=iter(pieces))  # type: ignore[method-assign]
    c0 = time.process_time()
    result = run_turn(session, provider, "the same reply again, without the network", tools=[])
    return (time.process_time() - c0) / (len(result.text) / chars) * 1e6


def run(s: Settings, only: set[str]) -> None:
    if not {"turn", "stream"} & only:
        return
    with instant_server() as url:
        if "turn" in only:
            bench_turns(s, url, 300, 2500)
        if "stream" in only:
            bench_stream(s, url, 3_000_000 if not s.quick else 300_000)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--turns", type=int, default=300)
    ap.add_argument("--long-turns", type=int, default=2500, help="turns of the long session (0: none)")
    ap.add_argument("--stream-chunks", type=int, default=3_000_000, help="chunks of the long reply (0: none)")
    ap.add_argument("--profile", choices=["turns", "stream"], help="cProfile that part instead")
    ap.add_argument("--tmp", type=Path, default=Path("/tmp/gs-bench-turn"))
    args = ap.parse_args()
    args.tmp.mkdir(parents=True, exist_ok=True)
    s = Settings.make(True, args.tmp)
    with instant_server() as url:
        if args.profile:
            import cProfile
            import pstats

            prof = cProfile.Profile()
            prof.enable()
            if args.profile == "turns":
                bench_turns(s, url, args.turns, args.long_turns)
            else:
                bench_stream(s, url, args.stream_chunks)
            prof.disable()
            pstats.Stats(prof).sort_stats("tottime").print_stats(30)
            return
        if args.turns:
            bench_turns(s, url, args.turns, args.long_turns)
        if args.stream_chunks:
            bench_stream(s, url, args.stream_chunks)
    for t in s.results:
        print(f"  {'MET    ' if t.met else 'NOT MET'}  {t.name:<44} {t.figure}  [target {t.target}]")


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    main()
