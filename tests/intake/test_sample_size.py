"""Cochran's sample size with the finite population correction, rounded up
(annotation/intake/sampling.py), against Krejcie and Morgan's table, scipy's z, and its
properties; and `manage.py sample_size`."""

from __future__ import annotations

import math

import pytest
from django.core.management import CommandError, call_command
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import norm

from annotation.intake.sampling import sample_size, size_for, z_value

# Krejcie, R. V. & Morgan, D. W. (1970). Determining sample size for research activities.
# Educational and Psychological Measurement 30, 607-610, Table 1: population N -> sample S.
KREJCIE_MORGAN = {
    10: 10, 15: 14, 20: 19, 25: 24, 30: 28, 35: 32, 40: 36, 45: 40, 50: 44, 55: 48, 60: 52,
    65: 56, 70: 59, 75: 63, 80: 66, 85: 70, 90: 73, 95: 76, 100: 80, 110: 86, 120: 92,
    130: 97, 140: 103, 150: 108, 160: 113, 170: 118, 180: 123, 190: 127, 200: 132, 210: 136,
    220: 140, 230: 144, 240: 148, 250: 152, 260: 155, 270: 159, 280: 162, 290: 165, 300: 169,
    320: 175, 340: 181, 360: 186, 380: 191, 400: 196, 420: 201, 440: 205, 460: 210, 480: 214,
    500: 217, 550: 226, 600: 234, 650: 242, 700: 248, 750: 254, 800: 260, 850: 265, 900: 269,
    950: 274, 1000: 278, 1100: 285, 1200: 291, 1300: 297, 1400: 302, 1500: 306, 1600: 310,
    1700: 313, 1800: 317, 1900: 320, 2000: 322, 2200: 327, 2400: 331, 2600: 335, 2800: 338,
    3000: 341, 3500: 346, 4000: 351, 4500: 354, 5000: 357, 6000: 361, 7000: 364, 8000: 367,
    9000: 368, 10000: 370, 15000: 375, 20000: 377, 30000: 379, 40000: 380, 50000: 381,
    75000: 382, 1000000: 384,
}  # fmt: skip


def _km(population: int, chi_square: float) -> float:
    """Krejcie and Morgan's formula as printed: s = X^2 N P(1-P) / (d^2 (N-1) + X^2 P(1-P))."""
    return chi_square * population * 0.25 / (0.05**2 * (population - 1) + chi_square * 0.25)


def test_it_gives_383_for_81366():
    assert sample_size(81_366) == 383


@pytest.mark.parametrize("population, size", [(100, 80), (20_000, 377), (1_000_000, 384)])
def test_it_gives_the_table_values_the_issue_names(population, size):
    assert sample_size(population) == size


def test_it_is_krejcie_and_morgans_formula_rounded_up():
    # The table is the formula with chi-square 3.841 rounded to the nearest integer (every
    # entry); ours rounds up with z from the normal distribution: the same or one more.
    for population, table in KREJCIE_MORGAN.items():
        assert round(_km(population, 3.841)) == table, population
        ours = sample_size(population)
        assert ours == math.ceil(_km(population, z_value(0.95) ** 2)), population
        assert ours - table in (0, 1), population


def test_it_differs_from_the_table_where_the_table_rounded_down_or_z_is_finer():
    # 47 of the 95 entries are one above the table: 45 because the table rounds to the
    # nearest (135.4 -> 135), 2 because z^2 = 3.84146 instead of 3.841 lifts the value a
    # hair above an integer (210: 135.9990 -> 136.0047; 4500: 353.9657 -> 354.0047).
    above = {n for n, s in KREJCIE_MORGAN.items() if sample_size(n) != s}
    rounded_down = {n for n, s in KREJCIE_MORGAN.items() if math.ceil(_km(n, 3.841)) != s}
    finer_z = {n for n in KREJCIE_MORGAN if math.ceil(_km(n, 3.841)) != sample_size(n)}
    assert len(rounded_down) == 45
    assert finer_z == {210, 4500}
    assert above == rounded_down | finer_z
    assert len(above) == 47


@pytest.mark.parametrize("confidence", [0.8, 0.9, 0.95, 0.99, 0.999])
def test_its_z_is_scipys(confidence):
    assert z_value(confidence) == pytest.approx(norm.ppf(1 - (1 - confidence) / 2), abs=1e-12)


def test_its_95_percent_z_squared_rounds_to_the_tables_chi_square():
    assert round(z_value(0.95) ** 2, 3) == 3.841
    assert round(z_value(0.95), 2) == 1.96


def test_it_follows_the_inputs():
    assert sample_size(81_366, confidence=0.99) == 659
    assert sample_size(81_366, margin=0.03) == 1_054
    assert sample_size(81_366, proportion=0.1) == 139
    # what Raosoft's calculator gives too (scipy's z, the same formula)
    assert sample_size(0) == 0
    assert sample_size(1) == 1


@pytest.mark.parametrize(
    "kwargs, word",
    [
        ({"population": -1}, "population"),
        ({"population": 1.5}, "population"),
        ({"population": 10, "confidence": 1}, "confidence"),
        ({"population": 10, "margin": 0}, "margin"),
        ({"population": 10, "proportion": 1.2}, "proportion"),
    ],
)
def test_it_refuses_bad_inputs_by_name(kwargs, word):
    with pytest.raises(ValueError, match=word):
        size_for(**kwargs)


populations = st.integers(min_value=0, max_value=10**9)
confidences = st.floats(min_value=0.5, max_value=0.999)
margins = st.floats(min_value=0.005, max_value=0.5)
proportions = st.floats(min_value=0.01, max_value=0.99)


@given(populations, populations, confidences, margins, proportions)
def test_it_is_monotone_in_the_population(a, b, confidence, margin, proportion):
    small, large = sorted((a, b))
    assert sample_size(small, confidence, margin, proportion) <= sample_size(
        large, confidence, margin, proportion
    )


@given(populations, confidences, margins, proportions)
def test_it_is_never_above_the_population_nor_the_infinite_size(n, confidence, margin, p):
    size = size_for(n, confidence, margin, p)
    assert 0 <= size.n <= n
    assert size.n <= size.infinite_n
    assert size.n >= size.exact - 1e-6  # rounded up, never down


def test_the_command_prints_the_size_and_the_inputs(capsys):
    call_command("sample_size", "--population", "81366")
    out = capsys.readouterr().out
    assert out.startswith("Sample size: 383\n")
    assert "population N = 81,366" in out
    assert "z = 1.959964" in out
    assert "n0 = z^2 p (1 - p) / e^2 = 384.1459" in out
    assert "= 382.3454" in out
    assert "margin e = 0.05 (±5%), proportion p = 0.5" in out


def test_the_command_takes_the_options(capsys):
    call_command("sample_size", "--population", "81366", "--confidence", "0.99", "--margin", "0.03")
    out = capsys.readouterr().out
    assert out.startswith("Sample size: 1,803\n")
    assert "confidence 99%: z = 2.575829" in out


def test_the_command_names_a_bad_option():
    with pytest.raises(CommandError, match="--population must be a whole number"):
        call_command("sample_size", "--population", "-5")
    with pytest.raises(CommandError, match="margin must be between 0 and 1"):
        call_command("sample_size", "--population", "100", "--margin", "5")
