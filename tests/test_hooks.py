"""The session repo's commit hooks: real ``gs`` processes against the fake
API, real hook scripts, real ``git``."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from gitsessions.secrets.redact import PATTERNS, Redactor
from gitsessions.store.hook_install import SECRET_PATTERNS_FILE, hook_status, install_hooks, shipped_hooks
from gitsessions.store.hooks import CommitHooks, clean_message, run_hook

ROOT = Path(__file__).resolve().parent.parent
HOOKS = ROOT / "hooks"
#: Shaped like an OpenAI key (sk- + 32 key characters); not a real one.
FAKE_KEY = "sk-" + "Zq7Xw3Rt9Yp2Lm5Nb8Vc1Kd4" + "Hf6Js0Ga"


def _hook(repo_path: Path, name: str, body: str, executable: bool = True) -> Path:
    path = repo_path / "hooks" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(body)
    path.chmod(0o755 if executable else 0o644)
    return path


def _tip(git, ref: str = "refs/heads/work") -> str:
    return git("rev-parse", "--verify", "-q", ref, check=False).strip()


def _no_redaction(tmp_path: Path) -> None:
    # gs's own redaction would replace the key before the hook sees it; the hook is the
    # second line of defence for users who turn redaction off.
    (tmp_path / "config.yaml").write_text("redact: false\n")


# -- the shipped hooks --------------------------------------------------------------------


def test_shipped_hooks_are_the_top_level_files():
    shipped = shipped_hooks()
    assert {"pre-commit", "post-commit"} <= set(shipped)
    assert shipped == {p.name: p.read_bytes() for p in HOOKS.iterdir() if p.is_file()}
    for name, data in shipped.items():
        path = HOOKS / name
        assert path.stat().st_mode & stat.S_IXUSR, f"{path} is not executable"
        lines = data.decode().splitlines()
        assert lines[0] in ("#!/bin/sh", "#!/usr/bin/env bash", "#!/bin/bash", "#!/usr/bin/env python3")
        assert lines[1].startswith("# gitsessions "), f"{path} lacks its header comment"
        if "python" in lines[0]:
            compile(data, str(path), "exec")
        else:
            subprocess.run(["sh", "-n", str(path)], check=True)


def test_the_wheel_lists_every_package():
    # pyproject.toml lists the packages (to map hooks/ into the wheel): a new one must be added.
    tomllib = pytest.importorskip("tomllib")
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    found = {".".join(p.parent.relative_to(ROOT).parts) for p in (ROOT / "gitsessions").rglob("__init__.py")}
    assert set(config["packages"]) == found | {"gitsessions.hooks_data"}
    assert config["package-dir"] == {"gitsessions.hooks_data": "hooks"}


#: Credentials of each shape the redactor knows (not real ones), by pattern name.
SECRETS = [(FAKE_KEY, "api-key"), ("ghp_" + "a1B2c3D4e5" * 4, "github-token"),
           ("AKIA" + "IOSFODNN7EXAMPL3", "aws-access-key"),
           ("-----BEGIN RSA PRIVATE KEY-----\nMIIEow...", "private-key")]
HARMLESS = ["task-runner-configuration-files-and-more", "sk-short", "AKIA lowercase", "the word ghp_ alone",
            "BEGIN PUBLIC KEY"]


def _installed_pre_commit(tmp_path: Path) -> Path:
    repo = tmp_path / "hooked.git"
    repo.mkdir()
    install_hooks(repo, ["pre-commit"], secret_patterns=PATTERNS)
    return repo / "hooks" / "pre-commit"


def _pre_commit(hook: Path, content: str, tmp_path: Path) -> tuple[bool, str]:
    """Run the hook as gs does on one new user/message event: (refused, stderr)."""
    line = json.dumps({"seq": 3, "time": 1, "type": "user/message", "data": {"content": content}},
                      separators=(",", ":"), ensure_ascii=False)
    (tmp_path / "new.jsonl").write_text(line + "\n")
    # no PYTHONPATH: the hook runs without gitsessions
    env = {"PATH": os.environ["PATH"], "GS_SESSION": "w", "GS_NEW_EVENTS": str(tmp_path / "new.jsonl"),
           "GIT_DIR": str(hook.parent.parent)}
    proc = subprocess.run([str(hook)], env=env, capture_output=True, text=True)
    return proc.returncode != 0, proc.stderr


def test_shipped_pre_commit_patterns(tmp_path: Path):
    hook = _installed_pre_commit(tmp_path)
    redactor = Redactor(patterns=PATTERNS)
    for secret, name in SECRETS:
        text = f"here:\n{secret} ok"
        refused, err = _pre_commit(hook, text, tmp_path)
        assert refused, secret
        assert redactor.text(text) != text  # what the hook refuses, the redactor replaces
        assert f"the pattern {name} " in err and "event 3 (user/message) of session w" in err
        assert secret.splitlines()[0][5:] not in err  # which pattern, never the secret
    for harmless in HARMLESS:
        assert _pre_commit(hook, harmless, tmp_path) == (False, ""), harmless
        assert redactor.text(harmless) == harmless


def test_pre_commit_reads_the_redactor_patterns_written_next_to_it(tmp_path: Path):
    hook = _installed_pre_commit(tmp_path)
    patterns_file = hook.parent / SECRET_PATTERNS_FILE
    assert json.loads(patterns_file.read_text())["patterns"] == PATTERNS
    assert SECRET_PATTERNS_FILE not in {s.name for s in hook_status(hook.parent.parent)}  # not a hook
    # the hook checks what the file says, not a list of its own
    patterns_file.write_text(json.dumps({"patterns": {"ticket": r"\btok_[a-z0-9]{8}\b"}}))
    refused, err = _pre_commit(hook, "a tok_abcd1234 here", tmp_path)
    assert refused and "the pattern ticket" in err
    assert _pre_commit(hook, FAKE_KEY, tmp_path) == (False, "")
    # installing again writes the redactor's patterns again
    install_hooks(hook.parent.parent, ["pre-commit"], secret_patterns=PATTERNS)
    assert json.loads(patterns_file.read_text())["patterns"] == PATTERNS
    # without the file it refuses (it cannot check) and says how to write it
    patterns_file.unlink()
    refused, err = _pre_commit(hook, "harmless", tmp_path)
    assert refused and "gs hooks install pre-commit" in err


def test_pre_commit_under_a_plain_git_commit(tmp_path: Path):
    work = tmp_path / "clone"
    subprocess.run(["git", "init", "-q", str(work)], check=True)

    def git(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(["git", "-C", str(work), "-c", "user.name=t", "-c", "user.email=t@example.com",
                               *args], capture_output=True, text=True)

    install_hooks(work / ".git", ["pre-commit"], secret_patterns=PATTERNS)
    git("config", "--add", "gitsessions.secretPattern", r"tok_[a-z0-9]{8}")
    event = json.dumps({"seq": 3, "time": 1, "type": "user/message", "data": {"content": f"key\n{FAKE_KEY}"}})
    for name, text, why in [("session.jsonl", event, "the pattern api-key (\\bsk-"),
                            ("notes.txt", "see tok_abcd1234", "the configured pattern 'tok_[a-z0-9]{8}'")]:
        (work / name).write_text(text + "\n")
        assert git("add", name).returncode == 0
        r = git("commit", "-q", "-m", "with a secret")
        assert r.returncode == 1, r.stderr
        assert why in r.stderr and FAKE_KEY not in r.stderr
        assert (f"event 3 (user/message) of {name}" if name == "session.jsonl"
                else f"a line added to {name}") in r.stderr
        assert git("rev-parse", "-q", "--verify", "HEAD").stdout == ""  # no commit made
        assert git("rm", "-q", "--cached", name).returncode == 0
    (work / "notes.txt").write_text("nothing secret\n")
    git("add", "notes.txt")
    r = git("commit", "-q", "-m", "harmless")
    assert r.returncode == 0 and r.stderr == "", r.stderr


# -- pre-commit ---------------------------------------------------------------------------


def test_refusing_pre_commit_keeps_the_turn_and_chmod_x_saves_it(gs, git, repo_path, tmp_path):
    _no_redaction(tmp_path)
    assert gs("hooks", "install", "pre-commit").code == 0
    assert gs("ask", "-S", "work", "a harmless first turn").code == 0
    first = _tip(git)

    prompt = f"my key is {FAKE_KEY}, keep it safe"
    r = gs("ask", "-S", "work", prompt)
    assert r.code == 1
    assert "pre-commit hook refused" in r.err and "sk-" in r.err  # which hook, and why
    assert "journal" in r.err and "nothing is lost" in r.err
    assert f"chmod -x {repo_path / 'hooks' / 'pre-commit'}" in r.err
    assert FAKE_KEY not in r.err
    assert "Traceback" not in r.err
    assert _tip(git) == first  # no commit made
    journal = repo_path / "gs" / "journal" / "work.jsonl"
    assert prompt in journal.read_text()

    # Reading still works while the hook refuses; the refusal is a warning.
    r = gs("log", "work", "--json")
    assert r.code == 0, r.err
    assert len(r.json()) == 1 and "pre-commit" in r.err and "warning" in r.err
    assert journal.exists()

    (repo_path / "hooks" / "pre-commit").chmod(0o644)  # disable it, like git: chmod -x
    r = gs("log", "work", "--json")
    assert r.code == 0, r.err
    log = r.json()
    assert len(log) == 2 and log[0]["parents"] == [first]
    assert log[0]["subject"].startswith("turn 2: my key is")
    assert prompt in git("show", "work:session.jsonl")
    assert not journal.exists()
    git("fsck", "--strict")


def test_refused_first_turn_of_a_new_session_is_recovered(gs, git, repo_path, tmp_path):
    _no_redaction(tmp_path)
    assert gs("hooks", "install", "pre-commit").code == 0
    r = gs("ask", "-S", "fresh", f"paste {FAKE_KEY}")
    assert r.code == 1 and "pre-commit" in r.err
    assert _tip(git, "refs/heads/fresh") == ""
    assert FAKE_KEY in (repo_path / "gs" / "journal" / "fresh.jsonl").read_text()
    # a writing command on the session is refused too, before anything new is journaled
    r = gs("ask", "-S", "fresh", "next")
    assert r.code == 1 and "pre-commit" in r.err
    (repo_path / "hooks" / "pre-commit").chmod(0o644)
    r = gs("ask", "-S", "fresh", "next")
    assert r.code == 0, r.err
    subjects = git("log", "--format=%s", "fresh").splitlines()
    assert subjects == ["turn 2: next", f"turn 1: paste {FAKE_KEY}"]


def test_with_redaction_on_the_shipped_pre_commit_has_nothing_to_refuse(gs, git):
    assert gs("hooks", "install", "pre-commit").code == 0
    r = gs("ask", "-S", "work", f"my key is {FAKE_KEY}")
    assert r.code == 0, r.err
    assert FAKE_KEY not in git("show", "work:session.jsonl")


def test_hooks_get_gs_environment(gs, git, repo_path, tmp_path):
    out = tmp_path / "seen"
    out.mkdir()
    record = f"""#!/bin/sh
d={out}/$(basename "$0")
mkdir -p "$d"
pwd -P > "$d/cwd"
printf '%s\\n' "$GS_SESSION" > "$d/session"
printf '%s\\n' "$GIT_DIR" > "$d/git_dir"
printf '%s\\n' "$GS_COMMIT" > "$d/commit"
[ -n "$GS_SESSION_FILE" ] && cp "$GS_SESSION_FILE" "$d/session.jsonl"
[ -n "$GS_NEW_EVENTS" ] && cp "$GS_NEW_EVENTS" "$d/new.jsonl"
[ $# -gt 0 ] && cp "$1" "$d/message"
[ -t 0 ] && echo tty > "$d/stdin"
exit 0
"""
    assert gs("ask", "-S", "work", "first").code == 0  # creates the repo
    for name in ("pre-commit", "commit-msg", "post-commit"):
        _hook(repo_path, name, record)
    assert gs("ask", "-S", "work", "second").code == 0
    tip = _tip(git)
    full = git("show", "work:session.jsonl")
    before = git("show", "work~1:session.jsonl")
    pre, msg, post = out / "pre-commit", out / "commit-msg", out / "post-commit"
    for d in (pre, msg, post):
        assert (d / "session").read_text() == "work\n"
        assert Path((d / "cwd").read_text().strip()) == repo_path.resolve()
        assert Path((d / "git_dir").read_text().strip()) == repo_path
    assert (pre / "session.jsonl").read_text() == full
    assert (pre / "new.jsonl").read_text() == full[len(before):]
    assert (pre / "commit").read_text() == "\n"
    assert (msg / "message").read_text() == git("log", "-1", "--format=%B", "work").rstrip("\n") + "\n"
    assert (post / "commit").read_text() == tip + "\n"
    assert not (post / "session.jsonl").exists()


def test_non_executable_hooks_do_not_run(gs, git, repo_path):
    assert gs("ask", "-S", "work", "first").code == 0
    _hook(repo_path, "pre-commit", "#!/bin/sh\nexit 1\n", executable=False)
    _hook(repo_path, "post-commit", "#!/bin/sh\nexit 1\n", executable=False)
    r = gs("ask", "-S", "work", "second")
    assert r.code == 0, r.err
    assert "warning" not in r.err
    assert len(git("log", "--format=%s", "work").splitlines()) == 2


# -- commit-msg ---------------------------------------------------------------------------


def test_commit_msg_hook_edits_the_message(gs, git, repo_path):
    assert gs("ask", "-S", "work", "first").code == 0
    _hook(repo_path, "commit-msg", """#!/bin/sh
{ printf 'EDITED %s\\n' "$(head -n 1 "$1")"; tail -n +2 "$1"; echo 'Reviewed-By: the hook'; } > "$1.new"
mv "$1.new" "$1"
""")
    r = gs("ask", "-S", "work", "hello there")
    assert r.code == 0, r.err
    body = git("log", "-1", "--format=%B", "work")
    assert body.startswith("EDITED turn 2: hello there\n\n")
    assert "Session: work" in body and "Reviewed-By: the hook" in body
    log = gs("log", "work", "--json").json()
    assert log[0]["subject"] == "EDITED turn 2: hello there"
    assert log[0]["trailers"]["Reviewed-By"] == "the hook"
    assert "commit: EDITED turn 2: hello there" in git("reflog", "show", "work")


def test_commit_msg_hook_that_refuses_or_empties_the_message(gs, git, repo_path):
    assert gs("ask", "-S", "work", "first").code == 0
    _hook(repo_path, "commit-msg", "#!/bin/sh\necho 'subject must name a ticket' >&2\nexit 1\n")
    r = gs("ask", "-S", "work", "second")
    assert r.code == 1 and "commit-msg hook refused" in r.err and "subject must name a ticket" in r.err
    _hook(repo_path, "commit-msg", "#!/bin/sh\n: > \"$1\"\n")
    # opening the session first saves the journaled turn 2, which the hook refuses again:
    # the command stops before "third" is taken
    r = gs("ask", "-S", "work", "third")
    assert r.code == 1 and "commit-msg" in r.err and "empty" in r.err
    assert len(git("log", "--format=%s", "work").splitlines()) == 1
    (repo_path / "hooks" / "commit-msg").unlink()
    r = gs("ask", "-S", "work", "fourth")
    assert r.code == 0, r.err
    assert git("log", "--format=%s", "work").splitlines() == ["turn 3: fourth", "turn 2: second", "turn 1: first"]
    prompts = [m["content"] for m in gs("show", "work", "--format", "json").json()["messages"]
               if m["role"] == "user"]
    assert prompts == ["first", "second", "fourth"]


# -- post-commit --------------------------------------------------------------------------


def test_failing_post_commit_warns_and_the_commit_stands(gs, git, repo_path):
    assert gs("ask", "-S", "work", "first").code == 0
    _hook(repo_path, "post-commit", "#!/bin/sh\necho 'backup host unreachable' >&2\nexit 3\n")
    r = gs("ask", "-S", "work", "second")
    assert r.code == 0, r.err
    assert "warning" in r.err and "post-commit" in r.err and "backup host unreachable" in r.err
    assert r.err.count("backup host unreachable") == 1
    assert git("log", "-1", "--format=%s", "work") == "turn 2: second\n"

    r = gs("chat", "work", input="third\nfourth\n")
    assert r.code == 0, r.err
    assert r.out.count("warning: the post-commit hook failed") == 2  # after each turn, once
    assert "backup host unreachable" not in r.err
    assert len(git("log", "--format=%s", "work").splitlines()) == 4


def test_shipped_post_commit_pushes_to_the_backup_remote(gs, git, repo_path, tmp_path):
    backup = tmp_path / "backup.git"
    subprocess.run(["git", "init", "-q", "--bare", str(backup)], check=True)
    r = gs("hooks", "install", "post-commit")
    assert r.code == 0, r.err
    assert "remote add backup" in r.out  # not configured yet: says how
    git("remote", "add", "backup", str(backup))
    assert "pushed to remote 'backup'" in gs("hooks", "install", "post-commit").out

    started = time.monotonic()
    r = gs("ask", "-S", "work", "back me up")
    assert r.code == 0, r.err
    assert "warning" not in r.err
    tip = _tip(git)
    deadline = started + 10
    pushed = ""
    while time.monotonic() < deadline:
        pushed = subprocess.run(["git", "--git-dir", str(backup), "rev-parse", "-q", "--verify", "refs/heads/work"],
                                capture_output=True, text=True).stdout.strip()
        if pushed == tip:
            break
        time.sleep(0.1)
    assert pushed == tip
    subprocess.run(["git", "--git-dir", str(backup), "fsck", "--strict"], check=True, capture_output=True)


def test_shipped_post_commit_without_a_remote_warns(gs, git):
    assert gs("hooks", "install", "post-commit").code == 0
    r = gs("ask", "-S", "work", "hello")
    assert r.code == 0, r.err
    assert "no git remote 'backup'" in r.err and "remote add backup" in r.err
    assert _tip(git)


def test_shipped_post_commit_reports_a_failed_background_push(gs, git, repo_path, tmp_path):
    assert gs("hooks", "install", "post-commit").code == 0
    git("remote", "add", "backup", str(tmp_path / "does-not-exist.git"))
    assert gs("ask", "-S", "work", "one").code == 0
    err_file = repo_path / "gs" / "backup" / "work.err"
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not (err_file.exists() and err_file.stat().st_size):
        time.sleep(0.1)
    assert err_file.read_text().strip()
    r = gs("ask", "-S", "work", "two")
    assert r.code == 0, r.err
    assert "previous backup push of work" in r.err


# -- forks --------------------------------------------------------------------------------


def test_fork_commit_runs_the_hooks(gs, git, repo_path, tmp_path):
    assert gs("ask", "-S", "work", "first").code == 0
    _hook(repo_path, "pre-commit", """#!/bin/sh
[ "$GS_SESSION" = copy ] && [ ! -s "$GS_NEW_EVENTS" ] && { echo 'no forks today' >&2; exit 1; }
exit 0
""")
    r = gs("ask", "--fork", "copy", "-S", "work", "in the copy")
    assert r.code == 1
    assert "pre-commit hook refused the fork" in r.err and "no forks today" in r.err
    assert _tip(git, "refs/heads/copy") == ""
    (repo_path / "hooks" / "pre-commit").unlink()
    _hook(repo_path, "commit-msg", "#!/bin/sh\nprintf 'hooked: ' | cat - \"$1\" > \"$1.n\" && mv \"$1.n\" \"$1\"\n")
    r = gs("ask", "--fork", "copy", "-S", "work", "in the copy")
    assert r.code == 0, r.err
    subjects = git("log", "--format=%s", "copy").splitlines()
    assert subjects[0] == "hooked: turn 2: in the copy"
    assert subjects[1].startswith("hooked: fork: copy from work")


# -- gs hooks install / list ----------------------------------------------------------------


def test_hooks_install_and_list(gs, repo_path):
    r = gs("hooks", "list", "--json")
    assert r.code == 0, r.err
    rows = {row["name"]: row for row in r.json()}
    assert set(rows) == {"pre-commit", "post-commit"}
    assert not any(row["installed"] for row in rows.values())

    r = gs("hooks", "install")
    assert r.code == 0, r.err
    assert (repo_path / "HEAD").exists()  # the repo was created
    for name in ("pre-commit", "post-commit"):
        path = repo_path / "hooks" / name
        assert path.read_bytes() == (HOOKS / name).read_bytes()
        assert os.access(path, os.X_OK)
    r = gs("hooks", "list")
    assert r.code == 0
    assert any(line.split()[:3] == ["pre-commit", "active", "shipped"] for line in r.out.splitlines())

    # a modified hook is shown as such, and install refuses to overwrite it
    pre = repo_path / "hooks" / "pre-commit"
    mine = pre.read_text() + "# my change\n"
    pre.write_text(mine)
    _hook(repo_path, "pre-receive", "#!/bin/sh\nexit 0\n")
    (repo_path / "hooks" / "post-commit").chmod(0o644)
    rows = {row["name"]: row for row in gs("hooks", "list", "--json").json()}
    assert rows["pre-commit"]["version"] == "modified" and rows["pre-commit"]["executable"]
    assert rows["post-commit"]["version"] == "shipped" and not rows["post-commit"]["executable"]
    assert rows["pre-receive"]["version"] == "own" and not rows["pre-receive"]["run_by_gs"]
    r = gs("hooks", "install")
    assert r.code == 1 and "--force" in r.err and "pre-commit" in r.err
    assert pre.read_text() == mine
    assert not os.access(repo_path / "hooks" / "post-commit", os.X_OK)  # nothing installed

    r = gs("hooks", "install", "post-commit")
    assert r.code == 0 and "made executable" in r.out
    assert os.access(repo_path / "hooks" / "post-commit", os.X_OK)

    r = gs("hooks", "install", "--force", "pre-commit")
    assert r.code == 0, r.err
    assert pre.read_bytes() == (HOOKS / "pre-commit").read_bytes()
    assert (repo_path / "hooks" / "pre-commit.orig").read_text() == mine
    assert "pre-commit.orig" not in gs("hooks", "list").out

    r = gs("hooks", "install", "no-such-hook")
    assert r.code == 2 and "no-such-hook" in r.err and "pre-commit" in r.err


# -- the runner ---------------------------------------------------------------------------


def test_runner_details(tmp_path: Path):
    repo = tmp_path / "r.git"
    (repo / "hooks").mkdir(parents=True)
    assert CommitHooks(repo).found == {"pre-commit": None, "commit-msg": None, "post-commit": None}
    assert CommitHooks(repo).before("s", b"msg\n", lambda: pytest.fail("read without hooks"), b"") == b"msg\n"
    # a script without #! runs through /bin/sh, as git does
    path = _hook(repo, "post-commit", "echo from sh; exit 4\n")
    run = run_hook("post-commit", path, [], {"PATH": os.defpath}, repo)
    assert run.status == 4 and run.output == "from sh"
    warning = CommitHooks(repo).after("s", "a" * 40)
    assert warning and "exit status 4" in warning and "from sh" in warning and "chmod -x" in warning
    # a background job holding the output does not make the save wait
    _hook(repo, "post-commit", "#!/bin/sh\nsleep 5 &\nexit 0\n")
    started = time.monotonic()
    assert CommitHooks(repo).after("s", "a" * 40) is None
    assert time.monotonic() - started < 3
    assert clean_message(b"\n\nsubject  \n\n\n\nTrailer: x\n\n") == b"subject\n\nTrailer: x\n"
    assert clean_message(b" \n\n") == b""


def test_a_refused_import_says_to_import_again_not_that_a_turn_is_kept(gs, repo_path, tmp_path):
    """An import keeps no journal, so the refusal must not promise that the next command saves it."""
    assert gs("ask", "-S", "first", "hi").code == 0  # the repo exists
    hook = repo_path / "hooks" / "pre-commit"
    hook.write_text("#!/bin/sh\necho 'no imports today' >&2\nexit 1\n")
    hook.chmod(0o755)
    f = tmp_path / "messages.json"
    f.write_text('[{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}]')
    r = gs("import", str(f), "--as", "imp")
    assert r.code == 1
    assert "no imports today" in r.err and "run gs import again" in r.err
    assert "journal" not in r.err
    assert gs("show", "imp").code == 1
