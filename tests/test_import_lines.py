"""Claude Code transcripts and Codex rollouts are read a line at a time, never held whole.

The readers are given a real file opened with a read size far smaller than the file (and
than most of its lines, which then straddle reads), through a raw file that records every
read asked of it: what they convert is what the whole text gave, and no read was larger.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from gitsessions.transfer.readers import claude_code, codex, stream
from gitsessions.transfer.readers.messages import _Bad

DATA = Path(__file__).parent / "data"
TRANSCRIPT = DATA / "claude_code" / "session.jsonl"
ROLLOUT = DATA / "codex" / "rollout-2025-10-06T09-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"
#: Bytes per read of the file: lines of the fixtures are hundreds of bytes.
READ = 64


class _Recorded(io.FileIO):
    """A file that remembers the largest read asked of it."""

    largest = 0

    def readinto(self, buffer) -> int | None:  # type: ignore[override]
        self.largest = max(self.largest, len(memoryview(buffer)))
        return super().readinto(buffer)

    def readall(self) -> bytes:
        self.largest = max(self.largest, 1 << 62)  # the whole file at once
        return super().readall()


def _opened(path: Path) -> tuple[io.BufferedReader, _Recorded]:
    raw = _Recorded(path, "rb")
    return io.BufferedReader(raw, buffer_size=READ), raw


def _read(path: Path, read):
    f, raw = _opened(path)
    with f:
        out = read(f)
    assert path.stat().st_size > 4 * READ and raw.largest <= READ, raw.largest
    return out


def _reshaped(src: Path, dst: Path, *, bom: bool = False, crlf: bool = False, tail: str = "") -> Path:
    text = src.read_text(encoding="utf-8")
    dst.write_bytes((b"\xef\xbb\xbf" if bom else b"") + (text.replace("\n", "\r\n") if crlf else text).encode()
                    + tail.encode())
    return dst


def test_the_lines_of_a_file_read_in_small_pieces(tmp_path):
    long = "x" * (5 * READ)
    path = tmp_path / "f.jsonl"
    path.write_bytes(b"\xef\xbb\xbf{\"a\": 1}\r\n\n" + f'"{long}"\n'.encode() + b"caf\xc3\xa9 \xff\r\n"
                     + "\u2028 \x85 in one line\n".encode() + b'{"torn": ')
    assert _read(path, lambda f: list(stream.lines(f))) == [
        (1, '{"a": 1}', True), (2, "", True), (3, f'"{long}"', True), (4, "caf\u00e9 \ufffd", True),
        (5, "\u2028 \x85 in one line", True), (6, '{"torn": ', False)]


def test_a_transcript_read_a_piece_at_a_time_is_the_whole_text_s(tmp_path):
    whole = claude_code.read_transcript(io.BytesIO(TRANSCRIPT.read_bytes()))
    assert [c.source_id for c in whole] == ["5f0c6a1e-2b7d-4c11-9a0e-3d4b5c6d7e8f",
                                            "5f0c6a1e-2b7d-4c11-9a0e-3d4b5c6d7e8f/agent-a9f3"]
    assert _read(TRANSCRIPT, claude_code.read_transcript) == whole
    windows = _reshaped(TRANSCRIPT, tmp_path / "crlf.jsonl", bom=True, crlf=True)
    assert _read(windows, claude_code.read_transcript) == whole


def test_a_transcript_s_torn_last_line_waits_and_a_bad_line_is_named(tmp_path):
    lines = TRANSCRIPT.read_text(encoding="utf-8").count("\n")
    torn = _reshaped(TRANSCRIPT, tmp_path / "torn.jsonl", crlf=True, tail='{"parentUuid":"a-9","type":"user","mess')
    convs = _read(torn, claude_code.read_transcript)
    assert f"line {lines + 1} is not whole yet (being written?); the next import reads it" in convs[0].notes
    assert [c.branches for c in convs] == [c.branches for c in claude_code.read_transcript(io.BytesIO(
        TRANSCRIPT.read_bytes()))]
    text = TRANSCRIPT.read_text(encoding="utf-8").replace('"uuid":"a-5"', '"uuid":"a-5",', 1)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(text.replace("\n", "\r\n"), encoding="utf-8")
    with pytest.raises(_Bad, match=r"^line 12: not valid JSON"):
        _read(bad, claude_code.read_transcript)


def test_a_rollout_read_a_piece_at_a_time_is_the_whole_text_s(tmp_path):
    whole = codex.read_rollout(io.BytesIO(ROLLOUT.read_bytes()))
    assert whole.branches and whole.source_id == "0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
    assert _read(ROLLOUT, codex.read_rollout) == whole
    assert _read(_reshaped(ROLLOUT, tmp_path / "crlf.jsonl", bom=True, crlf=True), codex.read_rollout) == whole
    n = ROLLOUT.read_text(encoding="utf-8").count("\n")
    torn = _reshaped(ROLLOUT, tmp_path / "torn.jsonl", tail='{"timestamp":"2025-10-06T09:09:00.000Z","type":"resp')
    waits = _read(torn, codex.read_rollout)  # the turn it would open is being written: held back with it
    assert "its last turn is still going on; it is imported once it is over" in waits.notes
    chunks = waits.branches[0][1]
    assert 1 < len(chunks) < len(whole.branches[0][1]) and chunks == whole.branches[0][1][:len(chunks)]
    bad = tmp_path / "bad.jsonl"
    bad.write_text(ROLLOUT.read_text(encoding="utf-8") + "{oops}\n" + '{"type":"x","payload":{}}\n')
    with pytest.raises(_Bad, match=rf"^line {n + 1}: not JSON"):
        _read(bad, codex.read_rollout)


def test_a_rollout_line_may_hold_line_separators_as_they_are(tmp_path):
    """A JSON string may hold U+2028, U+0085 unescaped (Rust's serde_json writes them so): no line ends there."""
    lines = ROLLOUT.read_text(encoding="utf-8").splitlines(keepends=True)
    def line(kind: str, payload: dict) -> str:
        return json.dumps({"timestamp": "2025-10-06T09:08:00.000Z", "type": kind, "payload": payload},
                          ensure_ascii=False) + "\n"

    turn = [line("event_msg", {"type": "task_started"}),
            line("response_item", {"type": "message", "role": "user",
                                   "content": [{"type": "input_text", "text": "one\u2028two\x85three"}]}),
            line("response_item", {"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": "ok"}]}),
            line("event_msg", {"type": "task_complete"})]
    path = tmp_path / "rollout.jsonl"
    path.write_text("".join(lines + turn), encoding="utf-8")
    conv = _read(path, codex.read_rollout)
    assert any(e.data.get("content") == "one\u2028two\x85three" for _, chunks in conv.branches for chunk in chunks
               for e in chunk)


def test_gs_import_reads_a_bom_and_crlf_transcript_and_rollout_as_the_plain_ones(gs, git, tmp_path):
    plain = gs("import", str(TRANSCRIPT), str(ROLLOUT))
    assert plain.code == 0, plain.err
    refs = git("for-each-ref", "--format=%(refname) %(objectname)")
    windows = [_reshaped(TRANSCRIPT, tmp_path / "t.jsonl", bom=True, crlf=True),
               _reshaped(ROLLOUT, tmp_path / "r.jsonl", bom=True, crlf=True)]
    again = gs("import", *map(str, windows))
    assert again.code == 0 and "nothing new" in again.err, again.err
    assert git("for-each-ref", "--format=%(refname) %(objectname)") == refs
