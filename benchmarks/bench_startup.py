"""Start-up: gs chat to its prompt and to its first token, gs ask.

- ``gs chat`` in a real pseudo-terminal (pexpect, 24x100 xterm): wall time from spawning the
  process to its prompt appearing, then the prompt's line is sent at once and the time to
  the first token of the reply is taken (from the spawn, and from the Enter). The same for
  ``llm chat -m fake`` (as installed and with ``LLM_LOAD_PLUGINS=''``; the faster is the
  baseline), interleaved run by run, and the floor: a process that imports prompt_toolkit
  and draws one prompt. Sending at once is the worst case for gs, which imports
  the model SDK while the user types: here nobody types.
- ``gs ask S PROMPT`` against ``python -c "import openai"`` (the SDK's import alone) and
  ``llm -m fake -c PROMPT``, interleaved.

Both tools talk to ``instant_server.py`` in its own process, which answers at once.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

import pexpect
from _common import PY, Settings, Timing, fresh_dir, measure_interleaved, row, run_cmd, section, target
from bench_llm import _exe, llm_envs
from bench_turn import instant_server

LINE = "hello there"
REPLY = f"echo: {LINE}"


#: The floor under a prompt_toolkit prompt: a process that imports it and draws one.
_BARE_PROMPT = "from prompt_toolkit import PromptSession; PromptSession().prompt('pt › ')"


def _pty_chat(argv: list[str], env: dict[str, str], prompt: str, leave: str | None) -> tuple[float, float]:
    """Spawn a chat in a pty; return (spawn to prompt, spawn to first reply token), seconds.

    With ``leave`` None the prompt is left at once with Ctrl+D (no reply: the second figure is 0).
    """
    t0 = time.perf_counter()
    child = pexpect.spawn(argv[0], argv[1:], env=env, dimensions=(24, 100), encoding="utf-8",
                          codec_errors="replace", timeout=60)
    child.delaybeforesend = None  # pexpect's default waits 50 ms before each send
    try:
        child.expect_exact(prompt)
        shown = time.perf_counter() - t0
        if leave is None:
            child.sendcontrol("d")
            child.expect(pexpect.EOF)
            return shown, 0.0
        child.sendline(LINE)
        child.expect_exact(REPLY[:4])  # the first token ("echo" arrives as one chunk)
        first = time.perf_counter() - t0
        child.expect_exact(REPLY[4:])
        child.expect_exact(prompt)
        child.sendline(leave)
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    return shown, first


def _fmt(samples: list[float]) -> str:
    return (f"median {statistics.median(samples) * 1e3:7.0f} ms  (min {min(samples) * 1e3:.0f}, "
            f"max {max(samples) * 1e3:.0f}, n={len(samples)})")


def bench_chat(s: Settings, gs_env: dict[str, str], llm_env: dict[str, str], llm_plain_env: dict[str, str]) -> None:
    term = {"TERM": "xterm", "PROMPT_TOOLKIT_NO_CPR": "1", "COLUMNS": "100", "LINES": "24"}
    gs_env = dict(gs_env, **term)
    gs, llm = _exe("gs"), _exe("llm")
    runs: dict[str, list[tuple[float, float]]] = {
        "gs chat": [], "llm chat -m fake": [], "llm chat -m fake (no plugins)": [], "prompt_toolkit alone": []}
    reps = s.llm_reps
    for i in range(reps + 1):  # the first round is the warm-up (bytecode caches, page cache)
        sid = f"c{i}"
        got = {"gs chat": _pty_chat([gs, "chat", sid], gs_env, f"{sid} ›", "/exit"),
               "llm chat -m fake": _pty_chat([llm, "chat", "-m", "fake"], dict(llm_env, **term), "> ", "quit"),
               "llm chat -m fake (no plugins)": _pty_chat([llm, "chat", "-m", "fake"], dict(llm_plain_env, **term),
                                                          "> ", "quit"),
               "prompt_toolkit alone": _pty_chat([PY, "-c", _BARE_PROMPT], gs_env, "pt ›", None)}
        if i:
            for name, value in got.items():
                runs[name].append(value)
    print(f"\n  chat in a pty, the line sent as soon as the prompt shows ({reps} runs each, interleaved, "
          "after 1 warm-up):")
    for name, values in runs.items():
        row(f"{name}: spawn -> prompt", _fmt([v[0] for v in values]))
        if name == "prompt_toolkit alone":
            continue
        row(f"{name}: spawn -> first token", _fmt([v[1] for v in values]))
        row(f"{name}: Enter -> first token", _fmt([v[1] - v[0] for v in values]))
    prompt_ms = statistics.median(v[0] for v in runs["gs chat"]) * 1e3
    # gs's own share before its prompt: the figure a busy machine moves least (both scale alike)
    floor_ms = statistics.median(v[0] for v in runs["prompt_toolkit alone"]) * 1e3
    row("gs chat - prompt_toolkit alone: spawn -> prompt", f"{prompt_ms - floor_ms:+.0f} ms "
        f"({prompt_ms / floor_ms:.2f}x the floor)")
    target(s, "gs chat: spawn to prompt (pty)", f"{prompt_ms:.0f} ms", "<= 250 ms", prompt_ms <= 250)
    gs_first = statistics.median(v[1] for v in runs["gs chat"])
    llm_first = min(statistics.median(v[1] for v in runs[k]) for k in runs if k.startswith("llm chat"))
    target(s, "gs chat first token vs llm chat (pty)", f"{gs_first * 1e3:.0f} ms vs {llm_first * 1e3:.0f} ms",
           "gs <= llm", gs_first <= llm_first)


def bench_ask(s: Settings, env: dict[str, str], llm_env: dict[str, str], llm_plain_env: dict[str, str]) -> None:
    gs, llm = _exe("gs"), _exe("llm")
    run_cmd([gs, "ask", "-S", "S", "hello"], env=env)
    run_cmd([llm, "-m", "fake", "hello"], env=llm_env)
    t: dict[str, Timing] = measure_interleaved({
        "gs ask S PROMPT": lambda: run_cmd([gs, "ask", "-S", "S", LINE], env=env),
        'python -c "import openai"': lambda: run_cmd([PY, "-c", "import openai"], env=env),
        "llm -m fake -c PROMPT": lambda: run_cmd([llm, "-m", "fake", "-c", LINE], env=llm_env),
        "llm -m fake -c PROMPT (no plugins)": lambda: run_cmd([llm, "-m", "fake", "-c", LINE], env=llm_plain_env),
    }, s.llm_reps, warmup=2)
    print(f"\n  one-shot ask ({s.llm_reps} runs each, interleaved, after 2 warm-ups):")
    for name, timing in t.items():
        row(name, timing.fmt())
    sdk_name = 'python -c "import openai"'
    ask, sdk = t["gs ask S PROMPT"], t[sdk_name]
    llm_best = min(t["llm -m fake -c PROMPT"].median, t["llm -m fake -c PROMPT (no plugins)"].median)
    row("gs ask - import openai", f"{(ask.median - sdk.median) * 1e3:+.0f} ms "
        f"(cpu {(ask.cpu_median - sdk.cpu_median) * 1e3:+.0f} ms)")
    extra = ask.median - sdk.median
    target(s, "gs ask vs python -c 'import openai'", f"{ask.median * 1e3:.0f} ms vs {sdk.median * 1e3:.0f} ms "
           f"= {extra * 1e3:+.0f} ms", "<= +100 ms", extra <= 0.100)
    ratio = ask.median / llm_best
    target(s, "gs ask vs llm -c (start-up section)", f"{ratio:.2f}x", "<= 0.8x", ratio <= 0.8)


def run(s: Settings, only: set[str]) -> None:
    if "startup" not in only:
        return
    section("12. start-up: gs chat to its prompt and first token (pty), gs ask, against llm on the same server")
    base = fresh_dir(s, "startup")
    with instant_server() as url:
        gs_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GS_", "LLM_"))}
        gs_env.update(GS_REPO=str(base / "gs.git"), GS_CONFIG=str(base / "no-gs-config.yaml"),
                      OPENAI_BASE_URL=url, OPENAI_API_KEY="test-key", OPENAI_MODEL="gpt-4o-mini")
        llm_env, llm_plain_env = llm_envs(base, url)
        bench_chat(s, gs_env, llm_env, llm_plain_env)
        bench_ask(s, gs_env, llm_env, llm_plain_env)


if __name__ == "__main__":
    import argparse
    import tempfile

    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args()
    settings = Settings(quick=True, tmp=Path(tempfile.mkdtemp(prefix="gs-bench-startup-")), llm_reps=args.reps)
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # bytecode cached as run.py does (see there)
    os.environ["PYTHONPYCACHEPREFIX"] = str(settings.tmp / "pycache")
    run(settings, {"startup"})
