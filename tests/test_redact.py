"""Secrets never enter history: pasted keys are replaced before anything is journaled or
committed, and no git object holds them."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from fakeapi import drop, text
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from test_pty import chat_env, spawn_chat  # noqa: F401 (fixtures: a gs chat in a pty)

from gitsessions.secrets import redact_stream
from gitsessions.secrets.redact import PATTERNS, Redactor, from_environment
from gitsessions.secrets.redact_stream import StreamRedactor

KEY = "test-key-0123456789abcdef"  # the OPENAI_API_KEY the gs runs use here
SK = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4"
GHP = "ghp_" + "x" * 36
AWS = "AKIA" + "ABCDEFGHIJKLMNOP"
PEM = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----"


def _all_object_bytes(repo_path) -> bytes:
    return subprocess.run(["git", "-C", str(repo_path), "cat-file", "--batch-all-objects", "--batch"],
                          capture_output=True, check=True).stdout


def test_pasted_secrets_leave_no_trace_in_any_object(gs, git, repo_path, fake_api):
    env = {"OPENAI_API_KEY": KEY, "MY_DB_PASSWORD": "hunter2hunter2", "SHORT_TOKEN": "abc"}
    fake_api.script(text(f"you said {KEY} and {SK}"))
    prompt = f"my key is {KEY}, also {SK} {GHP} {AWS}\n{PEM}\npw hunter2hunter2, short abc"
    r = gs("ask", "-S", "leak", prompt, env=env)
    assert r.code == 0, r.err
    # a reply cut off mid-stream goes through the journal: it is redacted too
    fake_api.script(drop(f"partial {KEY}"))
    gs("ask", "-S", "leak", "again", env=env)
    gs("gc")
    blob = _all_object_bytes(repo_path)
    for secret in (KEY, SK, GHP, AWS, "MIIEow", "hunter2hunter2"):
        assert secret.encode() not in blob, secret
    shown = gs("show", "leak", "--format", "json").json()
    user = shown["messages"][0]["content"]
    assert "[REDACTED:OPENAI_API_KEY]" in user and "[REDACTED:MY_DB_PASSWORD]" in user
    assert "[REDACTED:api-key]" in user and "[REDACTED:github-token]" in user
    assert "[REDACTED:aws-access-key]" in user and "[REDACTED:private-key]" in user
    assert "short abc" in user  # values under 8 characters never mangle text
    # the model never saw them either
    assert KEY not in str(fake_api.requests[-1]["messages"])
    assert not list((repo_path / "gs" / "journal").glob("*.jsonl"))
    git("fsck", "--strict")


def test_the_configured_api_key_is_redacted(gs, repo_path, tmp_path, fake_api):
    config_key = "cfg-key-" + "9z8y7x6w5v4u3t2s"
    (tmp_path / "config.yaml").write_text(f"api_key: {config_key}\n")
    tmp_path.joinpath("config.yaml").chmod(0o600)
    r = gs("ask", "-S", "cfg", f"my key is {config_key} ok", env={"OPENAI_API_KEY": None})
    assert r.code == 0, r.err
    assert config_key.encode() not in _all_object_bytes(repo_path)
    assert "my key is [REDACTED:api_key] ok" in gs("show", "cfg", "--format", "json").json()["messages"][0]["content"]
    assert config_key not in json.dumps(fake_api.requests[-1]["messages"])


def test_the_configured_system_prompt_and_the_title_echo_are_redacted(gs, tmp_path, fake_api):
    url = "postgres://admin:Hunter2" + "Secret@db/x"
    (tmp_path / "config.yaml").write_text(f"system: You administer {url}\n")
    assert gs("ask", "-S", "sys", "hi").code == 0
    sent = fake_api.requests[-1]["messages"][0]
    assert sent["role"] == "system" and "Hunter2Secret" not in sent["content"]
    assert "[REDACTED:url-password]" in sent["content"]
    r = gs("chat", "sys", input=f"/title {url}\n")
    assert r.code == 0, r.err
    assert "Hunter2Secret" not in r.out and "(title: postgres://admin:[REDACTED:url-password]@db/x)" in r.out


def test_a_new_session_id_that_looks_like_a_secret_is_refused(gs, git, repo_path, tmp_path):
    token = SHAPES["slack-token"].replace("1234567890-", "2345678901-", 1)
    assert gs("ask", "-S", "work", "hi").code == 0
    export = tmp_path / "one.json"
    export.write_text(json.dumps([{"role": "user", "content": "hello"}]))
    for args in (("ask", "-S", token, "hi"), ("import", str(export), "--as", token), ("fork", "work", token),
                 ("rename", "work", token)):
        r = gs(*args)
        assert r.code == 1 and "looks like a secret (slack-token); choose another" in r.err, (args, r.err)
        assert token not in r.err and token not in r.out, args
    assert git("for-each-ref", "--format=%(refname)").split() == ["refs/heads/work"]
    assert not [p for p in repo_path.rglob("*") if token in p.name]
    assert gs("ask", "-S", "ordinary-name-2", "hi").code == 0  # an ordinary id is as welcome as before


def test_redaction_can_be_turned_off(gs, repo_path, tmp_path):
    (tmp_path / "config.yaml").write_text("redact: false\n")
    assert gs("ask", "-S", "plain", f"keep {SK}").code == 0
    assert SK.encode() in _all_object_bytes(repo_path)


def test_extra_patterns_from_config(gs, tmp_path):
    (tmp_path / "config.yaml").write_text('redact_patterns: {acme-token: "acme_[0-9]{6}"}\n')
    gs("ask", "-S", "p", "token acme_123456 here")
    assert "[REDACTED:acme-token]" in gs("show", "p", "--format", "json").json()["messages"][0]["content"]
    (tmp_path / "config.yaml").write_text('redact_patterns: {bad: "("}\n')
    r = gs("ask", "-S", "p", "x")
    assert r.code == 1 and "redact_patterns.bad" in r.err


def test_redactor_unit():
    r = from_environment({"GITHUB_TOKEN": "t" * 10, "HOME": "/home/someone-long", "api_key": "k" * 12})
    assert r.text("a " + "t" * 10 + " b") == "a [REDACTED:GITHUB_TOKEN] b"
    assert r.text("/home/someone-long") == "/home/someone-long"
    assert r.text("k" * 12) == "[REDACTED:api_key]"
    longest = Redactor({"abcdefgh": "A", "abcdefghij": "B"})
    assert longest.text("abcdefghij") == "[REDACTED:B]"
    nested = Redactor({}, PATTERNS).value({"x": [SK, {"y": GHP}], "n": 3})
    assert nested == {"x": ["[REDACTED:api-key]", {"y": "[REDACTED:github-token]"}], "n": 3}
    assert Redactor({}, PATTERNS).text("ask-me about sk-short") == "ask-me about sk-short"


# -- the detector set -----------------------------------------------------

#: One of each credential shape gs redacts, by the kind its replacement names; none is real (each
#: is built from pieces so that no scanner takes this file for a leak).
SHAPES = {
    "slack-token": "xoxb-" + "1234567890-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx",
    "google-api-key": "AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q",
    "stripe-access-key": "sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc",
    "anthropic-api-key": "sk-ant-api03-" + "Xy12Ab34Cd56Ef78Gh90Ij12Kl34Mn56",
    "jwt": "eyJhbGciOiJIUzI1NiJ9." + "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    "url-password": "S3cretPassw0rd",  # in postgres://admin:<it>@db.example.com/app
    "assigned-secret": "hunter2hunter2",  # in password = "<it>"
    "github-token": "ghp_" + "a1B2c3D4e5" * 4,
    "aws-access-key": "AKIA" + "IOSFODNN7EXAMPL3",
    "private-key": "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----",
    "api-key": "sk-proj-" + "abc123DEF456ghi789JKL012mno",
    "high-entropy-string": "Zx8Qp2Lm9Rt4Vb7" + "Nc1Kd5Hf3Js6Ga0Wq",
    "npm-token": "npm_" + "abcdefghij" * 3 + "klmnop",
    "slack-app-token": "xapp-1-A0123456789-" + "1234567890123-" + "abcdef0123456789" * 4,
}
#: Each shape in the text it comes in.
IN_TEXT = {**{kind: f"here: {value} ok" for kind, value in SHAPES.items()},
           "url-password": f"db at postgres://admin:{SHAPES['url-password']}@db.example.com/app ok",
           "assigned-secret": f'config: password = "{SHAPES["assigned-secret"]}" ok'}
#: What stays as it is: prose, code, hex commit ids, paths, UUIDs, identifiers.
ORDINARY = [
    "The commit 3f2a9c1d4e5b6a7f8091a2b3c4d5e6f7a8b9c0d1 fixed it; see abc1234 and 9fceb02.",
    "Open /home/alice/Projects/gitsessions2/README.md or https://github.com/Owner/Repo2/blob/main/src/File.py",
    "The password is something you choose: password = input('Password: ') or password = getpass()",
    "if password == secret_value: return; api_key = os.environ['OPENAI_API_KEY']",
    "uuid 123e4567-e89b-12d3-a456-426614174000, base64 SGVsbG8gd29ybGQ= and sha256 " + "ab12" * 16,
    "internationalization, ConfigurationManagerFactory2, task-runner-configuration-files-and-more",
    "MyVeryLongCamelCaseIdentifierName123 and get_user_by_id_and_name_v2 at 127.0.0.1:8080",
    "The secret: keep it short. Here is the key: nothing at all. sk-short, AKIA lowercase.",
    # a value that is code: a name, a dotted name, a call, a literal, a reference, the name itself
    'client = OpenAI(api_key=os.environ.get("OPENAI_API_KEY"))',
    "password = None; api_key = True; password = self.password; password = args.password",
    "password=password", "def login(user, password=None):", "Client(api_key=api_key)",
    "secret_key = settings.SECRET_KEY", "psql --password=$DB_PASSWORD", "secret = getpass.getpass()",
    "TOKENIZERS_PARALLELISM=false max_tokens=4096 sorted(xs, key=len) SSH_KEY=~/.ssh/id_ed25519",
    "class Settings:\n    api_key: SecretStr\n    password: Optional[str] = None\n",
    # paths and URLs whose words together look random
    "https://stackoverflow.com/questions/12345678/How-to-Parse-JSON-in-Python3",
    "ls /var/lib/docker/overlay2/l/XJ3K2M5N6P7Q8R9S0T1U2V3W4X/diff",
]
#: A value given to a name holding a secret word, as a .env file, a shell, a URL, YAML and XML
#: write it: (the text, the secret in it).
NAMED = [
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI/K7MDENG"),
    ("JWT_SECRET=9f8e7d6c5b4a3928" + "1706f5e4d3c2b1a0", "9f8e7d6c5b4a3928"),
    ("SESSION_SECRET=Qm9vbGVhblNlc3Npb25T" + "ZWNyZXQxMjM0NXhZ", "Qm9vbGVhblNlc3Npb25T"),
    ("ADMIN_PASSWORD=hunter2" + "hunter2", "hunter2hunter2"),
    ("export GITHUB_TOKEN=x9F2kLq8ZpW3vN7t" + "R1yB6mC4hJ0sD5gA", "x9F2kLq8ZpW3vN7t"),
    ("https://api.example.com/cb?access_token=x9F2kLq8ZpW3vN7t" + "R1yB6mC4hJ0sD5gA&x=1", "x9F2kLq8ZpW3vN7t"),
    ("PGPASSWORD=s3cr3t" + "passw0rd psql -h db", "s3cr3tpassw0rd"),
    ("DB_PASSWORD=post" + "gres", "postgres"),
    ("db:\n  password: CorrectHorse" + "BatteryStaple9\n  api_key: abcdef12" + "34567890\n", "CorrectHorseBattery"),
    ("secret: mysecret" + "value12", "mysecretvalue12"),
    ("<config><password>CorrectHorse" + "9x</password></config>", "CorrectHorse9x"),
]


def test_every_listed_shape_is_replaced_by_its_kind():
    r = from_environment({})
    for kind, sample in IN_TEXT.items():
        out = r.text(sample)
        assert f"[REDACTED:{kind}]" in out, (kind, out)
        assert SHAPES[kind] not in out and out.endswith(" ok"), (kind, out)
    assert r.text(IN_TEXT["url-password"]) == "db at postgres://admin:[REDACTED:url-password]@db.example.com/app ok"
    assert r.text(IN_TEXT["assigned-secret"]) == 'config: password = "[REDACTED:assigned-secret]" ok'
    assert r.text("PASSWORD=hunter2x then") == "PASSWORD=[REDACTED:assigned-secret] then"


def test_a_value_given_to_a_secret_name_is_replaced_whole_and_streamed():
    r = from_environment({})
    for sample, secret in NAMED:
        for out in (r.text(sample), _streamed(r, [sample[i:i + 5] for i in range(0, len(sample), 5)])):
            assert secret not in out and "[REDACTED:assigned-secret]" in out, (sample, out)
    assert r.text(NAMED[5][0]) == "https://api.example.com/cb?access_token=[REDACTED:assigned-secret]&x=1"
    assert r.text(NAMED[8][0]).count("[REDACTED:assigned-secret]") == 2
    # a value just before another secret: the stream masks that one with NULs, the whole text
    # replaces it with "[REDACTED:...]"; both see the same value
    text = "password= -----BEGIN RSA PRIVATE KEY "
    assert _streamed(r, list(text)) == r.text(text) == "password= [REDACTED:assigned-secret][REDACTED:private-key] "


def test_a_path_is_judged_a_segment_at_a_time():
    r = from_environment({})
    token = SHAPES["high-entropy-string"]
    assert r.text(f"https://example.com/a/{token}/b") == "https://example.com/a/[REDACTED:high-entropy-string]/b"
    aws = "wJalrXUtnFEMI/K7MDENG/" + "bPxRfiCYEXAMPLEKEY"  # base64 holding "/": no words, judged whole
    assert r.text(f"aws {aws} ok") == "aws [REDACTED:high-entropy-string] ok"
    assert _streamed(r, [f"aws {aws} ok"[i:i + 3] for i in range(0, 50, 3)]) == "aws [REDACTED:high-entropy-string] ok"


#: Keys longer than their shape's match: (the text, the tail the shape's match leaves).
LONGER = [("stripe: sk_live_51HabcdEFGHijklMNOPqr" + "stUVWxyz0123456789 ok", "VWxyz0123456789"),
          ("jwt: eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0." + "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U ok",
           "dozjgNryP4J3"),
          ("google: AIza" + "SyA1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q" + "Rs7T ok", "Rs7T")]


def test_a_match_ending_inside_a_token_takes_the_rest_of_it():
    r = from_environment({})
    for sample, tail in LONGER:
        for out in (r.text(sample), _streamed(r, [sample[i:i + 4] for i in range(0, len(sample), 4)])):
            assert tail not in out and out.endswith("] ok"), (sample, out)


REDIS = "cache at redis://:MyRedis" + "Pass123@cache:6379/0 ok"


def test_a_url_password_without_a_user_name_is_replaced():
    r = from_environment({})
    whole = r.text(REDIS)
    assert whole == "cache at redis://:[REDACTED:url-password]@cache:6379/0 ok"
    for at in range(1, len(REDIS)):
        stream = StreamRedactor(r)
        first = stream.feed(REDIS[:at])
        assert "MyRedisPass" not in first
        assert first + stream.feed(REDIS[at:]) + stream.flush() == whole, at


def test_own_patterns_may_name_the_secret_group():
    r = from_environment({}, {"acme": r"acme:(?P<secret>[0-9]{6})!"})
    assert r.text("id acme:123456! ok") == "id acme:[REDACTED:acme]! ok"


def test_ordinary_text_is_left_alone():
    r = from_environment({})
    for sample in ORDINARY:
        assert r.text(sample) == sample


def test_the_detectors_are_those_of_detect_secrets():
    from detect_secrets.plugins.slack import SlackDetector

    from gitsessions.secrets.detectors import library_shapes

    slack = [s.rx for s in library_shapes() if s.name == "slack-token"]
    assert slack == list(SlackDetector().denylist)  # its regexes, not a copy of them
    assert "assigned-secret" in {s.name for s in library_shapes()}


def _shapes_in_a_new_process(cache) -> dict:
    code = ("import json, sys; from pathlib import Path; from gitsessions.secrets.detectors import library_shapes; "
            f"shapes = library_shapes(Path({str(cache)!r})); "
            "print(json.dumps({'imported': 'detect_secrets' in sys.modules, "
            "'shapes': [[s.name, s.rx.pattern, s.rx.flags, s.group, s.near] for s in shapes]}))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(run.stdout)


def test_the_detector_set_is_read_from_the_library_once_then_from_its_cache(tmp_path):
    from gitsessions.secrets.detector_cache import library_key

    cache = tmp_path / "cache" / "detectors.json"
    first = _shapes_in_a_new_process(cache)
    assert first["imported"] and cache.exists()
    assert cache.stat().st_mode & 0o777 == 0o600
    again = _shapes_in_a_new_process(cache)
    assert not again["imported"]  # nor requests, nor the rest it brings
    assert again["shapes"] == first["shapes"]
    assert json.loads(cache.read_text())["key"] == library_key()


def test_a_stale_or_damaged_detector_cache_is_read_again_from_the_library(tmp_path):
    cache = tmp_path / "detectors.json"
    fresh = _shapes_in_a_new_process(cache)["shapes"]
    stale = json.loads(cache.read_text())
    stale["key"] = "another version of detect-secrets"
    stale["data"]["regexes"] = []
    for body in (json.dumps(stale), "{not json", ""):
        cache.write_text(body)
        again = _shapes_in_a_new_process(cache)
        assert again["imported"] and again["shapes"] == fresh
        assert json.loads(cache.read_text())["data"]["regexes"]  # written back whole
    cache.unlink()
    cache.mkdir()  # cannot be read nor replaced: the shapes still come, nothing is kept
    assert _shapes_in_a_new_process(cache)["shapes"] == fresh


def _streamed(redactor, chunks) -> str:
    stream = StreamRedactor(redactor)
    return "".join(stream.feed(c) for c in chunks) + stream.flush()


def test_a_shape_split_at_every_position_is_never_released():
    r = from_environment({})
    for kind in ("slack-token", "assigned-secret", "high-entropy-string", "url-password"):
        text = "lead-in text, " + IN_TEXT[kind] + " and the rest of the reply."
        whole = r.text(text)
        for at in range(1, len(text)):
            stream = StreamRedactor(r)
            first = stream.feed(text[:at])
            assert SHAPES[kind][:6] not in first or text.index(SHAPES[kind]) + 6 > at, (kind, at, first)
            out = first + stream.feed(text[at:]) + stream.flush()
            assert out == whole, (kind, at)
    for kind, text in IN_TEXT.items():  # and one character at a time
        released = []
        stream = StreamRedactor(r)
        for ch in text:
            released.append(stream.feed(ch))
            assert SHAPES[kind].splitlines()[0][:8] not in "".join(released), kind
        assert "".join(released) + stream.flush() == r.text(text), kind
    for text in ORDINARY:
        assert _streamed(r, [text[i:i + 3] for i in range(0, len(text), 3)]) == text


def test_every_shape_stays_out_of_objects_journal_and_model_request(gs, git, repo_path, fake_api):
    prompt = "\n".join(IN_TEXT.values())
    fake_api.script(text("you said:\n" + prompt, chunk_size=3))
    assert gs("ask", "-S", "shapes", prompt).code == 0
    fake_api.script(drop("cut off: " + prompt))  # a reply cut mid-stream goes through the journal
    gs("ask", "-S", "shapes", "again")
    journals = b"".join(p.read_bytes() for p in (repo_path / "gs").rglob("*.jsonl"))
    gs("gc")
    stored = _all_object_bytes(repo_path) + journals
    sent = json.dumps(fake_api.requests)
    for kind, secret in SHAPES.items():
        piece = secret.splitlines()[-2] if kind == "private-key" else secret
        assert piece.encode() not in stored, kind
        assert piece not in sent, kind
    shown = gs("show", "shapes", "--format", "json").json()["messages"]
    for kind in SHAPES:
        assert f"[REDACTED:{kind}]" in shown[0]["content"] and f"[REDACTED:{kind}]" in shown[1]["content"], kind
    git("fsck", "--strict")


def test_every_shape_stays_out_of_the_prompt_history(spawn_chat, fake_api, repo_path):  # noqa: F811
    from test_pty import PROMPT, finish

    child = spawn_chat()
    child.sendline(" ".join(v for k, v in IN_TEXT.items() if k != "private-key"))
    child.expect(PROMPT)
    child.sendline("/exit")
    finish(child)
    history = (repo_path / "gs" / "prompt-history").read_text()
    for kind, secret in SHAPES.items():
        if kind != "private-key":
            assert secret not in history and f"[REDACTED:{kind}]" in history, kind


def test_the_shipped_pre_commit_refuses_the_same_shapes(gs, repo_path, tmp_path):
    from test_hooks import _pre_commit

    (tmp_path / "config.yaml").write_text('redact_patterns: {acme-token: "acme_[0-9]{6}"}\n')
    assert gs("hooks", "install", "pre-commit").code == 0
    hook = repo_path / "hooks" / "pre-commit"
    for kind, sample in {**IN_TEXT, "acme-token": "see acme_123456 here"}.items():
        if kind == "high-entropy-string":
            continue  # entropy is not a regex: only the redactor finds these
        refused, err = _pre_commit(hook, f"first line\n{sample}", tmp_path)
        assert refused and f"the pattern {kind}" in err, (kind, err)
        assert SHAPES.get(kind, "acme_123456").splitlines()[-1] not in err
    for sample in ORDINARY:
        assert _pre_commit(hook, sample, tmp_path) == (False, ""), sample


_PIECES = [*IN_TEXT.values(), *ORDINARY, *SHAPES.values(), *(sample for sample, _secret in NAMED + LONGER), REDIS,
           "password=", "sk-", "xoxb-", "AKIA", "Zx8Qp2",
           "postgres://u:", "@h/db", '"', "=", "token: ", "-----BEGIN RSA PRIVATE KEY"]
_ENV_KEY = "sk-envvalue-0123456789abcdef"
_REDACTOR = from_environment({"OPENAI_API_KEY": _ENV_KEY})
_KIND = re.compile(r"\[REDACTED:[^\]]*\]")
#: Replacements with only punctuation between them: one secret the stream masks whole where the
#: whole text's shapes, run one after another, leave a dash between two matches.
_JOINED = re.compile(r"\[REDACTED\](?:[^\w\s]*\[REDACTED\])+")


def _replaced(text: str) -> str:
    return _JOINED.sub("[REDACTED]", _KIND.sub("[REDACTED]", text))


def _chunked(text: str, sizes: list[int]) -> list[str]:
    chunks, at, k = [], 0, 0
    while at < len(text):
        chunks.append(text[at:at + sizes[k % len(sizes)]])
        at += sizes[k % len(sizes)]
        k += 1
    return chunks


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.sampled_from(_PIECES), st.sampled_from([" ", "\n", ", ", ""])), min_size=1, max_size=8),
       st.lists(st.integers(1, 40), min_size=1, max_size=30))
@example([("password=", " "), ("-----BEGIN RSA PRIVATE KEY", " ")], [1])
def test_a_stream_of_secrets_split_anywhere_is_redacted_as_the_whole_text(pieces, sizes):
    text = "".join(piece + sep for piece, sep in pieces)
    streamed, whole = _streamed(_REDACTOR, _chunked(text, sizes)), _REDACTOR.text(text)
    for secret in [*SHAPES.values(), _ENV_KEY]:  # never a secret the whole text's redaction removes
        assert secret.splitlines()[0][:10] not in streamed or secret.splitlines()[0][:10] in whole, secret
    if all(sep for _piece, sep in pieces):
        # The same text is replaced; which kind names a secret two shapes match may differ (the
        # stream may meet the other shape first, on the part that had arrived).
        assert _replaced(streamed) == _replaced(whole)


@pytest.mark.parametrize("batch", [1, 64])
def test_a_secret_just_before_a_held_start_is_never_released(batch, monkeypatch):
    # A secret ending where a held start begins (a token right before "-----BEGIN", "sk-",
    # "password="): released alone it would not match, as what follows it is not known yet.
    # Looked at every ``batch`` characters, so that every cut is tried.
    monkeypatch.setattr(redact_stream, "STREAM_BATCH", batch)
    texts = [*SHAPES.values(), _ENV_KEY, "password=", "Zx8Qp2Lm9Rt4"]
    for a in texts:
        for b in texts:
            for sep in ("", " ", "="):
                text = a + sep + b + " tail"
                whole = _REDACTOR.text(text)
                for size in (1, 7):
                    streamed = _streamed(_REDACTOR, _chunked(text, [size]))
                    for secret in [*SHAPES.values(), _ENV_KEY]:
                        start = secret.splitlines()[0][:10]
                        assert start not in streamed or start in whole, (text, size, streamed)
