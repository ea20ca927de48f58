"""The schedule sized to the corpus: the rule, the paper recipes' own numbers, and explicit values winning."""

from __future__ import annotations

import pytest

from hf_textcluster.models import METHODS
from hf_textcluster.runs.recipes import load_recipe
from hf_textcluster.runs.schedule import plan_schedule
from hf_textcluster.runs.trainer_setup import build_training_arguments


@pytest.mark.parametrize("method", sorted(METHODS))
def test_cpu_recipes_train_ten_epochs_within_30_to_300_steps(method):
    recipe = load_recipe(method, "cpu")
    batch = recipe["training"]["per_device_train_batch_size"]
    for n in (40, 300, 1_000, 5_000, 20_000):
        schedule = plan_schedule(recipe, n)
        assert schedule.source == "corpus" and schedule.batch_size == batch
        assert schedule.max_steps == min(300, max(30, 10 * (n // batch)))
    # every benchmark corpus (Tweet, the smallest, has 2,472 texts) trains the cap, as before the rule existed
    assert plan_schedule(recipe, 2_472).max_steps == 300


def test_the_paper_recipe_and_explicit_values_win():
    paper = plan_schedule(load_recipe("sccl", "paper"), 300)
    assert paper.source == "recipe" and paper.max_steps == 3000
    epochs = plan_schedule(load_recipe("aecl", "paper"), 300)
    assert epochs.max_steps is None and epochs.epochs == 70
    cpu = load_recipe("sccl", "cpu")
    assert plan_schedule(cpu, 300, {"max_steps": 7}).max_steps == 7
    by_epochs = plan_schedule(cpu, 300, {"num_train_epochs": 2})
    assert by_epochs.source == "explicit" and by_epochs.max_steps is None and by_epochs.epochs == 2
    # the run then trains those epochs: the recipe's step cap does not override them (max_steps -1)
    args = build_training_arguments("unused", {**cpu["training"], "max_steps": -1}, {"num_train_epochs": 2})
    assert args.max_steps == -1 and args.num_train_epochs == 2


def test_a_malformed_schedule_is_one_clear_error():
    recipe = {
        "training": {"per_device_train_batch_size": 8, "max_steps": 10},
        "schedule": {"epochs": 0, "min_steps": 1},
    }
    with pytest.raises(ValueError, match="positive `epochs`"):
        plan_schedule(recipe, 100)
    recipe = {"training": {"per_device_train_batch_size": 8}, "schedule": {"epochs": 1, "min_steps": 1}}
    with pytest.raises(ValueError, match="`max_steps` \\(the cap\\)"):
        plan_schedule(recipe, 100)


def test_short_runs_log_their_loss_terms_every_tenth_of_the_run():
    """The progress bar shows the loss terms of the last log: a 40-step run must log before its end."""
    assert [build_training_arguments("unused", {"max_steps": n}).logging_steps for n in (5, 40, 300, 3000)] == [
        1,
        4,
        30,
        50,
    ]
    assert build_training_arguments("unused", {"max_steps": 40}, {"logging_steps": 7}).logging_steps == 7
