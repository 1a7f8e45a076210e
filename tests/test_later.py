"""gitsessions/later.py: work made in a background thread, its result handed to whoever asks first."""

from __future__ import annotations

import threading

import pytest

from gitsessions.later import Later


def test_pending_while_it_runs_in_its_thread_then_its_value_or_its_error():
    go = threading.Event()

    def make() -> int:
        go.wait(10)
        return 7

    later = Later(make)
    assert not later.pending()  # not started
    later.start()
    assert later.pending() and later.made() is None
    go.set()
    assert later.result() == 7 and not later.pending() and later.made() == 7

    def fail() -> int:
        raise ValueError("no")

    failing = Later(fail)
    done = threading.Event()
    failing.start(then=done.set)
    done.wait(10)
    assert not failing.pending() and failing.made() is None  # ended: what waits for it would not wait
    with pytest.raises(ValueError):
        failing.result()
