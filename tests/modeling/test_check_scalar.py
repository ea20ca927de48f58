"""check_scalar: scikit-learn's check_scalar semantics (type, bounds, which bounds are allowed; a bool is no number)
and one message that names the argument, what it must be and the value."""

from __future__ import annotations

import numbers

import numpy as np
import pytest

from hf_textcluster.modeling.validation import check_scalar


@pytest.mark.parametrize("value", [1, 7, np.int64(3)])
def test_a_valid_integer_is_returned_unchanged(value):
    assert check_scalar(value, "n", numbers.Integral, min_val=1) is value


@pytest.mark.parametrize("value", [True, False, np.bool_(True)])
def test_a_bool_is_not_an_integer_nor_a_number(value):
    with pytest.raises(ValueError, match=r"^`n` must be a positive integer, got (np\.)?(True|False)_?\.$"):
        check_scalar(value, "n", numbers.Integral, min_val=1)
    with pytest.raises(ValueError, match="must be a number"):
        check_scalar(value, "p", numbers.Real)


@pytest.mark.parametrize(
    ("value", "kwargs", "message"),
    [
        (0, {"min_val": 1}, "`x` must be a positive integer, got 0."),
        (1, {"min_val": 2}, "`x` must be an integer >= 2, got 1."),
        (2, {"min_val": 2, "include_boundaries": "neither"}, "`x` must be an integer > 2, got 2."),
        (6, {"min_val": 1, "max_val": 5}, "`x` must be an integer in [1, 5], got 6."),
        (5, {"max_val": 5, "include_boundaries": "left"}, "`x` must be an integer < 5, got 5."),
        (1, {"min_val": 1, "max_val": 5, "include_boundaries": "right"}, "`x` must be an integer in (1, 5], got 1."),
        (2.5, {"min_val": 1}, "`x` must be a positive integer, got 2.5."),
        (None, {"min_val": 1}, "`x` must be a positive integer, got None."),
    ],
)
def test_out_of_bounds_or_wrong_type_is_one_message(value, kwargs, message):
    with pytest.raises(ValueError) as error:
        check_scalar(value, "x", numbers.Integral, **kwargs)
    assert str(error.value) == message


def test_boundaries_are_allowed_as_include_boundaries_says():
    for bounds, allowed in [("both", (0, 1)), ("left", (0,)), ("right", (1,)), ("neither", ())]:
        for edge in (0, 1):
            if edge in allowed:
                assert check_scalar(edge, "p", numbers.Real, min_val=0, max_val=1, include_boundaries=bounds) == edge
            else:
                with pytest.raises(ValueError, match=r"`p` must be a number in [\[(]0, 1[\])]"):
                    check_scalar(edge, "p", numbers.Real, min_val=0, max_val=1, include_boundaries=bounds)
    with pytest.raises(ValueError, match="include_boundaries"):
        check_scalar(1, "p", numbers.Real, include_boundaries="all")


def test_none_hint_and_the_exception_for_a_wrong_type():
    assert check_scalar(None, "max_samples", int, min_val=3, allow_none=True) is None
    with pytest.raises(ValueError) as error:
        check_scalar(1, "max_samples", int, min_val=3, allow_none=True, hint="all rows when None")
    assert str(error.value) == "`max_samples` must be an integer >= 3 or None (all rows when None), got 1."
    with pytest.raises(TypeError, match="`seed` must be an integer, got '1'"):
        check_scalar("1", "seed", int, type_error=TypeError)
    with pytest.raises(ValueError, match="`seed` must be an integer >= 0, got -1"):  # a bound is a ValueError
        check_scalar(-1, "seed", int, min_val=0, type_error=TypeError)
    with pytest.raises(ValueError, match="must be an integer"):  # `int` alone: numpy integers are not accepted
        check_scalar(np.int64(3), "n", int)
