"""Statistics against hand-computed and published values."""

import math

import numpy as np

from alemlite import stats


def test_wilson_interval_matches_the_published_value():
    # 3 successes in 10 trials at 95%: (0.108, 0.603), Newcombe (1998), method 3.
    rate, low, high = stats.wilson_ci(3, 10)
    assert rate == 0.3
    assert math.isclose(low, 0.1078, abs_tol=1e-4) and math.isclose(high, 0.6032, abs_tol=1e-4)


def test_hedges_g_is_the_corrected_standardised_difference():
    a, b = np.array([2.0, 4.0, 6.0]), np.array([1.0, 2.0, 3.0])
    pooled = math.sqrt((2 * 4.0 + 2 * 1.0) / 4)
    expected = (4.0 - 2.0) / pooled * (1 - 3 / (4 * 6 - 9))
    assert math.isclose(stats.hedges_g(a, b), expected)


def test_welch_t_matches_the_textbook_formula():
    a, b = np.array([1.0, 2.0, 3.0, 4.0]), np.array([2.0, 4.0, 6.0, 8.0, 10.0])
    t, p = stats.welch_t_test(a, b)
    expected = (a.mean() - b.mean()) / math.sqrt(a.var(ddof=1) / 4 + b.var(ddof=1) / 5)
    assert math.isclose(t, expected) and 0 < p < 1


def test_mean_ci_contains_the_mean_and_shrinks_with_more_data():
    rng = np.random.default_rng(0)
    small = stats.mean_ci(rng.normal(size=10))
    large = stats.mean_ci(rng.normal(size=1000))
    assert small[1] < small[0] < small[2]
    assert (large[2] - large[1]) < (small[2] - small[1])
    assert stats.mean_ci(np.ones(5)) == (1.0, 1.0, 1.0)


def test_summarise_uses_wilson_for_outcomes_and_t_for_values():
    summary = stats.summarise(
        {
            "deadlock": np.array([False, True, False, False]),
            "starvation": np.array([1, 1, 1]),
            "meals": np.array([1.5, 2.5]),
        }
    )
    assert summary["deadlock"]["ci"] == "wilson" and summary["deadlock"]["mean"] == 0.25
    assert summary["starvation"]["ci"] == "t"  # a count, even when every episode had one
    assert summary["meals"]["ci"] == "t" and summary["meals"]["n"] == 2


def test_bootstrap_is_reproducible_and_brackets_the_mean():
    values = np.arange(20.0)
    first, second = stats.bootstrap_ci(values), stats.bootstrap_ci(values)
    assert first == second and first[1] < first[0] < first[2]


def test_compare_reports_a_clear_difference():
    rng = np.random.default_rng(1)
    result = stats.compare(rng.normal(1, 1, 100), rng.normal(0, 1, 100))
    assert result["welch_p"] < 1e-3 and result["mann_whitney_p"] < 1e-3 and result["hedges_g"] > 0.5
