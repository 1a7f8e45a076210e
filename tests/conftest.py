"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fakeapi import FakeChatServer


@pytest.fixture
def fake_api() -> Iterator[FakeChatServer]:
    """A started fake OpenAI chat-completions server (``fake_api.base_url``)."""
    with FakeChatServer() as server:
        yield server
