"""The id rule of conversations imported from other tools (gitsessions.ids)."""

from __future__ import annotations

from gitsessions.ids import SESSION_ID_RE, imported_fork_id, imported_session_id


def test_the_id_is_a_readable_slug_and_a_hash_of_the_source_id():
    sid = imported_session_id("chatgpt", "6f1c-conv", "Parse YAML — safely? Über")
    assert sid.startswith("parse-yaml-safely-uber-")
    assert sid == imported_session_id("chatgpt", "6f1c-conv", "Parse YAML — safely? Über")  # any machine
    assert sid != imported_session_id("chatgpt", "6f1c-other", "Parse YAML — safely? Über")
    assert sid != imported_session_id("claude", "6f1c-conv", "Parse YAML — safely? Über")


def test_odd_titles_still_give_valid_ids():
    for title in ("", "???", "日本語のタイトル", "a" * 300, "word " * 40, "-lead-"):
        sid = imported_session_id("chatgpt", "c1", title)
        assert SESSION_ID_RE.match(sid), sid
    assert imported_session_id("chatgpt", "c1", "日本語").startswith("chatgpt-")
    assert len(imported_session_id("chatgpt", "c1", "word " * 40)) <= 49


def test_a_branch_id_extends_the_session_id():
    sid = imported_session_id("chatgpt", "c1", "t")
    fork = imported_fork_id(sid, "leaf-1")
    assert fork.startswith(sid + "-") and fork != imported_fork_id(sid, "leaf-2")
    assert SESSION_ID_RE.match(imported_fork_id("x" * 64, "leaf"))
