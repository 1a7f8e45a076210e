"""The ``gs`` command line (typer). Library errors become one-line messages here, once."""

from __future__ import annotations

from .display import early

# Before the imports below (~150 ms): `gs chat [SESSION]` on a terminal draws its prompt now.
early.hold()

import functools
import gc
import importlib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer
import typer.main

from .. import __version__
from ..errors import GitSessionsError
from ..store.privacy import PRIVATE_UMASK
from . import background
from .common import Context, err
from .display.output import Output
from .help import Command, Group, choose, enum_of, plain_message

#: The exit status of an internal error (a bug), apart from typer's 2 for a usage error:
#: EX_SOFTWARE of sysexits(3). The others: 0 success, 1 a failure the user can act on
#: (:attr:`GitSessionsError.exit_code`), 2 a usage error, 130 interrupted.
EXIT_INTERNAL = 70

#: The modules that define the commands, in the order they are registered, and the
#: commands each defines (``hooks`` is a group of its own; ``capture`` and ``remote`` are
#: groups their module's app holds). ``gs NAME`` imports only NAME's
#: module and builds only NAME's command: the others cost start-up time a command does not
#: use (a test checks this index against the modules).
COMMANDS: dict[str, tuple[str, ...]] = {
    "chat": ("chat", "ask", "retry"),
    "history": ("list", "log", "show", "diff", "search"),
    "tree": ("tree", "reflog", "status"),
    "lifecycle": ("fork", "rename", "rm", "restore", "title"),
    "remote": ("push", "pull", "sync", "clone", "remote"),
    "share": ("share",),
    "admin": ("gc", "doctor"),
    "transfer": ("export", "import"),
    "hooks": ("hooks",),
    "capture": ("capture",),
}

#: The global options that take a value (the word after them is no command name).
_VALUE_OPTIONS = ("--repo",)
_HELP_OPTIONS = ("-h", "--help")
#: The global options without a value (``gs --debug ask``, or ``gs ask --debug``).
_FLAG_OPTIONS = ("--debug", "--no-color", "--no-pager")


def _version(value: bool) -> None:
    if value:
        print(f"gitsessions {__version__}")
        raise typer.Exit()


def _root(
    ctx: typer.Context,
    repo: Annotated[Path | None, typer.Option(
        "--repo", metavar="PATH", help="Session repo path (default: $GS_REPO, config, platform data dir).")] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of unexpected errors.")] = False,
    no_color: Annotated[bool, typer.Option("--no-color", help="No colour or styles (also NO_COLOR=1).")] = False,
    no_pager: Annotated[bool, typer.Option("--no-pager", help="Never page long output.")] = False,
    version: Annotated[bool, typer.Option(
        "--version", callback=_version, is_eager=True, help="Print the version.")] = False,
) -> None:
    ctx.obj = Context(repo=repo, debug=debug or bool(os.environ.get("GS_DEBUG")),
                      output=Output(no_color=no_color, no_pager=no_pager))
    ctx.call_on_close(ctx.obj.print_warnings)  # also when the command fails


def _new_app(modules: Sequence[str], only: str | None = None) -> typer.Typer:
    """The ``gs`` app with the commands of ``modules`` (names of :data:`COMMANDS`) registered.

    Args:
        modules: the modules whose commands are registered.
        only: register this command of theirs alone (None: all of them).
    """
    new = typer.Typer(
        name="gs",
        cls=_RootGroup,
        help=_ROOT_HELP,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,  # plain help and usage errors (see .help), no panels
        context_settings={"help_option_names": list(_HELP_OPTIONS)},
    )
    new.callback()(_root)
    for name in modules:
        sub = importlib.import_module(f"{__name__}.{name}").app
        _use_help_classes(sub)
        if name == "hooks":
            new.add_typer(sub, name="hooks")  # a group: gs hooks install / gs hooks list
            continue
        new.registered_commands.extend(c for c in sub.registered_commands if only in (None, _name(c)))
        new.registered_groups.extend(sub.registered_groups)
    return new


_ROOT_HELP = """gitsessions: chat with any OpenAI-compatible model; every session is a git branch and
every turn a commit.

Also installed as 'gitsessions', since 'gs' is Ghostscript on many systems. 'gs help COMMAND'
(or 'gs COMMAND --help') tells more about a command.

Examples:
    gs chat work                      # chat in session 'work' (made if new)
    gs ask "What is a git ref?"       # one question, one reply, a new session
    gs list                           # every session, newest first
    gs log work -p                    # what each turn of 'work' added
    gs help chat
"""


class _ReaderGone(Exception):
    """stdout's reader went away (``gs log | head``): :func:`run` makes it exit 0.

    typer (as click) turns a closed pipe (``EPIPE``) into exit status 1, which means "no
    match" to ``gs search``; raised in its place, this is not an ``OSError``, so it comes out
    of typer to :func:`_run`.
    """


class _RootGroup(Group):
    """``gs`` itself: its commands listed under what they are for (git help's way)."""

    sections = (
        ("Talk to a model", COMMANDS["chat"]),
        ("Read sessions", COMMANDS["history"] + COMMANDS["tree"]),
        ("Manage sessions", COMMANDS["lifecycle"]),
        ("Share and sync", COMMANDS["remote"] + COMMANDS["share"]),
        ("Files and upkeep", COMMANDS["transfer"] + COMMANDS["capture"] + COMMANDS["admin"] + COMMANDS["hooks"]
         + ("help",)),
    )

    def make_context(self, *args: Any, **kwargs: Any) -> Any:
        """Parse ``gs``'s own options (``gs --help`` writes here); a closed stdout is :class:`_ReaderGone`."""
        try:
            return super().make_context(*args, **kwargs)
        except BrokenPipeError:
            raise _ReaderGone() from None

    def invoke(self, ctx: Any) -> Any:
        """Run the command (and its ``--help``); a closed stdout is :class:`_ReaderGone`."""
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise _ReaderGone() from None


def _use_help_classes(sub: typer.Typer) -> None:
    """Make the commands of ``sub`` (and of its groups) :class:`~.help.Command`s, unless they are one already."""
    for info in sub.registered_commands:
        if not (isinstance(info.cls, type) and issubclass(info.cls, Command)):  # typer's TyperCommand
            info.cls = Command
    for group in sub.registered_groups:  # each made with cls=Group (gs remote)
        if group.typer_instance is not None:
            _use_help_classes(group.typer_instance)


def _help(
    ctx: typer.Context,
    words: Annotated[list[str] | None, typer.Argument(
        metavar="COMMAND", help="The command (or 'hooks SUBCOMMAND') to tell about.", show_default=False)] = None,
) -> None:
    """Show the help of gs, or of one of its commands.

    The same text as 'gs COMMAND --help'.

    Examples:
        gs help
        gs help log
        gs help hooks install
    """
    words = list(words or [])
    prog = ctx.find_root().info_name
    raise SystemExit(_command(*_command_of(words))(args=[*words, "--help"], prog_name=prog))


def _name(info: Any) -> str:
    """The name typer gives a registered command: its own, else its function's (``_`` as ``-``)."""
    return info.name or typer.main.get_command_name(info.callback.__name__)


@functools.cache
def _full_app() -> typer.Typer:
    app = _new_app(tuple(COMMANDS))
    app.command("help", cls=Command)(_help)  # no module of its own: `gs help` gets the whole app
    return app


def __getattr__(name: str) -> Any:
    # ``app``, the whole command line, is built when first asked for (PEP 562): a run of one
    # known command builds only that command's module (see :func:`_command`).
    if name == "app":
        return _full_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _command_of(argv: Sequence[str]) -> tuple[str | None, str | None]:
    """``(module, name)``: the command ``argv`` names and its :data:`COMMANDS` module, else ``(None, None)``.

    Global options before the command are skipped (``gs --repo X ask ...``); anything else
    (``--help`` alone, an unknown name, ``--``) gets the whole app, so that help and usage
    errors read as they always did.
    """
    words = iter(argv)
    for word in words:
        if word in _VALUE_OPTIONS:
            next(words, None)
        elif word.startswith("-") and word != "-" and word != "--" and word not in _HELP_OPTIONS:
            continue
        else:
            module = next((m for m, names in COMMANDS.items() if word in names), None)
            return (module, word) if module is not None else (None, None)
    return None, None


def globals_first(argv: Sequence[str]) -> list[str]:
    """``argv`` with the global options given after the command moved before it, as gh takes them.

    ``gs ask work hi --repo ~/other.git`` reads as ``gs --repo ~/other.git ask work hi``: no
    command has an option of those names. Words after ``--`` stay where they are (a prompt).

    Args:
        argv: the command line after the program name.

    Returns:
        The command line to parse (``argv`` itself, copied, when nothing moved).
    """
    words = list(argv)
    start = _command_index(words)
    if start is None:
        return words
    moved: list[str] = []
    rest: list[str] = []
    i = start + 1
    while i < len(words):
        word = words[i]
        if word == "--":
            rest += words[i:]
            break
        if word in _VALUE_OPTIONS and i + 1 < len(words):
            moved += words[i:i + 2]
            i += 2
            continue
        if word in _FLAG_OPTIONS or word.split("=", 1)[0] in _VALUE_OPTIONS and "=" in word:
            moved.append(word)
        else:
            rest.append(word)
        i += 1
    return [*words[:start], *moved, words[start], *rest]


def _command_index(words: Sequence[str]) -> int | None:
    """Where the command's name is in ``words`` (global options before it skipped), else None."""
    i = 0
    while i < len(words):
        word = words[i]
        if word in _VALUE_OPTIONS:
            i += 2
        elif word.startswith("-") and word not in ("-", "--") and word not in _HELP_OPTIONS:
            i += 1
        else:
            return i if any(word in names for names in COMMANDS.values()) else None
    return None


def run(args: Sequence[str] | None = None, *, prog_name: str | None = None) -> int:
    """Run one ``gs`` command in this process and translate its outcome to an exit status.

    The one place where library errors become a one-line message on stderr:
    :class:`GitSessionsError` -> its message and ``exit_code``, Ctrl+C -> 130, a
    closed stdout (``gs log | head``) -> 0, anything else -> :data:`EXIT_INTERNAL` with a
    hint to run with ``--debug`` (which re-raises it, traceback and all). The real entry
    point and the in-process tests both call this.

    Args:
        args: the command line after the program name (None: ``sys.argv[1:]``).
        prog_name: the program name shown in usage messages (None: as typed by the user).

    Returns:
        The exit status: 0 success, 1 a failure the user can act on, 2 a usage error,
        70 an unexpected (internal) error, 130 interrupted.

    Raises:
        Exception: an unexpected error, when ``--debug`` or ``$GS_DEBUG`` asks to see it.
    """
    # Conversations are private (store/privacy.py); widened for a shared repo. What gs starts
    # inherits it on purpose: a hook's `git gc` writes packs of them, an editor a swap file.
    umask = os.umask(PRIVATE_UMASK)
    try:
        log = background.started_in_background()  # a gs run after a save: its failure is kept
        status = _run(args, prog_name)
        background.finish(log, status)
        return status
    finally:
        os.umask(umask)  # an in-process caller gets its own back


def _run(args: Sequence[str] | None, prog_name: str | None) -> int:
    """:func:`run` without the record of a background run."""
    given = list(sys.argv[1:] if args is None else args)
    argv = globals_first(given)
    debug = "--debug" in argv or bool(os.environ.get("GS_DEBUG"))
    status = 0
    try:
        # args=None lets click read sys.argv itself (on Windows it also expands globs there).
        _command(*_command_of(argv))(args=None if args is None and argv == given else argv, prog_name=prog_name)
    except SystemExit as exc:  # typer (click) always ends this way, with the status
        status = _status(exc.code)
    except GitSessionsError as exc:
        err(f"gs: {exc}")
        return exc.exit_code
    except KeyboardInterrupt:
        err("gs: interrupted")
        return 130
    except (BrokenPipeError, _ReaderGone):
        # The reader went away (gs log | head) before the command ended: it wanted no more,
        # which is no failure.
        _drop_stdout()
        return 0
    except Exception as exc:  # last resort: never show a user a traceback unasked
        if debug:
            raise
        err(f"gs: unexpected error: {exc.__class__.__name__}: {exc} (run with --debug for details)")
        return EXIT_INTERNAL
    try:
        sys.stdout.flush()  # what print() left buffered, now: a reader gone is no failure here either
    except BrokenPipeError:
        _drop_stdout()
    return status


def _drop_stdout() -> None:
    """Point stdout at /dev/null, so that flushing it at exit does not fail again (a closed pipe)."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no file (captured in-process): nothing to flush
        pass


@functools.cache
def _command(module: str | None = None, name: str | None = None) -> Callable[..., Any]:
    """The click command typer builds for command ``name`` of ``module`` (None: the whole ``app``), once per process.

    Typer rebuilds it from every command's signature on each call of ``app()`` (tens of
    milliseconds); a process that runs several commands (the tests) builds each once. A
    group (``hooks``) comes whole.
    """
    app = _full_app() if module is None else _new_app((module,), None if module == "hooks" else name)
    command = typer.main.get_command(app)
    _defer_coercion(command)
    return command


class _DeferredCoercion:
    """typer's coercion of one parameter, with its pydantic adapter built only for a value that needs one.

    typer (0.2x) coerces every value, defaults included, through a pydantic ``TypeAdapter``
    it builds on first use: importing pydantic and building the schemas costs ``gs chat``
    tens of milliseconds before its prompt, for values that come out as they went in. Those
    are answered here as typer answers them: None (``()`` for a multi-value parameter),
    the parameter's own default, a plain ``str`` for a ``str`` parameter. A choice (an
    ``Enum``) is made by :func:`~.help.choose`; every other value goes to typer's own
    adapter (its conversions, and its messages in plain words: :func:`~.help.plain_message`).
    """

    def __init__(self, param: Any):
        desc = param.type_descriptor
        self._param = param
        self._multi = bool(param.multiple or param.nargs == -1)
        self._text = desc.annotation is str and desc.parameter_info.parser is None and not self._multi
        self._enum = enum_of(desc.annotation) if not self._multi else None

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        """Return ``value`` as typer's coercion would, building typer's adapter only when needed."""
        if value is None:
            return () if self._multi else None
        default = self._param.default
        if type(value) is type(default) and value == default:
            return value
        if self._text and type(value) is str:
            return value
        if self._enum is not None:
            return choose(self._enum, value, param, ctx)  # aliases (-f md) and the choices listed
        self._param._runtime_param = None  # typer's own, built now (see typer.core._TyperParameter)
        try:
            return self._param.get_runtime_param().coerce(value, param=param, ctx=ctx)
        except typer.BadParameter as exc:
            exc.message = plain_message(exc.message, value)
            raise


def _defer_coercion(command: Any) -> None:
    """Give each parameter of ``command`` (and its subcommands) a :class:`_DeferredCoercion`.

    The help option too, which click makes (once per command) when a context first asks
    for it. Only where typer coerces through a lazily built runtime parameter (typer 0.2x);
    older typers coerce with click's types and are left as they are.
    """
    help_option = command.get_help_option(typer.Context(command, help_option_names=list(_HELP_OPTIONS)))
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        if getattr(param, "_runtime_param", False) is None and hasattr(param, "get_runtime_param"):
            param._runtime_param = _DeferredCoercion(param)
    for sub in getattr(command, "commands", {}).values():
        _defer_coercion(sub)


def _status(code: object) -> int:
    """The exit status ``sys.exit(code)`` would give: None 0, an int itself, else 1 (printed)."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    err(str(code))
    return 1


def main() -> None:
    """Entry point of ``gs`` / ``gitsessions``: :func:`run` the command line, exit with its status."""
    # Most commands live well under a second and make little cyclic garbage, while the
    # cyclic collector costs ~10% of importing the model SDK; `gs chat` turns it back on.
    gc.disable()
    if sys.stdin is None:  # started with stdin closed (gs ask hi <&-): it reads as empty, as /dev/null
        sys.stdin = open(os.devnull)  # noqa: SIM115 (open for the whole process)
    status = run()
    # The interpreter's exit runs one last collection over every object the imports made
    # (tens of ms after importing the model SDK); frozen objects are left to the OS.
    gc.freeze()
    sys.exit(status)
