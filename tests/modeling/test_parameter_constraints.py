"""Parameters declared once: an Interval's bounds (closed or open, a bool is no number, NaN is out of any bounds),
Options, None where a parameter is optional, one message naming the parameter, what is allowed and the value; every
table names real fields, and ``train --help`` shows what the training arguments' table allows."""

from __future__ import annotations

import dataclasses
import inspect
from numbers import Integral, Real

import numpy as np
import pytest

from hf_textcluster import METHODS, TextClusteringConfig
from hf_textcluster.modeling.validation import Interval, Options, describe, validate_parameters
from hf_textcluster.training.arguments import ClusteringTrainingArguments


@pytest.mark.parametrize(
    ("closed", "allowed", "text"),
    [
        ("both", (0, 1), "a number in [0, 1]"),
        ("left", (0,), "a number in [0, 1)"),
        ("right", (1,), "a number in (0, 1]"),
        ("neither", (), "a number in (0, 1)"),
    ],
)
def test_an_interval_allows_its_bounds_as_closed_says(closed, allowed, text):
    interval = Interval(Real, 0, 1, closed=closed)
    assert str(interval) == text
    assert interval.is_satisfied_by(0.5)
    for edge in (0, 1):
        assert interval.is_satisfied_by(edge) == (edge in allowed), (closed, edge)
    for outside in (-0.1, 1.1, float("nan"), float("inf")):
        assert not interval.is_satisfied_by(outside), (closed, outside)


def test_an_interval_checks_the_type_and_a_bool_is_no_number():
    integers = Interval(Integral, 1, None)
    assert integers.is_satisfied_by(3) and integers.is_satisfied_by(np.int64(3))
    for value in (True, np.bool_(True), 2.0, "3", None, 0):
        assert not integers.is_satisfied_by(value), value
    assert not Interval(int, 1, None).is_satisfied_by(np.int64(3))  # `int` alone: numpy integers are not accepted
    assert Interval(Real).is_satisfied_by(-1e9) and Interval(Real).is_satisfied_by(2)
    assert not Interval(Real).is_satisfied_by(False)


@pytest.mark.parametrize(
    ("interval", "text"),
    [
        (Interval(int, 1, None), "a positive integer"),
        (Interval(int, 2, None), "an integer >= 2"),
        (Interval(int, 0, None, closed="neither"), "an integer > 0"),
        (Interval(int, None, 5), "an integer <= 5"),
        (Interval(int, None, 5, closed="left"), "an integer < 5"),
        (Interval(int, 2, 100_000), "an integer in [2, 100000]"),
        (Interval(Real), "a number"),
        (Interval((int, float), 0, None, closed="neither"), "a number > 0"),
    ],
)
def test_an_interval_reads_as_words(interval, text):
    assert str(interval) == text


def test_an_interval_refuses_an_unknown_closed():
    with pytest.raises(ValueError, match="`closed` must be one of both, left, right, neither, got 'all'"):
        Interval(int, 0, 1, closed="all")


def test_options_and_none():
    pooling = Options("mean", "cls")
    assert pooling.is_satisfied_by("mean") and str(pooling) == "one of mean, cls"
    for value in ("max", 7, None, ["mean"], {"mean": 1}):  # unhashable values are refused, not an error
        assert not pooling.is_satisfied_by(value), value
    zero = Options(0)
    assert zero.is_satisfied_by(0) and str(zero) == "0"
    for value in (False, 0.0, "0"):  # the same value of another type is not the option
        assert not zero.is_satisfied_by(value), value
    optional = [Interval(int, 1, None), None]
    assert describe(optional) == "a positive integer or None"
    assert describe(optional, none=False) == "a positive integer"
    validate_parameters({"steps": None}, {"steps": optional})
    with pytest.raises(ValueError, match="`steps` must be a positive integer, got None"):
        validate_parameters({"steps": None}, {"steps": Interval(int, 1, None)})


def test_validate_parameters_is_one_line_naming_the_parameter_what_is_allowed_and_the_value():
    table = {"num_clusters": Interval(int, 2, 100_000), "sample": [Options(0), Interval(int, 2, None)]}
    validate_parameters({"num_clusters": 3}, table)  # a dict: only its keys are checked
    with pytest.raises(ValueError) as error:
        validate_parameters({"num_clusters": 1}, table, "MyConfig")
    assert str(error.value) == "MyConfig: `num_clusters` must be an integer in [2, 100000], got 1."
    with pytest.raises(ValueError) as error:
        validate_parameters(dataclasses.make_dataclass("P", ["num_clusters", "sample"])(5, 1), table)
    assert str(error.value) == "`sample` must be 0 or an integer >= 2, got 1."
    with pytest.raises(ValueError) as error:
        validate_parameters({"num_clusters": list(range(1000))}, table)
    assert "\n" not in str(error.value) and len(str(error.value)) < 150  # a huge value is shortened


def _config_classes():
    return [TextClusteringConfig, *(method.config_class for method in METHODS.values())]


@pytest.mark.parametrize("config_class", _config_classes(), ids=lambda c: c.__name__)
def test_every_config_table_covers_only_its_fields_and_extends_the_base_table(config_class):
    table = config_class._parameter_constraints
    fields = set(inspect.signature(config_class.__init__).parameters)
    assert set(table) <= fields, set(table) - fields
    assert set(TextClusteringConfig._parameter_constraints) <= set(table)
    config_class()  # every default is allowed


def test_the_training_arguments_table_covers_only_its_own_fields_and_train_help_shows_it():
    from transformers import TrainingArguments

    from hf_textcluster.cli import build_parser

    table = ClusteringTrainingArguments._parameter_constraints
    own = {f.name for f in dataclasses.fields(ClusteringTrainingArguments)} - {
        f.name for f in dataclasses.fields(TrainingArguments)
    }
    assert set(table) <= own, set(table) - own
    parser = build_parser()
    train = next(a for a in parser._actions if a.dest == "command").choices["train"]
    text = " ".join(train.format_help().split())
    assert "Must be 0 or an integer >= 2." in text and "Must be a number in (0, 1)." in text
    assert f"Must be {table['serve']}." in text
