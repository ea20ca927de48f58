"""Every ``hf-textcluster ...`` and ``python -m training.bench ...`` command in a fenced code block of README.md and
docs/ parses against the real argparse parsers, as written (nothing is run); the generated option tables of
docs/cli.md are those the parsers give today."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]
FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.S | re.M)
SHELL_OPERATORS = {">", ">>", "<", "|", "&&", ";", "||", "&"}
# how a command starts -> the parser that reads the rest (`accelerate launch ... -m hf_textcluster.cli` included)
ENTRY_POINTS = {
    ("hf-textcluster",): "cli",
    ("-m", "hf_textcluster.cli"): "cli",
    ("python", "-m", "training.bench"): "bench",
}


def _pages() -> list[Path]:
    return [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").rglob("*.md"))]


def _commands() -> list[tuple[str, str, list[str]]]:
    """(where, kind, arguments) for each command of a fenced block: continuation lines joined, comments dropped."""
    found = []
    for page in _pages():
        text = page.read_text(encoding="utf-8")
        for block in FENCE.finditer(text):
            line_no = text[: block.start()].count("\n") + 2
            for offset, line in enumerate(block.group(1).replace("\\\n", " ").splitlines()):
                try:
                    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
                    lexer.whitespace_split, lexer.commenters = True, "#"
                    tokens = list(lexer)
                except ValueError:  # not shell (Python, YAML, a table)
                    continue
                words = []
                for token in tokens:
                    if token in SHELL_OPERATORS:
                        break
                    words.append(token)
                for start in range(len(words)):
                    for prefix, kind in ENTRY_POINTS.items():
                        if tuple(words[start : start + len(prefix)]) == prefix:
                            where = f"{page.relative_to(REPO_ROOT)}:{line_no + offset}"
                            found.append((where, kind, words[start + len(prefix) :]))
                            break
                    else:
                        continue
                    break
    return found


def _results_commands() -> list[tuple[str, str, list[str]]]:
    """The generated results page names each run's command inline: `python -m training.bench <section> ...`."""
    page = REPO_ROOT / "docs" / "results.md"
    found = []
    for line_no, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        for span in re.findall(r"`(python -m training\.bench [^`]*)`", line):
            found.append((f"docs/results.md:{line_no}", "bench", shlex.split(span)[3:]))
    return found


COMMANDS = _commands() + _results_commands()


def test_the_docs_have_commands_of_both_kinds():
    kinds = {kind for _, kind, _ in COMMANDS}
    assert kinds == {"cli", "bench"}, kinds
    assert sum(kind == "cli" for _, kind, _ in COMMANDS) >= 30
    assert sum(where.startswith("docs/results.md") for where, _, _ in COMMANDS) >= 80  # each run's command


@pytest.mark.parametrize("where, kind, argv", COMMANDS, ids=[c[0] for c in COMMANDS])
def test_command_parses(where, kind, argv, capsys):
    if kind == "cli":
        from hf_textcluster.cli import parse_command_line

        parse = parse_command_line
    else:
        from training.bench.__main__ import build_parser

        parse = build_parser().parse_args
    try:
        parse(argv)
    except SystemExit as err:
        pytest.fail(f"{where}: `{' '.join(argv)}` does not parse: {capsys.readouterr().err.strip()} ({err.code})")
    assert "deprecated" not in capsys.readouterr().err, f"{where} uses a deprecated option"


def test_cli_reference_tables_are_current():
    from training.docs.cli_reference import write

    assert write(check=True) == [], "docs/cli.md is stale: run `python -m training.docs cli`"
