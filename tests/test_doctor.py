"""``gs doctor`` beyond privacy: what it vouches for exists, and what a chat needs next answers.

A real fake chat-completions server (its ``GET /v1/models``), real bare repos as remotes
(one there, one gone), the hooks gs ships.
"""

from __future__ import annotations

import shutil

from gitservers import free_port, init_bare


def _lines(r) -> list[str]:
    return r.out.splitlines()


def test_doctor_says_there_is_no_config_file_rather_than_vouch_for_it(gs, tmp_path):
    r = gs("doctor", "--offline")
    assert r.code == 0, r.out
    assert f"ok: no config file at {tmp_path / 'config.yaml'} (the settings are gs's defaults and the " \
        "environment's)" in _lines(r)
    assert not any("holds no API key" in line for line in _lines(r))
    (tmp_path / "config.yaml").write_text("model: gpt-4o-mini\n")
    assert f"ok: {tmp_path / 'config.yaml'} holds no API key others can read" in _lines(gs("doctor", "--offline"))


def test_doctor_asks_the_model_api_and_names_the_configured_model(gs, fake_api, tmp_path, monkeypatch):
    r = gs("doctor")
    assert r.code == 0, r.out
    [line] = [line for line in _lines(r) if "model API" in line]
    assert line.startswith(f"ok: the model API at {fake_api.base_url} answers: GET /models in ") and \
        line.endswith(" ms, 2 models (gpt-4o-mini among them)"), line
    assert fake_api.requests == []  # no chat request: GET /models only
    (tmp_path / "config.yaml").write_text("model: no-such-model\n")
    [line] = [line for line in _lines(gs("doctor")) if "model API" in line]
    assert line.endswith("2 models (not no-such-model, the configured model: set model in config.yaml, or "
                         "gs chat -m NAME)"), line
    monkeypatch.setenv("OPENAI_BASE_URL", f"http://user:hunter2-secret@127.0.0.1:{free_port()}/v1")
    r = gs("doctor")
    assert r.code == 1 and "hunter2" not in r.out, r.out
    [line] = [line for line in _lines(r) if line.startswith("problem: could not connect")]
    assert "(connection refused)" in line
    r = gs("doctor", "--offline")
    assert r.code == 0 and "skipped: the model API at http://user@127.0.0.1:" in r.out, r.out


def test_doctor_asks_each_remote_and_lists_the_hooks(gs, tmp_path):
    assert gs("ask", "-S", "w", "hi").code == 0
    there, gone = init_bare(tmp_path / "there.git"), init_bare(tmp_path / "gone.git")
    for name, url in (("origin", there), ("backup", gone)):
        assert gs("remote", "add", name, str(url)).code == 0
    assert gs("push", "origin").code == 0
    shutil.rmtree(gone)
    r = gs("doctor")
    assert r.code == 1, r.out
    assert f"ok: remote origin ({there}) answers: 1 session branch" in _lines(r)
    [problem] = [line for line in _lines(r) if line.startswith("problem: remote backup: ")]
    assert "nothing local was changed" in problem
    assert "ok: no hooks installed (gs hooks list shows the ones gs ships)" in _lines(r)
    assert gs("hooks", "install").code == 0
    [hooks] = [line for line in _lines(gs("doctor")) if line.startswith("ok: hooks installed: ")]
    assert hooks.endswith(" (gs hooks list)")
    r = gs("doctor", "--offline")
    assert f"skipped: remote origin ({there}) (--offline)" in _lines(r)
