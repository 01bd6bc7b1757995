"""The range checks every settings dataclass uses: one line naming the field, its range and the value."""
import math

import pytest

from keyboard_lm.config_checks import check_fields, check_range, describe_range
from keyboard_lm.errors import ConfigError


@pytest.mark.parametrize("bounds,text", [
    ((0, 1, False, True), "in [0, 1)"),
    ((0, 1, True, False), "in (0, 1]"),
    ((1, 100_000, False, False), "in [1, 100,000]"),
    ((0, 1e6, True, False), "in (0, 1e+06]"),
    ((1, None, False, False), ">= 1"),
    ((0, None, True, False), "> 0"),
    ((None, 255, False, True), "< 255"),
])
def test_ranges_read_as_the_messages_write_them(bounds, text):
    low, high, low_open, high_open = bounds
    assert describe_range(low, high, low_open=low_open, high_open=high_open) == text


@pytest.mark.parametrize("value", [0, 1, 1.5, -0.0001, math.nan, math.inf, "0.5", None, True])
def test_values_outside_or_not_numbers_raise_one_line(value):
    with pytest.raises(ConfigError) as e:
        check_range("dropout", value, 0, 1, low_open=True, high_open=True)
    assert str(e.value) == f"dropout must be in (0, 1), got {value!r}"


def test_values_inside_pass_and_open_ends_are_strict():
    check_range("dropout", 0.0, 0, 1, high_open=True)
    check_range("lr_decay", 1.0, 0, 1, low_open=True)
    with pytest.raises(ConfigError, match=r"lr_decay must be in \(0, 1\], got 0.0"):
        check_range("lr_decay", 0.0, 0, 1, low_open=True)


def test_integer_fields_refuse_floats_and_bools_and_name_their_kind():
    check_range("slots", 3, 1, integer=True)
    for bad in (2.0, True):
        with pytest.raises(ConfigError, match=f"slots must be an integer >= 1, got {bad!r}"):
            check_range("slots", bad, 1, integer=True, kind="an integer")


def test_large_ints_are_shown_with_separators():
    with pytest.raises(ConfigError, match=r"rounds must be in \[1, 100,000\], got 100,001"):
        check_range("rounds", 100_001, 1, 100_000)


def test_magnitudes_read_as_two_bounds():
    assert describe_range(0, 1e6, low_open=True, bounds=True) == "> 0 and <= 1e+06"
    with pytest.raises(ConfigError, match=r"^server_noise must be a standard deviation >= 0 and <= 1e\+06, got -1.0$"):
        check_range("server_noise", -1.0, 0, 1e6, kind="a standard deviation", bounds=True)


def test_check_fields_names_each_field_with_its_prefix():
    class Config:
        byte_dim, kernel = 4, 0

    with pytest.raises(ConfigError, match=r"^char encoder kernel must be >= 1, got 0$"):
        check_fields(Config(), ("byte_dim", "kernel"), 1, prefix="char encoder ")
