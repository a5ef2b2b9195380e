"""`max_meals`: the most meals a table of N can eat in T steps (simultaneous mode).

Derivation. Let `m_s` be the number of meals started at step s (the step in
which a philosopher takes its second fork). Nobody eats at step 1 (one grab per
step), so `m_1 = 0`. During step s three groups of philosophers tie up
pairwise different forks: those that ate at s - 1 hold both forks until the end
of step s (2 each), those that eat at s hold both at its end (2 each), and
those that will eat at s + 1 must hold their first fork at its end (1 each).
Hence, for every s,

    2 (m_{s-1} + m_s) + m_{s+1} <= N,

(which also gives `m_{s-1} + m_s <= floor(N / 2)`), and `max_meals(N, T)` is
the largest `sum_s m_s` over sequences obeying these budgets; a dynamic
programme over `(m_{s-1}, m_s)` finds it. The bound is necessary for every
play, so no episode exceeds it; exhaustive search over all joint actions shows
it is reached exactly for N <= 6 and T <= 16 (`tests/test_dining_max_meals.py`).
For T >= 24 the sequence is periodic with period 6 (checked for N <= 40), so a
table of T < 30 plus a per-period increment covers every horizon.

Sequential mode lets a fork change hands within one step, so this budget does
not bound it; the `paper` reward is therefore offered for simultaneous mode only.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

PERIOD = 6
PERIODIC_FROM = 24
TABLE_STEPS = PERIODIC_FROM + PERIOD


def meal_budget(num_philosophers: int, num_steps: int) -> list[int]:
    """`max_meals(num_philosophers, T)` for T = 0 .. num_steps - 1, by the dynamic programme."""
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


def max_meals_table(max_philosophers: int) -> tuple[np.ndarray, np.ndarray]:
    """`(table, per_period)`: `table[N, T]` for T < TABLE_STEPS and the meals per period."""
    checked_steps = TABLE_STEPS + 2 * PERIOD
    table = np.zeros((max_philosophers + 1, checked_steps), np.int32)
    for num_philosophers in range(2, max_philosophers + 1):
        table[num_philosophers] = meal_budget(num_philosophers, checked_steps)
    increments = table[:, PERIODIC_FROM + PERIOD :] - table[:, PERIODIC_FROM:-PERIOD]
    per_period = increments[:, 0]
    if not np.all(increments == per_period[:, None]):
        raise RuntimeError("max_meals is not periodic from PERIODIC_FROM; raise PERIODIC_FROM")
    return table[:, :TABLE_STEPS], per_period


def lookup_max_meals(
    table: jax.Array, per_period: jax.Array, num_philosophers: jax.Array, max_steps: jax.Array
) -> jax.Array:
    """`max_meals(N, T)` from the table, extended periodically beyond it."""
    beyond = jnp.maximum(max_steps - PERIODIC_FROM, 0)
    column = jnp.where(max_steps < PERIODIC_FROM, max_steps, PERIODIC_FROM + beyond % PERIOD)
    return table[num_philosophers, column] + per_period[num_philosophers] * (beyond // PERIOD)
