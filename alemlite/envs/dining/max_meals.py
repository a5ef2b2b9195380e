"""`max_meals`: the most meals a table of N can eat in T steps (simultaneous mode).

Budget. Let `m_s` be the number of meals started at step s (the step in which a
philosopher takes its second fork). Nobody eats at step 1 (one grab per step),
so `m_1 = 0`. During step s three groups of philosophers tie up pairwise
different forks: those that ate at s - 1 hold both forks until the end of step
s (2 each), those that eat at s hold both at its end (2 each), and those that
will eat at s + 1 must hold their first fork at its end (1 each). Hence

    2 (m_{s-1} + m_s) + m_{s+1} <= N      for every s,

with no meals after the horizon (`m_{T+1} = m_{T+2} = 0`), and `max_meals(N, T)`
is the largest `sum_s m_s` over sequences obeying these budgets. The bound is
necessary for every play, so no episode exceeds it; exhaustive search over all
joint actions shows it is reached exactly for small N and T
(`tests/test_dining_max_meals.py`).

Greedy from the last step. Read time backwards, `c_k = m_{T+1-k}`, with
`c_{-1} = c_0 = 0` for the two steps after the horizon. The budgets become

    c_k <= g(c_{k-2}) - c_{k-1},   g(x) = floor((N - x) / 2),   k = 1 .. T - 1,

(the budgets at steps 1 and 2, where `m_1 = 0`, follow from these), and the
greedy choice `b_k = g(b_{k-2}) - b_{k-1}` (never negative) maximises every
partial sum `c_1 + ... + c_m` at once, so `max_meals(N, T) = b_1 + ... + b_{T-1}`.
Proof: let `p_0(x, y) = y` and `p_{n+1}(x, y) = y + p_n(y, g(x) - y)`. By
induction on n, each `p_n` is nondecreasing in y, nonincreasing in x, and
`p_n(x + 1, y - 1) >= p_n(x, y) - 1` (at n + 1 the first follows from the
third at n, the other two from the first two at n, as g is nonincreasing and
drops by at most 1 per unit). For any sequence within budget,
`c_1 + ... + c_m = c_1 + ... + c_{j-1} + p_n(c_{j-1}, c_j)` at j = m, n = 0;
bounding `c_j` by its budget, monotonicity in y bounds this by the same form
at j - 1, n + 1, and so on down to `p_m(c_{-1}, c_0) = p_m(0, 0)`. The greedy
sequence meets every bound with equality, so it reaches `p_m(0, 0)`.

Periodic optimum. Deviations of `b` from N/5 shrink by about 1/sqrt(2) per
step (the roots of the linearised recursion), and for N = 5q + r the sequence
settles on the cycle (q), (q), (q + 1, q, q), (q + 1, q), (q + 1, q + 1, q) for
r = 0 .. 4: period 6 in all cases, `6 q + (0, 0, 2, 3, 4)[r]` meals per
period. The transient grows like log N: for every N up to MAX_PHILOSOPHERS,
`b` is periodic from step PERIODIC_FROM on (checked over all of them in the
tests). So a table with one row per table size and the partial sums
`b_1 + ... + b_m` for m <= PERIODIC_FROM + PERIOD gives `max_meals` for every T;
it takes TABLE_COLUMNS array operations to build.

Sequential mode lets a fork change hands within one step, so this budget does
not bound it; the `paper` reward is therefore offered for simultaneous mode only.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import ArrayLike

from alemlite.core.errors import require

PERIOD = 6
MAX_PHILOSOPHERS = 100_000  # the tables whose transient is checked to end by PERIODIC_FROM
PERIODIC_FROM = 36
TABLE_COLUMNS = PERIODIC_FROM + PERIOD + 1


def require_in_range(name: str, value: int) -> None:
    """ConfigError unless tables of `value` philosophers lie where `max_meals` is exact."""
    require(
        value <= MAX_PHILOSOPHERS,
        f"{name}={value} must be at most {MAX_PHILOSOPHERS} for max_meals (the budget the "
        "paper reward divides by, checked up to there); use reward='shaped' for larger tables",
    )


def meals_by_step(num_philosophers: ArrayLike, num_steps: int) -> np.ndarray:
    """The greedy budgets `b_1 .. b_num_steps` (last axis), counted back from the last step."""
    n = np.asarray(num_philosophers, np.int64)
    before = last = np.zeros_like(n)  # b_{k-2}, b_{k-1}: no meals after the horizon
    meals = np.empty((*n.shape, num_steps), np.int64)
    for step in range(num_steps):
        before, last = last, (n - before) // 2 - last
        meals[..., step] = last
    return meals


def max_meals_table(max_philosophers: int) -> np.ndarray:
    """`table[N, m] = b_1 + ... + b_m`, the most meals in T = m + 1 steps, for m < TABLE_COLUMNS."""
    require_in_range("max_philosophers", max_philosophers)
    meals = meals_by_step(np.arange(max_philosophers + 1), TABLE_COLUMNS - 1)
    totals = np.concatenate([np.zeros((max_philosophers + 1, 1), np.int64), meals], axis=1)
    return np.cumsum(totals, axis=1).astype(np.int32)


def lookup_max_meals(
    table: ArrayLike, num_philosophers: ArrayLike, max_steps: ArrayLike
) -> jax.Array:
    """`max_meals(N, T)` (int32, broadcast over N and T) from the table, extended periodically."""
    table = jnp.asarray(table)
    n, steps = jnp.broadcast_arrays(
        jnp.asarray(num_philosophers, jnp.int32), jnp.asarray(max_steps, jnp.int32)
    )
    meal_steps = jnp.maximum(steps - 1, 0)  # steps 2 .. T can start meals
    beyond = jnp.maximum(meal_steps - PERIODIC_FROM, 0)
    column = jnp.where(beyond > 0, PERIODIC_FROM + beyond % PERIOD, meal_steps)
    per_period = table[n, PERIODIC_FROM + PERIOD] - table[n, PERIODIC_FROM]
    return table[n, column] + per_period * (beyond // PERIOD)
