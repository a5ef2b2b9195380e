"""`max_meals` is the best meal count reachable: exhaustive search on small tables, the budget
enumerated, the dynamic programme it replaced, and its periodic extension up to the limit. The
`shaped` return's ceiling built on it is the best return an exhaustive search finds."""

from __future__ import annotations

import itertools

import jax
import numpy as np
import pytest

import alemlite
from alemlite.core import ConfigError
from alemlite.envs.dining import DiningConfig
from alemlite.envs.dining.max_meals import (
    MAX_PHILOSOPHERS,
    PERIOD,
    PERIODIC_FROM,
    lookup_max_meals,
    max_meals_table,
    meals_by_step,
)
from alemlite.envs.dining.rewards import shaped_ceiling
from alemlite.metrics import fairness
from benchmarks.reference.dining import (
    FREE,
    GRAB_LEFT,
    GRAB_RIGHT,
    RELEASE,
    WAIT,
    held_forks,
    is_deadlocked,
    table_step,
)
from benchmarks.reference.dining import max_meals as oracle_max_meals


def most_meals_by_search(num_philosophers: int, max_steps: int) -> list[int]:
    """Best total meals after each step over every joint action sequence (simultaneous mode).

    States are fork-holder tuples (EATING is exactly "holds both forks" after a step);
    an EATING philosopher's move is ignored, so it only WAITs here; deadlock ends play.
    """
    n = num_philosophers
    best = {(FREE,) * n: 0}
    ended_best, totals = 0, []
    for _ in range(max_steps):
        following: dict[tuple[int, ...], int] = {}
        for forks, meals in best.items():
            eating = [held_forks(list(forks), p) == 2 for p in range(n)]
            choices = [
                [WAIT] if eating[p] else [WAIT, GRAB_LEFT, GRAB_RIGHT, RELEASE] for p in range(n)
            ]
            for moves in itertools.product(*choices):
                after, now_eating, ate, _ = table_step(list(forks), eating, list(moves), False)
                total = meals + sum(ate)
                if is_deadlocked(after, now_eating):
                    ended_best = max(ended_best, total)
                    continue
                key = tuple(after)
                following[key] = max(following.get(key, 0), total)
        best = following
        totals.append(max([ended_best, *best.values()]))
    return totals


def most_meals_within_budget(num_philosophers: int, max_steps: int) -> list[int]:
    """Largest `m_2 + ... + m_T` for T = 0 .. max_steps over every meal sequence obeying
    `2 (m_{s-1} + m_s) + m_{s+1} <= N` with `m_0 = m_1 = 0` and no meals after step T."""
    n = num_philosophers
    best = [0] * (max_steps + 1)

    def extend(meals: list[int]) -> None:  # meals = [m_0, m_1, ..., m_s]
        horizon = len(meals) - 1
        if 2 * (meals[-2] + meals[-1]) <= n:  # the budgets of steps T and T + 1 when T = s
            best[horizon] = max(best[horizon], sum(meals))
        if horizon == max_steps:
            return
        for following in range(n - 2 * (meals[-2] + meals[-1]) + 1):
            extend([*meals, following])

    extend([0, 0])
    return best


def dynamic_programme(num_philosophers: int, num_steps: int) -> list[int]:
    """`max_meals(N, T)` for T = 0 .. num_steps - 1 by the dynamic programme over
    `(m_{s-1}, m_s)` that computed the table before the greedy form (O(N^3) per step)."""
    most_per_step = num_philosophers // 2
    meals = np.arange(most_per_step + 1)
    before, current, after = np.ix_(meals, meals, meals)
    allowed = (2 * (before + current) + after <= num_philosophers) & (
        current + after <= most_per_step
    )
    unreachable = -(10**9)
    best = np.full((most_per_step + 1,) * 2, unreachable)  # by (m_{s-1}, m_s)
    best[0, 0] = 0  # before step 1 and at step 1: no meals
    totals = [0, 0][:num_steps]
    for _ in range(2, num_steps):
        best = np.where(allowed, best[:, :, None] + after, unreachable).max(axis=0)
        totals.append(int(best.max()))
    return totals


def meal_tallies_by_search(num_philosophers: int, max_steps: int) -> set[tuple[int, ...]]:
    """Every philosopher's meals at the horizon, over every joint action sequence that does
    not deadlock (as in `most_meals_by_search`, with each seat's count kept)."""
    n = num_philosophers
    states = {((FREE,) * n, (0,) * n)}
    for _ in range(max_steps):
        following = set()
        for forks, meals in states:
            eating = [held_forks(list(forks), p) == 2 for p in range(n)]
            choices = [
                [WAIT] if eating[p] else [WAIT, GRAB_LEFT, GRAB_RIGHT, RELEASE] for p in range(n)
            ]
            for moves in itertools.product(*choices):
                after, now_eating, ate, _ = table_step(list(forks), eating, list(moves), False)
                if not is_deadlocked(after, now_eating):
                    tally = tuple(m + a for m, a in zip(meals, ate, strict=True))
                    following.add((tuple(after), tally))
        states = following
    return {meals for _, meals in states}


@pytest.fixture(scope="module")
def table() -> np.ndarray:
    return max_meals_table(MAX_PHILOSOPHERS)  # every table size the limit allows


_lookup = jax.jit(lookup_max_meals)  # one compilation per shape, not one per operation


def max_meals(table: np.ndarray, num_philosophers, max_steps) -> np.ndarray:
    return np.asarray(_lookup(table, num_philosophers, max_steps))


@pytest.mark.parametrize(("num_philosophers", "max_steps"), [(2, 12), (3, 12), (4, 10), (5, 5)])
def test_max_meals_equals_exhaustive_search(table, num_philosophers, max_steps):
    searched = most_meals_by_search(num_philosophers, max_steps)
    horizons = np.arange(1, max_steps + 1)
    assert [oracle_max_meals(num_philosophers, int(steps)) for steps in horizons] == searched
    assert max_meals(table, num_philosophers, horizons).tolist() == searched


def test_max_meals_is_the_best_sequence_within_budget(table):
    sizes = {2: 16, 3: 14, 4: 12, 5: 11, 6: 10, 7: 10, 8: 9, 9: 9, 10: 8, 11: 8, 12: 8}
    greedy = max_meals(table, np.array(list(sizes))[:, None], np.arange(17)[None, :])
    for row, (num_philosophers, max_steps) in enumerate(sizes.items()):
        enumerated = most_meals_within_budget(num_philosophers, max_steps)
        assert greedy[row, : max_steps + 1].tolist() == enumerated, num_philosophers


def test_max_meals_equals_the_dynamic_programme(table):
    sizes, horizons = np.arange(2, 41), np.arange(80)  # past PERIODIC_FROM: the extension too
    got = max_meals(table, sizes[:, None], horizons[None, :])
    for row, num_philosophers in enumerate(sizes):
        assert got[row].tolist() == dynamic_programme(num_philosophers, len(horizons))


def test_budgets_are_periodic_from_periodic_from_up_to_the_limit():
    n = np.arange(2, MAX_PHILOSOPHERS + 1)
    meals = meals_by_step(n, PERIODIC_FROM + PERIOD + 1)  # column k - 1: b_k

    def repeats_from(step: int) -> np.ndarray:
        # (b_k, b_{k+1}) determines the rest, so a repeat of that pair makes b periodic from k.
        pair = meals[:, step - 1 : step + 1]
        return np.all(pair == meals[:, step - 1 + PERIOD : step + 1 + PERIOD], axis=1)

    assert repeats_from(PERIODIC_FROM).all()
    assert not repeats_from(PERIODIC_FROM - 1).all()  # the constant is as small as it can be
    # The cycles of the docstring: values q and q + 1 summing to 6 q + (0, 0, 2, 3, 4)[r].
    cycle = meals[:, PERIODIC_FROM - 1 : PERIODIC_FROM - 1 + PERIOD]
    q, r = n // 5, n % 5
    assert np.all((cycle == q[:, None]) | (cycle == q[:, None] + 1))
    assert np.array_equal(cycle.sum(axis=1), 6 * q + np.array([0, 0, 2, 3, 4])[r])


def test_periodic_extension_equals_the_direct_sum(table):
    sizes = np.array([2, 3, 5, 7, 40, 351, MAX_PHILOSOPHERS - 1, MAX_PHILOSOPHERS])
    horizons = np.arange(1, 151)
    direct = np.cumsum(meals_by_step(sizes, len(horizons) - 1), axis=1)
    expected = np.concatenate([np.zeros((len(sizes), 1), int), direct], axis=1)  # T = 1: none
    assert np.array_equal(max_meals(table, sizes[:, None], horizons[None, :]), expected)


def test_known_values():
    env = alemlite.make("dining", num_philosophers=5, max_philosophers=15)
    # One meal per step from step 2 on at five seats; two of them at step 2.
    assert int(env.max_meals(env.default_params)) == 29
    assert int(env.max_meals(env.make_params(num_philosophers=2))) == 10  # every 3rd step
    assert int(env.max_meals(env.make_params(num_philosophers=10))) == 59
    assert int(env.max_meals(env.make_params(max_steps=1))) == 0
    batch = env.make_params(num_philosophers=np.array([5, 10, 15]), max_steps=np.array([30, 30, 7]))
    assert np.asarray(env.max_meals(batch)).tolist() == [29, 59, 20]


@pytest.mark.parametrize(("num_philosophers", "max_steps"), [(3, 8), (4, 6)])
def test_the_shaped_ceiling_is_the_best_return_a_search_finds(num_philosophers, max_steps):
    env = alemlite.make("dining", num_philosophers=num_philosophers, max_steps=max_steps)
    params = env.default_params
    seats = np.ones(num_philosophers, bool)

    def mean_return(meals: tuple[int, ...]) -> float:  # shaped_rewards summed over the episode
        share = float(fairness(np.array(meals, np.float32), seats))
        earned = sum(meals) * (1 + float(params.fairness_bonus) * share)
        starved = float(params.starvation_penalty) * meals.count(0)
        return (earned - starved) / num_philosophers

    best = max(map(mean_return, meal_tallies_by_search(num_philosophers, max_steps)))
    ceiling = shaped_ceiling(params, int(env.max_meals(params)))
    assert ceiling == pytest.approx(best, abs=1e-6)


def test_paper_tables_beyond_the_limit_are_refused(table):
    too_many = MAX_PHILOSOPHERS + 1
    with pytest.raises(ConfigError, match=rf"^num_philosophers={too_many} must be at most "):
        DiningConfig(num_philosophers=too_many, reward="paper")
    with pytest.raises(ConfigError, match=rf"^max_philosophers={too_many} must be at most "):
        DiningConfig(num_philosophers=5, max_philosophers=too_many, reward="paper")
    env = alemlite.make("dining", num_philosophers=MAX_PHILOSOPHERS, reward="paper")
    assert int(env.max_meals(env.default_params)) == max_meals(table, MAX_PHILOSOPHERS, 30)


def test_shaped_tables_need_no_budget():
    # `shaped` never divides by max_meals, so a table past the limit still builds.
    too_many = MAX_PHILOSOPHERS + 1
    env = alemlite.make("dining", num_philosophers=too_many)
    assert env.num_agents == too_many
    with pytest.raises(ConfigError, match=rf"^max_philosophers={too_many} must be at most "):
        env.max_meals(env.default_params)


def test_tables_whose_meal_count_could_overflow_are_refused():
    with pytest.raises(ConfigError, match=r"max_steps=50000 at num_philosophers=100000"):
        alemlite.make("dining", num_philosophers=100_000, max_steps=50_000)
