"""Real git servers on 127.0.0.1 for transport tests: ``git daemon`` (git://), OpenSSH's
``sshd`` (ssh://) and ``git http-backend`` behind a small HTTP server with Basic auth
(http://). Each serves bare repos under one directory, on a free port, and stops on exit.

Every server is a context manager::

    with GitDaemon(root) as daemon:
        url = daemon.url("remote.git")      # git://127.0.0.1:PORT/remote.git
"""

from __future__ import annotations

import base64
import os
import pwd
import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

GIT_HTTP_BACKEND = Path("/usr/lib/git-core/git-http-backend")
SSHD = Path("/usr/sbin/sshd")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen | None = None, log: Path | None = None,
                  timeout: float = 10) -> None:
    """Return once ``127.0.0.1:port`` accepts connections; fail early when ``proc`` died
    (with the end of its ``log``)."""
    deadline = time.monotonic() + timeout
    while True:
        if proc is not None and proc.poll() is not None:
            said = log.read_text(errors="replace").strip()[-2000:] if log and log.exists() else ""
            raise RuntimeError(f"{proc.args[0]} exited with {proc.returncode}: {said}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise RuntimeError(f"nothing listens on 127.0.0.1:{port} after {timeout} s") from None
            time.sleep(0.02)


def _start(argv_for: Callable[[int], list[str]], log: Path, attempts: int = 3) -> tuple[subprocess.Popen, int]:
    """Start ``argv_for(port)`` on a free port, writing to ``log``; return once it listens.

    Another process may take the port between :func:`free_port` and the server's bind:
    then it is tried again on another port.
    """
    for attempt in range(attempts):
        port = free_port()
        with open(log, "ab") as out:
            proc = subprocess.Popen(argv_for(port), stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT)
        try:
            wait_for_port(port, proc, log)
            return proc, port
        except RuntimeError:
            _stop(proc)
            if attempt == attempts - 1:
                raise
        except BaseException:
            _stop(proc)
            raise
    raise AssertionError("unreachable")


def _stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def init_bare(path: Path, *, keep_packs: bool = False) -> Path:
    """Create a bare repo that accepts pushes over every transport (http.receivepack).

    ``keep_packs`` sets ``receive.unpackLimit 1`` so a received pack is stored as sent
    instead of being exploded into loose objects (to measure what was sent).
    """
    subprocess.run(["git", "init", "-q", "--bare", str(path)], check=True)
    settings = [("http.receivepack", "true")]
    if keep_packs:
        settings += [("receive.unpackLimit", "1"), ("transfer.unpackLimit", "1")]
    for key, value in settings:
        subprocess.run(["git", "-C", str(path), "config", key, value], check=True)
    return path


class GitDaemon:
    """``git daemon`` exporting every repo under ``root``, receive-pack enabled.

    ``access_hook``: a program git daemon runs before serving each request (its
    ``--access-hook``), with the service (``upload-pack``, ``receive-pack``) and the path.
    """

    scheme = "git"

    def __init__(self, root: Path, access_hook: Path | None = None):
        self.root = root
        self.access_hook = access_hook
        self.port = 0
        self.proc: subprocess.Popen | None = None

    def url(self, name: str) -> str:
        return f"git://127.0.0.1:{self.port}/{name}"

    def __enter__(self) -> GitDaemon:
        self.proc, self.port = _start(lambda port: [
            "git", "daemon", "--reuseaddr", f"--base-path={self.root}", "--export-all", "--enable=receive-pack",
            "--informative-errors", "--listen=127.0.0.1", f"--port={port}",
            *([f"--access-hook={self.access_hook}"] if self.access_hook else []), str(self.root)],
            self.root.parent / "git-daemon.log")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc:
            _stop(self.proc)


class SSHServer:
    """OpenSSH ``sshd`` on 127.0.0.1 with its own host key, accepting one generated client
    key for the current user, plus a client config naming it ``host_alias``.

    OpenSSH reads ``~/.ssh/config`` from the passwd entry's home, not ``$HOME``, so the
    config written into ``home`` is used through ``ssh_command`` (``ssh -F <config>``):
    pass it as ``GIT_SSH_COMMAND``.
    """

    scheme = "ssh"
    host_alias = "gs-test-sshd"

    def __init__(self, workdir: Path, home: Path):
        self.workdir = workdir
        self.home = home
        self.port = 0
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.proc: subprocess.Popen | None = None
        self.client_config = home / ".ssh" / "config"
        self.ssh_command = f"ssh -F {self.client_config}"

    def url(self, path: Path) -> str:
        return f"ssh://{self.host_alias}{path}"

    @staticmethod
    def available() -> bool:
        return SSHD.exists() and shutil.which("ssh") is not None and shutil.which("ssh-keygen") is not None

    def __enter__(self) -> SSHServer:
        work = self.workdir
        work.mkdir(parents=True, exist_ok=True)
        host_key, client_key = work / "ssh_host_ed25519_key", self.home / ".ssh" / "id_ed25519"
        client_key.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        for key in (host_key, client_key):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "gs-test", "-f", str(key)],
                           check=True, stdin=subprocess.DEVNULL)
        authorized = work / "authorized_keys"
        authorized.write_text(client_key.with_suffix(".pub").read_text())
        authorized.chmod(0o600)
        config = work / "sshd_config"
        config.write_text("\n".join([
            "ListenAddress 127.0.0.1",  # on the port given with -p
            f"HostKey {host_key}",
            f"PidFile {work / 'sshd.pid'}",
            f"AuthorizedKeysFile {authorized}",
            f"AllowUsers {self.user}",
            "PermitRootLogin prohibit-password",
            "PubkeyAuthentication yes",
            "PasswordAuthentication no",
            "KbdInteractiveAuthentication no",
            "StrictModes no",
            "UsePAM no",
            "AcceptEnv GIT_PROTOCOL",
            "LogLevel ERROR",
            "",
        ]))
        if os.geteuid() == 0:
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # sshd's privilege separation dir
        self.proc, self.port = _start(lambda port: [str(SSHD), "-D", "-e", "-f", str(config), "-p", str(port)],
                                      work / "sshd.log")
        self.client_config.write_text("\n".join([
            f"Host {self.host_alias} 127.0.0.1",
            "  HostName 127.0.0.1",
            f"  Port {self.port}",
            f"  User {self.user}",
            f"  IdentityFile {client_key}",
            "  IdentitiesOnly yes",
            "  BatchMode yes",
            "  StrictHostKeyChecking no",
            "  UserKnownHostsFile /dev/null",
            "  LogLevel ERROR",
            "",
        ]))
        self.client_config.chmod(0o600)
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc:
            _stop(self.proc)


class GitHTTPServer:
    """Smart HTTP: ``git http-backend`` (CGI) for every repo under ``root``, behind a
    threaded HTTP server that wants Basic auth ``username:password`` on every request.

    ``requests`` records ``(method, path, status)``; ``auth_seen`` the Authorization
    headers received (to prove which credentials were sent).
    """

    scheme = "http"

    def __init__(self, root: Path, username: str = "alice", password: str = "s3cret-http-pw"):
        self.root = root
        self.username = username
        self.password = password
        self.requests: list[tuple[str, str, int]] = []
        self.auth_seen: list[str] = []
        self.server: ThreadingHTTPServer | None = None
        self.thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        assert self.server is not None
        return self.server.server_address[1]

    def url(self, name: str, *, with_password: bool = False) -> str:
        auth = f"{self.username}:{self.password}@" if with_password else ""
        return f"http://{auth}127.0.0.1:{self.port}/{name}"

    def __enter__(self) -> GitHTTPServer:
        self.server = _QuietServer(("127.0.0.1", 0), _make_cgi_handler(self))
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05},
                                       daemon=True)
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.server:
            self.server.shutdown()
            self.server.server_close()
        if self.thread:
            self.thread.join(timeout=5)


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address) -> None:  # a client hanging up is not a test failure
        pass


class _GitCGIHandler(BaseHTTPRequestHandler):
    """git http-backend behind Basic auth, for one :class:`GitHTTPServer` (its ``owner``)."""

    owner: GitHTTPServer
    expected: str  # the Authorization header that passes
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args) -> None:
        pass

    def _reply(self, status: int, headers: list[tuple[str, str]], body: bytes) -> None:
        self.owner.requests.append((self.command, self.path, status))
        self.send_response(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip(), 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _handle(self) -> None:
        body = self._body()
        auth = self.headers.get("Authorization")
        if auth:
            self.owner.auth_seen.append(auth)
        if auth != self.expected:
            self._reply(401, [("WWW-Authenticate", 'Basic realm="gs-test"'),
                              ("Content-Type", "text/plain")], b"credentials needed\n")
            return
        path, _, query = self.path.partition("?")
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(self.owner.root),
            "GIT_HTTP_EXPORT_ALL": "1",
            "GIT_CONFIG_NOSYSTEM": "1",
            "HOME": str(self.owner.root),
            "REMOTE_USER": self.owner.username,
            "REMOTE_ADDR": "127.0.0.1",
            "REQUEST_METHOD": self.command,
            "PATH_INFO": path,
            "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)),
            "SERVER_PROTOCOL": "HTTP/1.1",
            "GATEWAY_INTERFACE": "CGI/1.1",
        }
        for name in ("Content-Encoding", "Git-Protocol"):
            if self.headers.get(name):
                env["HTTP_" + name.upper().replace("-", "_")] = self.headers[name]
        proc = subprocess.run([str(GIT_HTTP_BACKEND)], input=body, env=env, capture_output=True)
        head, _, out = proc.stdout.partition(b"\r\n\r\n")
        if not _ and b"\n\n" in proc.stdout:
            head, _, out = proc.stdout.partition(b"\n\n")
        status, headers = 200, []
        for line in head.decode("latin-1").splitlines():
            name, _, value = line.partition(":")
            if name.lower() == "status":
                status = int(value.split()[0])
            elif name:
                headers.append((name.strip(), value.strip()))
        self._reply(status, headers, out)

    do_GET = do_POST = _handle


def _make_cgi_handler(owner: GitHTTPServer) -> type[BaseHTTPRequestHandler]:
    expected = "Basic " + base64.b64encode(f"{owner.username}:{owner.password}".encode()).decode()
    return type("Handler", (_GitCGIHandler,), {"owner": owner, "expected": expected})
