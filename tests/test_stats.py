"""Statistics against hand-computed and published values."""

import math

import numpy as np
import pytest
from scipy import stats as scipy_stats

from alemlite import stats
from alemlite.core.errors import ConfigError


def test_wilson_interval_matches_the_published_value():
    # 3 successes in 10 trials at 95%: (0.108, 0.603), Newcombe (1998), method 3.
    rate, low, high = stats.wilson_ci(3, 10)
    assert rate == 0.3
    assert math.isclose(low, 0.1078, abs_tol=1e-4) and math.isclose(high, 0.6032, abs_tol=1e-4)


def test_wilson_interval_matches_the_table_value_for_8_of_10():
    rate, low, high = stats.wilson_ci(8, 10)
    assert rate == 0.8
    assert math.isclose(low, 0.4902, abs_tol=1e-4) and math.isclose(high, 0.9433, abs_tol=1e-4)
    assert stats.wilson_ci(10, 10)[2] == 1.0 and stats.wilson_ci(0, 10)[1] == 0.0


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


def test_iqm_is_the_mean_of_the_middle_half_cut_as_rliable_cuts_it():
    # 8 scores: exactly 2 cut from each end, the mean of 3..6.
    assert stats.iqm_ci([np.arange(1.0, 9.0)])[0] == pytest.approx(4.5)
    # Pooled over tasks, whatever the order: the same 8 scores in two tasks.
    assert stats.iqm_ci([[8.0, 1.0, 5.0, 4.0], [2.0, 7.0, 3.0, 6.0]])[0] == pytest.approx(4.5)
    # 18 scores: floor(18 / 4) = 4 cut from each end, so the mean of 5..14 (10 of 18 kept).
    assert stats.iqm_ci([np.arange(1.0, 19.0)])[0] == pytest.approx(np.arange(5, 15).mean())
    # An outlier moves the mean, not the IQM.
    assert stats.iqm_ci([[1.0, 2.0, 3.0, 1000.0]])[0] == pytest.approx(2.5)


def test_optimality_gap_counts_only_the_shortfall_below_gamma():
    point, low, high = stats.optimality_gap_ci([[1.0, 1.5], [2.0, 3.0]])
    assert point == low == high == 0.0
    # Shortfalls 0.5, 0, 1, 0 over four runs.
    assert stats.optimality_gap_ci([[0.5, 1.5], [0.0, 1.0]])[0] == pytest.approx(0.375)
    assert stats.optimality_gap_ci([[0.5]], gamma=2.0)[0] == pytest.approx(1.5)


def test_probability_of_improvement_of_disjoint_identical_and_tied_samples():
    assert stats.probability_of_improvement_ci([[4.0, 5.0, 6.0]], [[1.0, 2.0, 3.0]]) == (1, 1, 1)
    assert stats.probability_of_improvement_ci([[1.0, 2.0, 3.0]], [[4.0, 5.0, 6.0]]) == (0, 0, 0)
    same = [1.0, 2.0, 3.0]
    assert stats.probability_of_improvement_ci([same], [same])[0] == 0.5
    # Ties count half: 2 beats 1, ties 2, loses to 3.
    assert stats.probability_of_improvement_ci([[2.0]], [[1.0, 2.0, 3.0]])[0] == 0.5
    # Averaged over tasks: 1 on the first, 0 on the second.
    assert stats.probability_of_improvement_ci([[2.0, 3.0], [0.0]], [[1.0], [5.0, 6.0]])[0] == 0.5


def test_probability_of_improvement_is_u_over_nx_ny_averaged_over_tasks():
    rng = np.random.default_rng(3)
    x = [rng.normal(0.3, 1, 7), rng.normal(1, 1, 5)]
    y = [rng.normal(0, 1, 6), rng.normal(1, 1, 4)]
    expected = np.mean(
        [
            scipy_stats.mannwhitneyu(a, b).statistic / (a.size * b.size)
            for a, b in zip(x, y, strict=True)
        ]
    )
    point, low, high = stats.probability_of_improvement_ci(x, y)
    assert point == pytest.approx(expected) and low < point < high
    with pytest.raises(ConfigError, match="same tasks"):
        stats.probability_of_improvement_ci(x, y[:1])


def test_performance_profile_steps_down_past_each_score():
    thresholds = [0.0, 0.2, 0.3, 0.5, 0.79, 0.8, 1.0]
    profile, low, high = stats.performance_profile_ci([[0.2, 0.8], [0.5]], thresholds)
    # Strictly above tau: a run scoring exactly tau no longer counts.
    np.testing.assert_allclose(profile, [1, 2 / 3, 2 / 3, 1 / 3, 1 / 3, 0, 0])
    assert np.all(low <= profile) and np.all(profile <= high)
    assert low[1] < high[1]  # 0.2 or 0.8 drawn twice moves the fraction above 0.2


def test_stratified_bootstrap_resamples_each_task_within_itself():
    # Constant but different scores per task: every stratified resample is the data itself,
    # whereas a bootstrap of the pooled runs would mix the tasks and give a wide interval.
    tasks = [[1.0, 1.0, 1.0], [5.0, 5.0, 5.0]]
    assert stats.iqm_ci(tasks) == (3.0, 3.0, 3.0)
    assert stats.optimality_gap_ci(tasks, gamma=4.0) == (1.5, 1.5, 1.5)
    profile, low, high = stats.performance_profile_ci(tasks, [0.0, 2.0, 6.0])
    np.testing.assert_array_equal(low, profile)
    np.testing.assert_array_equal(high, profile)
    _, pooled_low, pooled_high = stats.bootstrap_ci(np.concatenate(tasks))
    assert pooled_low < 3.0 < pooled_high


def test_a_task_with_one_run_is_held_fixed():
    # One run resamples only to itself; the other task varies.
    assert stats.iqm_ci([[3.0]]) == (3.0, 3.0, 3.0)
    # Shortfalls 1 | 1, 0: the second task resamples to (1, 1), (1, 0) or (0, 0), and the
    # single run's shortfall of 1 is in every resample.
    point, low, high = stats.optimality_gap_ci([[0.0], [0.0, 2.0]])
    assert point == pytest.approx(2 / 3)
    assert (low, high) == pytest.approx((1 / 3, 1.0))
    with pytest.raises(ConfigError, match="at least one run"):
        stats.iqm_ci([[1.0], []])


def test_intervals_are_reproducible_and_seeded():
    tasks = [np.arange(6.0), np.arange(4.0) ** 2]
    assert stats.iqm_ci(tasks) == stats.iqm_ci(tasks)
    assert stats.iqm_ci(tasks, seed=1) != stats.iqm_ci(tasks)
