"""The chat's slash commands for what a request sends: ``/system``, ``/model``, ``/models``, ``/set``, ``/usage``.

Each setting is an event saved at once (``session/system``, ``session/model``,
``session/options``: what the model saw is in the log), so the next request, a
revision shown with ``gs show`` and a fork from here all carry it. ``/usage`` reads the usage
every reply recorded (:mod:`gitsessions.log.usage`). Registered in :data:`gitsessions.cli.repl.slash.COMMANDS`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...log.request import OPTIONS, options_text, parse_option

if TYPE_CHECKING:
    from .handle import ChatHandle

#: ``/system`` with this word removes the system prompt.
CLEAR = "--clear"


def system(repl: ChatHandle, arg: str) -> None:
    """``/system [TEXT | --clear]``: show, set or remove the system prompt of the next requests."""
    assert repl.session is not None
    current = repl.session.system
    if not arg:
        repl.env.write(f"(system prompt: {current})\n" if current.strip() else
                   "(no system prompt; /system TEXT sets one)\n")
        return
    text = "" if arg == CLEAR else arg
    repl.session.set_system(text)
    if repl.session.system == current:  # not its commit: clearing a new session's start saves none, yet changes it
        repl.env.write("(the system prompt is that already)\n" if text else "(there is no system prompt to remove)\n")
    else:
        repl.env.write("(system prompt removed)\n" if not text else
                       "(system prompt saved: sent from the next turn on)\n")


def model(repl: ChatHandle, arg: str) -> None:
    """``/model [NAME]``: show the model of the next requests, or switch to NAME (saved in the session)."""
    assert repl.session is not None
    if not arg:
        where = ("this run's -m" if repl.model else "saved in the session" if repl.session.model
                 else "the configured default")
        repl.env.write(f"(model: {repl.current_model()}, {where}; /model NAME switches, /models lists)\n")
        return
    if len(arg.split()) > 1:
        repl.env.write("usage: /model NAME (one name; /models lists them)\n")
        return
    saved = repl.session.set_model(arg)
    was_run = repl.model is not None and repl.model != arg
    repl.model = None  # from now on the session's choice rules, not the command line's
    if saved is None and not was_run:
        repl.env.write(f"(the model is {arg} already)\n")
    else:
        repl.env.write(f"(model: {arg} from the next turn on)\n")


def models(repl: ChatHandle, arg: str) -> None:
    """``/models``: the models the server offers (``GET /models``), the current one marked ``*``."""
    if arg:
        repl.env.write("usage: /models (it lists what the server offers)\n")
        return
    ask = getattr(repl.provider, "models", None)
    names = ask() if ask is not None else []
    if not names:
        repl.env.write("(the server lists no models)\n")
        return
    current = repl.current_model()
    repl.env.write("".join(f"{'*' if name == current else ' '} {name}\n" for name in names))


def options(repl: ChatHandle, arg: str) -> None:
    """``/set [NAME [VALUE]]``: show the request options, set NAME to VALUE, or (no VALUE) unset it."""
    assert repl.session is not None
    words = arg.split()
    now = dict(repl.session.options)
    if not words:
        repl.env.write(f"(options: {options_text(now) or 'none; the server defaults'}; "
                   f"/set NAME VALUE sets one: {', '.join(OPTIONS)})\n")
        return
    if len(words) > 2:
        repl.env.write("usage: /set NAME VALUE (or /set NAME to unset it)\n")
        return
    name = words[0]
    if len(words) == 2:
        now[name] = parse_option(name, words[1])
    elif name in OPTIONS:
        now.pop(name, None)
    else:
        parse_option(name, "")  # says which options there are
    repl.session.set_options({k: now[k] for k in OPTIONS if k in now})
    repl.env.write(f"(options: {options_text(repl.session.options) or 'none; the server defaults'})\n")


def usage(repl: ChatHandle, arg: str) -> None:
    """``/usage``: tokens of this turn and this session, the context against the window, cost when priced."""
    from ...log.usage import report

    assert repl.session is not None
    if arg:
        repl.env.write("usage: /usage (it shows the tokens used)\n")
        return
    models = repl.env.config.models if repl.env.config is not None else {}
    repl.env.write("".join(line + "\n" for line in report(repl.current_model(), repl.session.events, repl.window(),
                                                        models)))
