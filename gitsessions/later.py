"""Work done in a background thread, its result (or what it raised) handed to the first who asks.

The chat draws its first prompt and then, while the user types, opens its session and
builds its model client (~0.5 s for the ``openai`` SDK); what asks for either waits there.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Later(Generic[T]):
    """``make()``, run in a daemon thread once :meth:`start` is called, else in place at :meth:`result`.

    Whatever ``make`` raised in the thread is raised by :meth:`result`, in the caller's
    thread, as if ``make`` had run there; the next call tries anew, in place. A Ctrl+C while
    :meth:`result` waits interrupts the wait.

    Args:
        make: what to run; at most once in the thread.
        name: the thread's name (seen in a debugger or a traceback).
    """

    def __init__(self, make: Callable[[], T], name: str = "gs-later"):
        self._make = make
        self._name = name
        self._thread: threading.Thread | None = None
        self._done = False
        self._value: T | None = None
        self._failed: BaseException | None = None

    def start(self, then: Callable[[], object] = lambda: None) -> None:
        """Start ``make`` in a daemon thread (a no-op when it was started or made already).

        Args:
            then: called in that thread when ``make`` has ended, however it ended.
        """
        if self._thread is None and not self._done:
            self._thread = threading.Thread(target=self._run, args=(then,), name=self._name, daemon=True)
            self._thread.start()

    def _run(self, then: Callable[[], object]) -> None:
        try:
            self._value = self._make()
            self._done = True
        except BaseException as exc:  # handed to the thread that asks for the result
            self._failed = exc
        finally:
            then()

    def pending(self) -> bool:
        """True while ``make`` runs in its thread (started, not ended): what waits for it would wait."""
        return self._thread is not None and not self._done and self._failed is None

    def made(self) -> T | None:
        """What ``make`` returned if it has returned, without waiting (None: not yet, or it failed)."""
        return self._value if self._done else None

    def result(self) -> T:
        """What ``make`` returned: made here, or waited for when the thread was started.

        Raises:
            BaseException: what ``make`` raised (again on the next call, which tries anew).
        """
        if not self._done:
            if self._thread is not None:
                self._thread.join()
                self._thread, failed, self._failed = None, self._failed, None
                if failed is not None:
                    raise failed
            if not self._done:
                self._value = self._make()
                self._done = True
        return self._value  # type: ignore[return-value]  # set when _done
