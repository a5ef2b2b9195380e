"""`max_meals` is the best meal count reachable: exhaustive search on small tables."""

from __future__ import annotations

import itertools

import jax.numpy as jnp
import pytest

import alemlite
from alemlite.envs.dining.max_meals import lookup_max_meals, max_meals_table
from tests.oracles.dining import (
    FREE,
    GRAB_LEFT,
    GRAB_RIGHT,
    RELEASE,
    WAIT,
    held_forks,
    is_deadlocked,
    max_meals,
    table_step,
)


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


@pytest.mark.parametrize(("num_philosophers", "max_steps"), [(2, 12), (3, 12), (4, 10), (5, 5)])
def test_formula_equals_exhaustive_search(num_philosophers, max_steps):
    searched = most_meals_by_search(num_philosophers, max_steps)
    formula = [max_meals(num_philosophers, steps) for steps in range(1, max_steps + 1)]
    assert formula == searched


def test_env_lookup_equals_the_dynamic_programme_beyond_the_table():
    table, per_period = max_meals_table(20)
    for num_philosophers in (2, 3, 5, 7, 12, 20):
        for max_steps in (0, 1, 2, 5, 23, 24, 29, 30, 31, 47, 100):
            got = lookup_max_meals(
                jnp.asarray(table), jnp.asarray(per_period), num_philosophers, max_steps
            )
            assert int(got) == max_meals(num_philosophers, max_steps), (num_philosophers, max_steps)


def test_known_values():
    env = alemlite.make("dining", num_philosophers=5, max_philosophers=15)
    # One meal per step from step 2 on at five seats; two of them at step 2.
    assert int(env.max_meals(env.default_params)) == 29
    assert int(env.max_meals(env.make_params(num_philosophers=2))) == 10  # every 3rd step
    assert int(env.max_meals(env.make_params(num_philosophers=10))) == 59
    assert int(env.max_meals(env.make_params(max_steps=1))) == 0
