"""The generated example cards of the docs are those ``python -m training.docs cards`` writes today (regenerated
into memory and compared), and the report's screenshot exists. The precision row names the CPU the cards were
generated on, so it is left out of the comparison, and so are the numbers: scores, criterion values and times move
in their last digits between CPUs (AVX2 and AVX-512 sum floats in other orders), and so may which id a cluster gets
(the rows of the clusters' table come in another order), while a stale card differs in words: the lines are compared
as a sorted list."""

from __future__ import annotations

import re

import pytest

PRECISION_ROW = re.compile(r"^\| training \| `precision` \|.*$", re.M)
NUMBER = re.compile(r"\d+(?:[.,]\d+)*")


def _comparable(card: str) -> list[str]:
    masked = NUMBER.sub("#", PRECISION_ROW.sub("| training | `precision` | (this machine's) |", card))
    return sorted(masked.splitlines())


@pytest.mark.slow
def test_example_cards_are_current():
    from training.docs.example_cards import render_cards

    for path, card in render_cards().items():
        assert path.is_file(), f"{path} is missing: run `python -m training.docs cards`"
        assert _comparable(path.read_text(encoding="utf-8")) == _comparable(card), (
            f"{path.name} is stale: run `python -m training.docs cards`"
        )


def test_example_cards_and_the_screenshot_are_in_the_docs():
    from training.docs.example_cards import CARDS
    from training.docs.screenshot import SCREENSHOT

    for path in [*CARDS.values(), SCREENSHOT]:
        assert path.is_file(), f"{path} is missing: run `python -m training.docs all`"
    assert "report.png" in (SCREENSHOT.parents[0] / "getting-started.md").read_text(encoding="utf-8")
