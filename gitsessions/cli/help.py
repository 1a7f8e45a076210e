"""How ``gs`` help reads: plain text laid out as git and gh lay theirs out.

typer's own help shows Python types (``--model <str>``, ``<list[str]>``), click's range
notes (``[x>=1]``) and usage pieces such as ``{[SESSION] PROMPT}...`` or ``[[REV]]``. The
classes here draw every command's help instead, from its parameters and docstring, in
the order git and gh use: the usage line (``Usage: gs log [OPTIONS] [REV]``), the
description, the arguments, the options (``-n, --max-count N``, long-only ones lined up
under the others), the examples.

A value's name is its ``metavar`` (capitals: REV, PROMPT, NAME), else its parameter name
in capitals; an optional argument is ``[NAME]``, a repeated one ``NAME...``. A docstring's
paragraph ``Examples:`` starts the examples, shown line for line (they are never rewrapped).
"""

from __future__ import annotations

import inspect
import re
import textwrap
from collections.abc import Sequence
from enum import Enum
from typing import Any, get_args

import typer
from typer.core import TyperCommand, TyperGroup

#: The line of a docstring that starts its examples (the rest of the docstring).
_EXAMPLES = re.compile(r"^Examples?:[ \t]*$", re.MULTILINE)
#: The help option's own line (click's "Show this message and exit.").
HELP_OPTION_HELP = "Show this help."


def split_help(text: str | None) -> tuple[str, list[str]]:
    """Split a command's docstring into its description and its example lines.

    Args:
        text: the docstring (None: no help); a form feed ends it, as in click.

    Returns:
        ``(description, examples)``: the text before the ``Examples:`` line, and the lines
        after it, dedented, blank ones dropped.
    """
    text = inspect.cleandoc(text or "").partition("\f")[0]
    found = _EXAMPLES.search(text)
    if found is None:
        return text.strip(), []
    lines = inspect.cleandoc(text[found.end():]).splitlines()
    return text[:found.start()].strip(), [line for line in lines if line.strip()]


def value_name(param: Any) -> str:
    """The name a parameter's value is shown by: its metavar, else its name in capitals."""
    return param.metavar or (param.name or "").upper()


def usage_piece(param: Any) -> str:
    """How an argument appears in the usage line: ``REV``, ``[REV]``, ``NAME...``, ``[NAME...]``."""
    name = value_name(param)
    if param.nargs != 1 and not name.endswith("..."):
        name += "..."
    return name if param.required or name.startswith("[") else f"[{name}]"


def option_names(param: Any) -> str:
    """An option's left column: ``-m, --model NAME``, ``    --fork NEW``, ``--wait[=SECONDS]``."""
    opts = sorted([*param.opts, *param.secondary_opts], key=lambda o: (o.startswith("--"), o))
    shown = ", ".join(opts)
    if opts[0].startswith("--"):
        shown = "    " + shown  # long options line up under those with a short one
    if not (param.is_flag or param.count):
        name = value_name(param)
        shown += name if name.startswith("[=") else f" {name}"
    return shown


def summary(command: Any) -> str:
    """A command's line in its group's list: its ``short_help``, else its docstring's first sentence.

    The sentence stops before a ``: ``, ``; `` or `` (`` (what follows explains it), so that
    the list reads as a list ("Show a session's commits newest first").
    """
    if command.short_help:
        return str(command.short_help)
    first = split_help(command.help)[0].split("\n\n")[0].replace("\n", " ")
    first = re.split(r"(?<=[a-z0-9)'])\.(?:\s|$)", first)[0].rstrip(".")
    return re.split(r": |; | \(", first)[0]


def enum_of(annotation: Any) -> type[Enum] | None:
    """The ``Enum`` whose members a parameter's value is one of (``ExportFormat | None`` too), else None."""
    for candidate in (annotation, *get_args(annotation)):
        if isinstance(candidate, type) and issubclass(candidate, Enum):
            return candidate
    return None


def choose(choices: type[Enum], value: Any, param: Any = None, ctx: Any = None) -> Enum:
    """The member of ``choices`` that ``value`` names: by its value or by one of its names, any case.

    A member's other names are aliases (``md = "markdown"`` in the class makes ``-f md`` mean
    markdown); they are listed with it when the value names none.

    Raises:
        typer.BadParameter: ``value`` names no member; the message lists them all.
    """
    if isinstance(value, choices):
        return value
    text = str(value).casefold()
    for name, member in choices.__members__.items():
        if text in (name.casefold(), str(member.value).casefold()):
            return member
    listed = []
    for member in choices:
        aliases = [n for n, m in choices.__members__.items() if m is member and n != member.value]
        listed.append(f"{member.value} ({', '.join(aliases)})" if aliases else str(member.value))
    raise typer.BadParameter(f"{str(value)!r} is not one of: {', '.join(listed)}", ctx=ctx, param=param)


#: pydantic's words for a value typer could not convert, and gs's: (pattern, replacement).
_PLAIN = ((re.compile(r"^Value error, "), ""),
          (re.compile(r"^Input should be a valid integer\b.*"), "expected a whole number, not {value!r}"),
          (re.compile(r"^Input should be a valid number\b.*"), "expected a number, not {value!r}"))


def plain_message(message: str, value: Any) -> str:
    """``message`` of a value typer refused, without pydantic's wording ("Value error, ", "unable to parse string")."""
    for pattern, words in _PLAIN:
        message = pattern.sub(words.format(value=value).replace("\\", "\\\\"), message)
    return message


def _option_help(param: Any) -> str:
    if param.name == "help":
        return HELP_OPTION_HELP
    help_text = param.help or ""
    if isinstance(param.show_default, str):
        help_text += f" (default: {param.show_default})"
    return help_text


def _write_rows(formatter: Any, heading: str, rows: Sequence[tuple[str, str]]) -> None:
    if rows:
        with formatter.section(heading):
            formatter.write_dl(rows)


def _write_description(formatter: Any, text: str) -> None:
    """Write ``text``'s paragraphs indented by 2 and rewrapped to the width, words whole.

    click's own rewrap breaks at hyphens ("post-" / "commit", "chat-" / "completions").
    """
    indent = " " * (formatter.current_indent + 2)
    width = max(formatter.width - len(indent), 20) + len(indent)
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text) if p.strip()]
    formatter.write("\n\n".join(textwrap.fill(p, width, initial_indent=indent, subsequent_indent=indent,
                                              break_on_hyphens=False, break_long_words=False)
                                for p in paragraphs) + "\n")


def _write_common(command: Any, ctx: Any, formatter: Any) -> list[str]:
    """Usage, description, arguments and options of ``command``; returns its example lines."""
    formatter.write_usage(ctx.command_path, " ".join(command.collect_usage_pieces(ctx)))
    description, examples = split_help(command.help)
    if description:
        formatter.write_paragraph()
        _write_description(formatter, description)
    params = [p for p in command.get_params(ctx) if not getattr(p, "hidden", False)]
    _write_rows(formatter, "Arguments", [(value_name(p), p.help or "") for p in params
                                         if p.param_type_name == "argument" and p.help])
    _write_rows(formatter, "Options", [(option_names(p), _option_help(p)) for p in params
                                       if p.param_type_name == "option"])
    return examples


def _write_examples(formatter: Any, examples: Sequence[str]) -> None:
    if examples:
        formatter.write_paragraph()
        formatter.write_heading("Examples")
        for line in examples:
            formatter.write(f"{'':>{formatter.current_indent}}  {line}\n")


def _name_arguments(params: Sequence[Any]) -> None:
    """Give each argument without a metavar its name in capitals, so that errors name it as help does.

    click's "Missing argument 'name'" reads the metavar, else the parameter's own name.
    """
    for param in params:
        if param.param_type_name == "argument" and param.metavar is None:
            param.metavar = value_name(param)


class Command(TyperCommand):
    """A ``gs`` command whose help reads as described in this module."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        _name_arguments(self.params)

    def collect_usage_pieces(self, ctx: Any) -> list[str]:
        """``[OPTIONS]`` then each argument as :func:`usage_piece` shows it."""
        return ["[OPTIONS]", *(usage_piece(p) for p in self.get_params(ctx) if p.param_type_name == "argument")]

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """Write the help: usage, description, arguments, options, examples."""
        _write_examples(formatter, _write_common(self, ctx, formatter))


class Group(TyperGroup):
    """A group of ``gs`` commands (``gs`` itself, ``gs hooks``, ``gs remote``), its help as :class:`Command`'s.

    Its commands are listed under headings when :attr:`sections` names them (``gs``:
    chat, read, ...), else under ``Commands``.
    """

    #: ``(heading, command names)`` in the order shown; a command in none is shown last.
    sections: Sequence[tuple[str, Sequence[str]]] = ()

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        _name_arguments(self.params)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        """Write the help: usage, description, options, the commands, examples."""
        examples = _write_common(self, ctx, formatter)
        commands = {name: self.get_command(ctx, name) for name in self.list_commands(ctx)}
        shown = {name: cmd for name, cmd in commands.items() if cmd is not None and not cmd.hidden}
        left = dict(shown)
        for heading, names in [*self.sections, ("Commands" if not self.sections else "Other commands", list(shown))]:
            rows = [(name, summary(left.pop(name))) for name in names if name in left]
            _write_rows(formatter, heading, rows)
        _write_examples(formatter, examples)
