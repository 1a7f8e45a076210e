"""Reading a data export a conversation at a time: the same values as ``json.load``, memory bounded.

The decoding (:class:`~gitsessions.transfer.readers.stream.ArrayReader`) is checked against
:func:`json.loads` on generated arrays and on broken ones (the same place named), with reads
as small as one character so that every token, string and escape is cut by a read; the
export's check-then-write (:class:`~gitsessions.transfer.readers.stream.Conversations`) on real
files, plain and zipped, through the real store; memory with :mod:`tracemalloc`: the peak
follows the largest conversation, not the file.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tracemalloc
import zipfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gitsessions.errors import TransferError
from gitsessions.secrets.redact import NO_REDACTION
from gitsessions.store import GitStore
from gitsessions.transfer.read import read_import
from gitsessions.transfer.readers import chatgpt, claude_ai
from gitsessions.transfer.readers.messages import _Bad
from gitsessions.transfer.readers.stream import KEEP_CHARS, ArrayReader, Conversations, Source, loads, text_of
from gitsessions.transfer.seen import SeenFiles
from gitsessions.transfer.write import write_import


def _elements(raw: bytes, chunk: int) -> list:
    return list(ArrayReader(text_of(io.BytesIO(raw)), chunk=chunk))


_json = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-10**30, max_value=10**30)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=12)
_layouts = st.sampled_from([
    {}, {"indent": 1}, {"indent": "\t"}, {"separators": (",", ":")}, {"separators": (" ,\r\n ", " : ")},
    {"ensure_ascii": False}, {"ensure_ascii": False, "indent": 2}])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(_json, max_size=6), layout=_layouts, chunk=st.integers(1, 9),
       bom=st.booleans(), pad=st.sampled_from(["", " ", "\n", "\r\n\t "]))
@example(values=["\U0001f600 \\ \" \u00e9"], layout={}, chunk=1, bom=True, pad="")
@example(values=[12345678901234567890, -1.5e-300, 0], layout={"separators": (",", ":")}, chunk=1, bom=False, pad="")
def test_elements_are_what_json_load_gives_whatever_the_reads_cut(values, layout, chunk, bom, pad):
    raw = (("\ufeff" if bom else "") + pad + json.dumps(values, **layout) + pad).encode("utf-8")
    assert _elements(raw, chunk) == json.load(io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8-sig"))


_texts = st.lists(_json, min_size=1, max_size=4).map(lambda v: json.dumps(v, indent=1, ensure_ascii=False))


@settings(max_examples=250, deadline=None)
@given(text=_texts, data=st.data(), chunk=st.integers(1, 7))
@example(text='[{"a": [1, 2]}, "x"]', data=None, chunk=3)
def test_a_broken_array_is_refused_at_the_place_json_loads_names(text, data, chunk):
    if data is None:
        broken = text.replace(",", "", 1)
    else:  # one character dropped, doubled or replaced, past the opening '['
        at = data.draw(st.integers(1, len(text) - 1))
        how = data.draw(st.sampled_from(["drop", "double", "replace"]))
        put = data.draw(st.sampled_from(list('{}[]",:0-e.\\ntx\x01')))
        broken = {"drop": text[:at] + text[at + 1:], "double": text[:at] + text[at] + text[at:],
                  "replace": text[:at] + put + text[at + 1:]}[how]
    try:
        expected = loads(broken)
    except json.JSONDecodeError as exc:
        with pytest.raises(_Bad, match=rf"^not JSON \(line {exc.lineno}, column {exc.colno}, element \d+: "):
            _elements(broken.encode("utf-8"), chunk)
    except _Bad as exc:  # a key twice: said with the element and its place
        with pytest.raises(_Bad, match=rf"line \d+, column \d+, element \d+: {exc}"):
            _elements(broken.encode("utf-8"), chunk)
    else:
        if isinstance(expected, list):
            assert _elements(broken.encode("utf-8"), chunk) == expected
        else:
            with pytest.raises(_Bad, match="not a JSON array"):
                _elements(broken.encode("utf-8"), chunk)


@pytest.mark.parametrize("raw, said", [
    (b"", "not a JSON array of elements (line 1, column 1: it is empty)"),
    (b'\xef\xbb\xbf  {"a": 1}', "not a JSON array of elements (line 1, column 3: it begins with '{')"),
    (b'[1,\n 2', "not JSON (line 2, column 3, element 1: the array ends before its ']')"),
    (b'[1,\n "abc', "not JSON (line 2, column 2, element 1: Unterminated string starting at"),
    (b'[1] [2]', "not JSON (line 1, column 5, element 0: Extra data after the array)"),
    (b'[{"a": 1, "a": 2}]', "line 1, column 2, element 0: key 'a' appears twice in one object"),
    (b'[1, NaN]', "line 1, column 5, element 1: not JSON: NaN is not a JSON value"),
])
def test_what_is_no_array_is_said_with_its_place(raw, said):
    for chunk in (1, 4, 1 << 16):
        with pytest.raises(_Bad) as exc:
            _elements(raw, chunk)
        assert said in str(exc.value)


def test_invalid_utf8_becomes_replacement_characters_as_when_read_whole():
    raw = b'["caf\xc3\xa9 \xff\xfe", "\xe2\x82"]'  # an invalid byte, and a sequence cut by the end of a string
    assert _elements(raw, 1) == json.loads(raw.decode("utf-8", errors="replace"))


def _conv(i: int, turns: int, size: int) -> dict:
    """A ChatGPT conversation of ``turns`` prompts and answers, each message ``size`` characters."""
    mapping = {"root": {"id": "root", "parent": None, "children": [], "message": None}}
    parent = "root"
    for n in range(2 * turns):
        key = f"c{i}-m{n}"
        role = "user" if n % 2 == 0 else "assistant"
        mapping[parent]["children"].append(key)
        mapping[key] = {"id": key, "parent": parent, "children": [], "message": {
            "id": key, "author": {"role": role}, "create_time": 1700000000 + i * 100 + n,
            "content": {"content_type": "text", "parts": [f"{role} {i}.{n} " + "x" * size]}, "metadata": {}}}
        parent = key
    return {"id": f"conv-{i}", "title": f"Conversation {i}", "create_time": 1700000000 + i * 100,
            "current_node": parent, "mapping": mapping}


def _write_export(path: Path, convs: list) -> Path:
    path.write_text(json.dumps(convs, indent=1), encoding="utf-8")
    return path


def _heads(git) -> list[str]:
    return sorted(git("for-each-ref", "--format=%(refname) %(objectname)", "refs/heads").splitlines())


def test_an_export_read_again_to_write_gives_what_one_kept_gives(tmp_path, repo_path, git):
    path = _write_export(tmp_path / "conversations.json", [_conv(i, 3, 40) for i in range(5)])
    src = Source(None, path, path.name)
    again, kept = Conversations(src, chatgpt.convert, keep=0, chunk=7), Conversations(src, chatgpt.convert)
    assert not again.kept and kept.kept and len(again) == len(kept) == 5
    assert list(again) == list(kept) == chatgpt.read_export(json.loads(path.read_text()))
    plan = read_import(None, path.name, path=path)
    assert plan.kind == "chatgpt" and len(plan.conversations) == 5
    plan.conversations = again  # as a file too large to keep is written: read again, a conversation at a time
    with GitStore(repo_path) as store:
        result = write_import(store, plan)
    assert [how for _, outs in result.conversations for _, how, _ in outs] == ["new"] * 5
    git("fsck", "--strict")
    written = _heads(git)
    with GitStore(repo_path) as store:  # the same file, kept whole: nothing new
        result = write_import(store, read_import(None, path.name, path=path))
    assert [how for _, outs in result.conversations for _, how, _ in outs] == ["same"] * 5
    assert _heads(git) == written


def test_a_file_changed_between_the_check_and_the_write_is_refused(tmp_path):
    path = _write_export(tmp_path / "conversations.json", [_conv(i, 1, 10) for i in range(3)])
    convs = Conversations(Source(None, path, path.name), chatgpt.convert, keep=0)
    _write_export(path, [_conv(i, 2, 10) for i in range(3)])
    with pytest.raises(TransferError, match="changed while it was being imported"):
        list(convs)


def test_a_zipped_export_is_read_from_its_member_as_it_is_decompressed(tmp_path):
    convs = [_conv(i, 2, 30) for i in range(4)]
    path = tmp_path / "export.zip"
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("chat.html", "<html></html>")
        z.writestr("export/conversations.json", json.dumps(convs))
    src = Source(None, path, path.name)
    src.in_zip(chatgpt.member)
    assert src.member == "export/conversations.json"
    again = Conversations(src, chatgpt.convert, keep=0, chunk=5)
    assert list(again) == chatgpt.read_export(convs)
    plan = read_import(None, path.name, path=path)
    assert plan.kind == "chatgpt" and list(plan.conversations) == list(again)


def test_a_claude_ai_export_streams_and_keeps_its_unanswered_prompt_aside(tmp_path):
    def msg(j: int, sender: str) -> dict:
        return {"uuid": f"m{j}", "sender": sender, "text": f"{sender} {j}", "content": [],
                "created_at": f"2024-05-01T10:00:0{j}Z"}

    convs = [{"uuid": f"c{i}", "name": f"Chat {i}", "created_at": "2024-05-01T10:00:00Z",
              "chat_messages": [msg(0, "human"), msg(1, "assistant")] + ([msg(2, "human")] if i == 1 else [])}
             for i in range(3)]
    path = _write_export(tmp_path / "conversations.json", convs)
    plan = read_import(None, path.name, path=path)
    again = Conversations(Source(None, path, path.name), claude_ai.convert, keep=0, chunk=3)
    assert plan.kind == "claude-ai" and len(plan.conversations) == len(again) == 3
    assert list(again) == list(plan.conversations) == [c for c in claude_ai.read_export(convs) if c.branches]
    assert plan.skipped == again.skipped == []  # an unanswered last prompt: the turns before it are imported


def test_a_broken_conversation_deep_in_a_large_export_is_named_and_nothing_is_written(gs, repo_path, tmp_path):
    convs = [_conv(i, 2, 50) for i in range(30)]
    text = json.dumps(convs, indent=1)
    cut = text.index('"conv-17"')
    broken = text[:cut] + '"conv-17" "oops",' + text[cut + len('"conv-17"') + 1:]
    path = tmp_path / "conversations.json"
    path.write_text(broken, encoding="utf-8")
    with pytest.raises(json.JSONDecodeError) as where:
        json.loads(broken)
    r = gs("import", str(path))
    assert r.code == 1, r.err
    assert (f"not JSON (line {where.value.lineno}, column {where.value.colno}, conversation 17: "
            "Expecting ',' delimiter)") in r.err
    assert not repo_path.exists()


def test_a_missing_file_and_a_folder_are_said(gs, tmp_path):
    r = gs("import", str(tmp_path / "gone.json"), str(tmp_path))
    assert r.code == 1 and "file not found" in r.err and "it is a directory, not a file" in r.err


def _peak(run) -> int:
    tracemalloc.start()
    try:
        run()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_memory_follows_the_largest_conversation_not_the_file(tmp_path):
    one = _conv(0, 4, 2_000)
    largest = len(json.dumps(one))  # ~16 kB of text
    path = _write_export(tmp_path / "conversations.json", [_conv(i, 4, 2_000) for i in range(150)])
    size = path.stat().st_size  # ~2.5 MB
    src = Source(None, path, path.name)

    def check_and_write(keep: int) -> None:
        for _ in Conversations(src, chatgpt.convert, keep=keep):
            pass

    streamed = _peak(lambda: check_and_write(0))
    assert streamed < 40 * largest + 2 * 65536 * 4 < size / 2, (streamed, largest, size)
    kept = _peak(lambda: check_and_write(size))  # what reading the file whole holds: this test can fail
    assert kept > size, (kept, size)


def test_writing_a_large_export_holds_no_more_than_a_conversation(tmp_path):
    def write(n: int) -> tuple[int, int]:
        path = _write_export(tmp_path / f"conversations-{n}.json", [_conv(i, 1, 12_000) for i in range(n)])
        plan = read_import(None, path.name, path=path)
        plan.conversations = Conversations(Source(None, path, path.name), chatgpt.convert, keep=0)
        with GitStore(tmp_path / f"gs-{n}.git") as store:
            store.tips()  # the store open and its refs read before the count begins
            results = []
            peak = _peak(lambda: results.append(write_import(store, plan)))
        assert [how for _, outs in results[0].conversations for _, how, _ in outs] == ["new"] * n
        subprocess.run(["git", "--git-dir", str(tmp_path / f"gs-{n}.git"), "fsck", "--strict"], check=True,
                       capture_output=True)
        return peak, path.stat().st_size

    small, _ = write(30)
    large, size = write(120)  # ~3 MB: four times the conversations, of ~25 kB each
    # What each conversation became is kept for the summary, not its events.
    assert large < 1.5 * small + 200_000 and large < size / 2, (small, large, size)


def test_gs_import_as_a_process_frees_cycles_as_it_goes(tmp_path):
    # main() turns the cyclic collector off for start-up; left off, an import held every
    # conversation's cycles to the end (a 150 MiB export peaked at twice its size). The test
    # above runs in this process, where the collector is on: this one runs gs's entry point.
    path = _write_export(tmp_path / "conversations.json", [_conv(0, 1, 100)])
    probe = ("import atexit, gc, sys; from gitsessions.cli import main; "
             "atexit.register(lambda: print('collector', gc.isenabled(), file=sys.__stderr__)); "
             "sys.argv = ['gs', 'import', sys.argv[1]]; main()")
    done = subprocess.run([sys.executable, "-c", probe, str(path)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "GS_REPO": str(tmp_path / "gs.git")}, stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and "collector True" in done.stderr, done.stderr


def _rewrite_in_place(path: Path, old: bytes, new: bytes) -> None:
    """``old`` replaced by ``new`` (as long) in the file itself: the same inode, size and modification time."""
    st, data = path.stat(), path.read_bytes()
    assert len(old) == len(new) and data.count(old) == 1
    with open(path, "r+b") as f:
        f.write(data.replace(old, new))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert (path.stat().st_ino, path.stat().st_size, path.stat().st_mtime_ns) == (st.st_ino, st.st_size,
                                                                                  st.st_mtime_ns)


def _written(result) -> list[str]:
    return [conv.source_id for conv, _ in result.conversations]


@pytest.mark.parametrize("new", [b"assistant 3.1 y", b'assistant 3.1 "'], ids=["still-an-export", "no-longer-json"])
def test_an_export_rewritten_in_place_as_it_is_written_stops_there_and_says_what_was_written(
        tmp_path, repo_path, git, new):
    path = _write_export(tmp_path / "conversations.json", [_conv(i, 1, 400) for i in range(5)])
    plan = read_import(None, path.name, path=path)
    plan.conversations = Conversations(Source(None, path, path.name), chatgpt.convert, keep=0, chunk=64)

    def rewrite(done: int, total: int) -> None:  # once the first is written: what is read next is another version
        if done == 1:
            _rewrite_in_place(path, b"assistant 3.1 x", new)

    with GitStore(repo_path) as store:
        result = write_import(store, plan, progress=rewrite)
    written = _written(result)
    k = len(written)
    assert 1 <= k <= 3 and written == [f"conv-{i}" for i in range(k)], written  # those read before the change
    assert result.stopped is not None
    said = "cannot import conversations.json: it changed while it was being imported"
    assert str(result.stopped).startswith(said + (" (it now reads: not JSON (line " if b'"' in new else ";"))
    assert str(result.stopped).endswith(f"; the first {k} of its 5 conversations were imported, as said above, "
                                        f"and the other {5 - k} were not; run the import again")
    assert len(_heads(git)) == k and "assistant 3.1 y" not in git("log", "--all", "-p")  # nothing of the new one
    git("fsck", "--strict")
    if b'"' not in new:  # run again, as it says: the new version, whole
        plan.conversations = Conversations(Source(None, path, path.name), chatgpt.convert, keep=0, chunk=64)
        with GitStore(repo_path) as store:
            result = write_import(store, plan)
        assert result.stopped is None and _written(result) == [f"conv-{i}" for i in range(5)]
        assert [how for _, outs in result.conversations for _, how, _ in outs] == ["same"] * k + ["new"] * (5 - k)
        assert "assistant 3.1 y" in git("log", "--all", "-p")


def test_an_export_grown_past_its_last_conversation_as_it_is_written_says_all_were_imported(tmp_path, repo_path):
    path = _write_export(tmp_path / "conversations.json", [_conv(i, 1, 400) for i in range(3)])
    plan = read_import(None, path.name, path=path)
    plan.conversations = Conversations(Source(None, path, path.name), chatgpt.convert, keep=0, chunk=64)

    def grow(done: int, total: int) -> None:  # once the last is written, white space after the array: other bytes
        if done == total:
            with open(path, "ab") as f:
                f.write(b"\n")

    with GitStore(repo_path) as store:
        result = write_import(store, plan, progress=grow)
    assert _written(result) == ["conv-0", "conv-1", "conv-2"]
    assert str(result.stopped) == ("cannot import conversations.json: it changed while it was being imported; its 3 "
                                   "conversations were imported, as said above, as they were before; run the "
                                   "import again")


def test_an_export_changed_before_its_second_read_writes_nothing_and_says_so(tmp_path, repo_path):
    path = _write_export(tmp_path / "conversations.json", [_conv(i, 1, 10) for i in range(3)])
    plan = read_import(None, path.name, path=path)
    plan.conversations = Conversations(Source(None, path, path.name), chatgpt.convert, keep=0)
    _rewrite_in_place(path, b"assistant 0.1 x", b"assistant 0.1 y")  # the first conversation: none is as checked
    with GitStore(repo_path) as store:
        result = write_import(store, plan)
    assert result.conversations == [] and not repo_path.exists()
    assert str(result.stopped) == ("cannot import conversations.json: it changed while it was being imported; "
                                   "nothing was written; run the import again")


def test_gs_import_of_a_large_export_rewritten_as_it_is_written_says_what_it_imported(gs, repo_path, tmp_path, git):
    path = _write_export(tmp_path / "conversations.json", [_conv(i, 1, 40_000) for i in range(110)])
    assert path.stat().st_size > KEEP_CHARS  # checked whole, then read again as it is written
    checked = path.read_bytes()
    small = tmp_path / "hello.json"
    small.write_text(json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]))
    assert gs("import", str(small), "--as", "hello").code == 0  # the repo, for its hook
    # Its post-commit hook rewrites the export in place after the first commit of the import (another
    # tool saving its file as gs reads it): what is read from then on is another version.
    mark, rewrite = tmp_path / "rewritten", tmp_path / "rewrite.py"
    rewrite.write_text(f"import os, pathlib\np = pathlib.Path({str(path)!r})\nst = p.stat()\n"
                       "data = p.read_bytes().replace(b'assistant 6.1 x', b'assistant 6.1 y')\n"
                       "with open(p, 'r+b') as f:\n    f.write(data)\n"
                       "os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns))\n")
    hook = repo_path / "hooks" / "post-commit"
    hook.parent.mkdir(exist_ok=True)
    hook.write_text(f"#!/bin/sh\n[ -e '{mark}' ] || {{ touch '{mark}'; '{sys.executable}' '{rewrite}'; }}\n")
    hook.chmod(0o755)
    r = gs("import", str(path))
    assert r.code == 1 and mark.exists(), r.err
    ids = r.out.split()  # those written, the first ones: each read before the change reached the reader
    k = len(ids)
    assert 1 <= k <= 6 and [sid.rsplit("-", 1)[0] for sid in ids] == [f"conversation-{i}" for i in range(k)], ids
    assert sorted(ids) == sorted(h.split()[0].removeprefix("refs/heads/") for h in _heads(git)
                                 if not h.startswith("refs/heads/hello "))
    assert all(f"imported {sid} (1 turn) from chatgpt conversation conv-{i}" in r.err for i, sid in enumerate(ids))
    assert r.err.endswith(f"gs: cannot import conversations.json: it changed while it was being imported; the first "
                          f"{k} of its 110 conversations were imported, as said above, and the other {110 - k} were "
                          f"not; run the import again\n1 file (1 failed), {k} session{'s' * (k > 1)} written, "
                          f"{k} turn{'s' * (k > 1)}, 0 skipped\n"), r.err
    assert "nothing" not in r.err
    assert "assistant 6.1 y" not in git("log", "--all", "-p")  # nothing of the file's new version
    # Not kept as imported whole: the same bytes as the checked ones again are read again, and give the rest.
    files = json.loads((repo_path / "gs" / "imported").read_text())["files"]
    assert SeenFiles.key(checked, "auto", None, NO_REDACTION)[0] not in files
