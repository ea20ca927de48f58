"""docs/cli.md's option tables, generated from the ``hf-textcluster`` parsers: one table per command (option,
default, help), between the page's markers; the rest of the page is written by hand.

    python -m training.docs cli            # rewrite the tables
    python -m training.docs cli --check    # exit 1 when they are stale
"""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path
from unittest import mock

REPO = Path(__file__).resolve().parents[2]
CLI_PAGE = REPO / "docs" / "cli.md"
MARKERS = ("<!-- generated: python -m training.docs cli -->", "<!-- /generated -->")
_SAID_DEFAULT = re.compile(r"\(default:? ", re.I)


def _commands() -> dict[str, argparse.ArgumentParser]:
    from hf_textcluster.cli import build_parser

    # defaults read from the environment ($HF_TEXTCLUSTER_DATA_DIR) must not leak into the page
    with mock.patch.dict(os.environ, {"HF_TEXTCLUSTER_DATA_DIR": ""}):
        os.environ.pop("HF_TEXTCLUSTER_DATA_DIR")
        parser = build_parser()
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    helps = {choice.dest: choice.help for choice in action._choices_actions}
    return {name: (sub, helps.get(name, "")) for name, sub in action.choices.items()}


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _option(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"`{action.dest}`"
    if action.nargs == 0:
        return f"`{action.option_strings[0]}`"
    metavar = action.metavar or action.dest.upper()
    return _cell(f"`{action.option_strings[0]} {metavar}`")


def _said_default(text: str) -> str | None:
    """What a help text says the default is: the inside of its "(default: ...)", parentheses balanced."""
    match = _SAID_DEFAULT.search(text)
    if not match:
        return None
    depth, end = 1, match.end()
    while end < len(text) and depth:
        depth += {"(": 1, ")": -1}.get(text[end], 0)
        end += 1
    return text[match.end() : end - 1]


def _default(action: argparse.Action) -> str:
    if action.required or (not action.option_strings and action.nargs not in ("*", "?")):
        return "required"
    if getattr(action, "doc_default", None) is not None:  # a pass-through option's default, as the Trainer has it
        return _cell(action.doc_default)
    if action.nargs == 0:
        return "off"
    if isinstance(action.default, (list, tuple)):
        return _cell(", ".join(f"`{value}`" for value in action.default))
    if action.default not in (None, argparse.SUPPRESS):
        return _cell(f"`{action.default}`")
    said = _said_default(action.help or "")
    return _cell(said) if said else "–"


def command_table(name: str, parser: argparse.ArgumentParser, summary: str) -> list[str]:
    """The section of one command: its one-line summary, then its options by group."""
    lines = [f"### `{name}`", "", _cell(summary), ""]
    for group in parser._action_groups:
        actions = [
            a for a in group._group_actions if not isinstance(a, argparse._HelpAction) and a.help != argparse.SUPPRESS
        ]
        if not actions:
            continue
        if group.title not in ("options", "optional arguments", "positional arguments"):
            lines += [f"**{group.title}**: {_cell(group.description or '')}", ""]
        lines += ["| option | default | what it does |", "|---|---|---|"]
        for action in actions:
            choices = f" One of: {', '.join(map(str, action.choices))}." if action.choices else ""
            text = (action.help or "").replace("%%", "%")  # argparse's escape of %, as --help prints it
            lines.append(f"| {_option(action)} | {_default(action)} | {_cell(text)}{choices} |")
        lines.append("")
    return lines


def render_tables() -> str:
    """The generated part of docs/cli.md: a table per command, in ``hf-textcluster --help`` order."""
    lines = []
    for name, (parser, summary) in _commands().items():
        lines += command_table(name, parser, summary)
    return "\n".join(lines).rstrip("\n")


def page_with_tables(text: str) -> str:
    """``text`` (docs/cli.md) with the part between the markers replaced by :func:`render_tables`."""
    start, end = MARKERS
    if start not in text or end not in text:
        raise ValueError(f"{CLI_PAGE} lacks the markers {start} ... {end}")
    head, rest = text.split(start, 1)
    return f"{head}{start}\n\n{render_tables()}\n\n{end}{rest.split(end, 1)[1]}"


def write(check: bool = False) -> list[Path]:
    """Rewrite docs/cli.md's tables (``check``: write nothing); the paths that were (or would be) changed."""
    text = CLI_PAGE.read_text(encoding="utf-8")
    new = page_with_tables(text)
    if new == text:
        return []
    if not check:
        CLI_PAGE.write_text(new, encoding="utf-8")
    return [CLI_PAGE]
