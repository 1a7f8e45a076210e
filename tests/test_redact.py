"""Secrets never enter history: pasted keys are replaced before anything is journaled or
committed, and no git object holds them."""

from __future__ import annotations

import subprocess

from fakeapi import drop, text

from gitsessions.redact import PATTERNS, Redactor, from_environment

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
    r = gs("ask", "leak", prompt, env=env)
    assert r.code == 0, r.err
    # a reply cut off mid-stream goes through the journal: it is redacted too
    fake_api.script(drop(f"partial {KEY}"))
    gs("ask", "leak", "again", env=env)
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


def test_redaction_can_be_turned_off(gs, repo_path, tmp_path):
    (tmp_path / "config.yaml").write_text("redact: false\n")
    assert gs("ask", "plain", f"keep {SK}").code == 0
    assert SK.encode() in _all_object_bytes(repo_path)


def test_extra_patterns_from_config(gs, tmp_path):
    (tmp_path / "config.yaml").write_text('redact_patterns: {acme-token: "acme_[0-9]{6}"}\n')
    gs("ask", "p", "token acme_123456 here")
    assert "[REDACTED:acme-token]" in gs("show", "p", "--format", "json").json()["messages"][0]["content"]
    (tmp_path / "config.yaml").write_text('redact_patterns: {bad: "("}\n')
    r = gs("ask", "p", "x")
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
