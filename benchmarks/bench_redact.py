"""Section 16 (``redact``): what redaction costs per MB of text, whole and streamed.

Redaction runs on every prompt, every event and every streamed reply: its
shapes are detect-secrets' detectors plus gs's own. Measured in-process on two texts, against
one ``re.sub`` pass of a single credential pattern over the same text (the least any
regex-based redaction costs):

- typical chat text: prose, code blocks, paths, commit ids, no secret;
- text dense with secrets: every line holds one of the credential shapes gs redacts.

Also: the cost of building the detector set in a fresh process, paid on the first text a
process redacts: from detect-secrets itself (importing it), and from the cache file gs keeps
of it (what every process but the first after an install pays).
"""

from __future__ import annotations

import re
import subprocess
import sys
import time

from _common import PY, ROOT, Settings, measure, row, section

from gitsessions.secrets.redact import from_environment
from gitsessions.secrets.redact_stream import StreamRedactor

PARAGRAPH = (
    "Here is how to configure the service. First open `config.yaml` and set `timeout` to 30 "
    "seconds; then run `make test` and look at commit 3f2a9c1d4e5b6a7f8091a2b3c4d5e6f7a8b9c0d1.\n\n"
    "```python\ndef load(path):\n    with open(path) as f:\n        return yaml.safe_load(f)\n```\n\n"
    "The client reads /home/alice/Projects/app/settings.toml; keep the key names short. That is all.\n"
)
#: One line per shape (none real: built from pieces).
SECRETS = [
    "slack: xoxb-" + "1234567890-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx",
    "google: AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "stripe: sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "anthropic: sk-ant-api03-" + "Xy12Ab34Cd56Ef78Gh90Ij12Kl34Mn56",
    "jwt: eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
    "db: postgres://admin:" + "S3cretPassw0rd" + "@db.example.com/app",
    'config: password = "' + "hunter2hunter2" + '"',
    "github: ghp_" + "a1B2c3D4e5" * 4,
    "aws: AKIA" + "IOSFODNN7EXAMPL3",
    "openai: sk-proj-" + "abc123DEF456ghi789JKL012mno",
    "token: Zx8Qp2Lm9Rt4Vb7" + "Nc1Kd5Hf3Js6Ga0Wq",
]


def _text(unit: str, size: int) -> str:
    return (unit * (size // len(unit) + 1))[:size]


def _stream(redactor, text: str, chars: int = 4) -> None:
    stream = StreamRedactor(redactor)
    for i in range(0, len(text), chars):
        stream.feed(text[i:i + chars])
    stream.flush()


def _load_cost(cache: str | None) -> float:
    """Seconds a fresh process takes to build the detector set (median of 3).

    Args:
        cache: the detector cache file (None: none, detect-secrets is imported).
    """
    code = ("import time; from pathlib import Path; from gitsessions.secrets.detectors import library_shapes; "
            f"cache = {cache!r}; t = time.perf_counter(); "
            "library_shapes(Path(cache) if cache else None); print(time.perf_counter() - t)")
    runs = sorted(float(subprocess.run([PY, "-c", code], capture_output=True, text=True, check=True,
                                       cwd=ROOT).stdout) for _ in range(3))
    return runs[1]


def bench_redact(s: Settings) -> None:
    size = 200_000 if s.quick else 1_000_000
    mb = size / 1e6
    section(f"16. redaction cost per MB: whole texts and streamed in 4-character chunks ({size // 1000} KB each)")
    redactor = from_environment({"OPENAI_API_KEY": "bench-key-0123456789abcdef"})
    redactor.text("load the detectors")  # the one-time load is reported on its own below
    baseline = re.compile(r"\bsk-[A-Za-z0-9_-]{20,}")
    reps = 3 if s.quick else 5
    for name, text in (("typical chat text", _text(PARAGRAPH, size)),
                       ("text dense with secrets", _text("\n".join(SECRETS) + "\n", size))):
        one = measure(lambda text=text: baseline.sub("[REDACTED:api-key]", text), reps=reps)
        whole = measure(lambda text=text: redactor.text(text), reps=reps)
        streamed = measure(lambda text=text: _stream(redactor, text), reps=1 if s.quick else 2, warmup=0)
        row(f"{name}: one re.sub pass (baseline)", f"{one.cpu_median / mb * 1e3:.1f} ms CPU per MB")
        row(f"{name}: Redactor.text", f"{whole.cpu_median / mb * 1e3:.0f} ms CPU per MB "
            f"({whole.cpu_median / max(one.cpu_median, 1e-9):.0f}x the baseline)")
        row(f"{name}: StreamRedactor, 4-char chunks", f"{streamed.cpu_median / mb * 1e3:.0f} ms CPU per MB, "
            f"{streamed.cpu_median / (size / 4) * 1e6:.1f} us per chunk")
    row("building the detector set, no cache (imports detect-secrets)", f"{_load_cost(None) * 1e3:.0f} ms")
    cache = str(s.tmp / "detectors.json")
    _load_cost(cache)  # written once per installed detect-secrets
    row("building the detector set from its warm cache (what gs does)", f"{_load_cost(cache) * 1e3:.1f} ms")


def run(s: Settings, only: set[str]) -> None:
    if "redact" in only:
        t0 = time.perf_counter()
        bench_redact(s)
        row("(section time)", f"{time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    settings = Settings.make("--quick" in sys.argv, ROOT)
    run(settings, {"redact"})
