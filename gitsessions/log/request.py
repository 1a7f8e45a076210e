"""What a request sends besides its messages: the request options a session sets (temperature, max tokens).

Options are set with a ``session/options`` event holding all of them in effect after it
(``{"options": {"temperature": 0.2}}``; ``{}`` back to the server's defaults), as the model
is with ``session/model`` (what the model saw is in the log): so a revision, shown
or forked, reproduces the request. The rules of each option are written here once; the
derivation (:mod:`gitsessions.log.transcript`) reads the events. Pure: no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..errors import GitSessionsError

#: Request options a session may set: name -> (type, lowest, highest or None), the API's ranges.
OPTIONS: dict[str, tuple[type, float, float | None]] = {
    "temperature": (float, 0.0, 2.0),
    "top_p": (float, 0.0, 1.0),
    "max_tokens": (int, 1, None),
    "seed": (int, 0, None),
}


#: The largest whole number a request carries: servers read an integer option as a signed 64-bit one.
INT_MAX = 2**63 - 1


class BadOption(GitSessionsError):
    """An option name or value a request cannot carry."""


def _out_of_range(name: str, value: float) -> str | None:
    """Why ``value`` is out of option ``name``'s range (None: it is within; a NaN never is)."""
    kind, low, high = OPTIONS[name]
    if kind is int and value > INT_MAX and high is None:
        return f"from {low:g} to {INT_MAX} (the largest whole number a request carries)"
    if not (value >= low and (high is None or value <= high)):  # NaN compares false: refused
        return f"from {low:g} to {high:g}" if high is not None else f"{low:g} or more"
    return None


def parse_option(name: str, text: str) -> float | int:
    """Read the value of option ``name`` as typed (``/set temperature 0.2``).

    Raises:
        BadOption: an unknown name, or a value of the wrong kind or out of range (said with the range).
    """
    if name not in OPTIONS:
        raise BadOption(f"no option {name!r}; the options are: {', '.join(OPTIONS)}")
    kind = OPTIONS[name][0]
    try:
        value = kind(text)
    except ValueError:
        word = "a whole number" if kind is int else "a number"
        raise BadOption(f"{name} takes {word}, not {text!r}") from None
    if span := _out_of_range(name, value):
        raise BadOption(f"{name} must be {span}, not {text}")
    return value


def options_of(data: Any) -> dict[str, Any]:
    """The options a ``session/options`` event's ``options`` holds, those a request can carry, in order.

    A value of the wrong kind or out of range (another tool wrote it, or a newer gs) is left
    out rather than sent.
    """
    if not isinstance(data, Mapping):
        return {}
    out = {}
    for name, (kind, _low, _high) in OPTIONS.items():
        value = data.get(name)
        if isinstance(value, bool) or not isinstance(value, int if kind is int else (int, float)):
            continue
        if _out_of_range(name, value):
            continue
        out[name] = value
    return out


def options_text(options: Mapping[str, Any]) -> str:
    """``temperature=0.2 max_tokens=500``; ``""`` for none."""
    return " ".join(f"{k}={v:g}" if isinstance(v, float) else f"{k}={v}" for k, v in options.items())


def offered_tools(calls_tools: bool, tools: list[dict[str, Any]] | None, asked: bool = False
                  ) -> tuple[list[dict[str, Any]] | None, str | None]:
    """The tools a request offers the model, and what to tell the user when none can be.

    A model that cannot call tools (the embedded SmolLM2 ignores them) is offered
    none, rather than tools that will never be called; when the user asked for tools, they
    are told so.

    Args:
        calls_tools: the provider's model calls tools.
        tools: the tools the caller would offer (None: the loop's default).
        asked: the user asked for tools (``--tools``, ``tools:`` in config).

    Returns:
        ``(tools, note)``: the tools to pass to the loop, and a line for the user (None: nothing to say).
    """
    if calls_tools:
        return tools, None
    note = "the embedded model cannot call tools: none are offered to it (configure a model API to use tools)"
    return [], note if asked else None
