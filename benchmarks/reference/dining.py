"""Plain-Python dining philosophers: the reference the JAX environment is tested against.

No JAX, no numpy: one table, lists and loops, written to read like the rules in
`alemlite/envs/dining/__init__.py`. It is also the peer engine timed by the
throughput benchmark, so it is kept straightforward rather than clever.

`DiningOracle(num_philosophers=5, ...)` takes the same option names as
`alemlite.make("dining", ...)`; `reset()` starts an episode and
`step(actions) -> (rewards, terminated, truncated)` plays one step with one
integer action per philosopher. State is readable as attributes
(`fork_holder`, `eating`, `meals`, ...) and `metrics()` gives the episode metrics.
"""

from __future__ import annotations

import random

WAIT, GRAB_LEFT, GRAB_RIGHT, RELEASE = 0, 1, 2, 3
NUM_MOVES = 4
FREE = -1


def right_fork(philosopher: int, num_philosophers: int) -> int:
    return (philosopher + 1) % num_philosophers


def held_forks(fork_holder: list[int], philosopher: int) -> int:
    """How many of its two forks `philosopher` holds."""
    num_philosophers = len(fork_holder)
    left = fork_holder[philosopher] == philosopher
    right = fork_holder[right_fork(philosopher, num_philosophers)] == philosopher
    return int(left) + int(right)


def move_mask(
    fork_holder: list[int], eating: list[bool], philosopher: int, sequential: bool
) -> list[bool]:
    """Legal moves: WAIT always; a grab by a HUNGRY philosopher of a free fork (sequential
    mode: or of one held by an EATING lower-id neighbour); RELEASE only when holding a fork."""
    num_philosophers = len(fork_holder)

    def grabbable(fork: int) -> bool:
        holder = fork_holder[fork]
        if holder == FREE:
            return True
        return sequential and eating[holder] and holder < philosopher

    hungry = not eating[philosopher]
    left_ok = grabbable(philosopher)
    right_ok = grabbable(right_fork(philosopher, num_philosophers))
    holds_any = held_forks(fork_holder, philosopher) > 0
    return [True, hungry and left_ok, hungry and right_ok, holds_any]


def table_step(
    fork_holder: list[int], eating: list[bool], moves: list[int], sequential: bool
) -> tuple[list[int], list[bool], list[bool], list[bool]]:
    """One step of the table rules on copies of `fork_holder` and `eating`.

    Returns `(fork_holder, eating, ate, acquired)`: who started a meal this step
    and whose grab took its fork.
    """
    if sequential:
        return _sequential_step(fork_holder, eating, moves)
    return _simultaneous_step(fork_holder, eating, moves)


def _target_fork(philosopher: int, move: int, num_philosophers: int) -> int:
    return philosopher if move == GRAB_LEFT else right_fork(philosopher, num_philosophers)


def _simultaneous_step(fork_holder, eating, moves):
    num_philosophers = len(fork_holder)
    forks = list(fork_holder)
    # 1. RELEASE by a HUNGRY philosopher frees the forks it held at the start.
    for philosopher in range(num_philosophers):
        if not eating[philosopher] and moves[philosopher] == RELEASE:
            for fork in range(num_philosophers):
                if forks[fork] == philosopher:
                    forks[fork] = FREE
    # 2. Grabs of forks free after (1); in id order, so the lowest id wins.
    acquired = [False] * num_philosophers
    for philosopher in range(num_philosophers):
        move = moves[philosopher]
        if eating[philosopher] or move not in (GRAB_LEFT, GRAB_RIGHT):
            continue
        fork = _target_fork(philosopher, move, num_philosophers)
        if forks[fork] == FREE:
            forks[fork] = philosopher
            acquired[philosopher] = True
    # 3. Philosophers EATING at the start put both forks down at the end.
    for fork in range(num_philosophers):
        if forks[fork] != FREE and eating[forks[fork]]:
            forks[fork] = FREE
    # 4. A HUNGRY philosopher now holding both forks starts a meal.
    ate = [not eating[p] and held_forks(forks, p) == 2 for p in range(num_philosophers)]
    return forks, ate, ate, acquired


def _sequential_step(fork_holder, eating, moves):
    num_philosophers = len(fork_holder)
    forks = list(fork_holder)
    eating_now = list(eating)
    ate = [False] * num_philosophers
    acquired = [False] * num_philosophers
    for philosopher in range(num_philosophers):
        move = moves[philosopher]
        if eating_now[philosopher]:
            # An EATING philosopher puts both forks down at its turn, whatever it chose.
            eating_now[philosopher] = False
            for fork in range(num_philosophers):
                if forks[fork] == philosopher:
                    forks[fork] = FREE
            continue
        if move == RELEASE:
            for fork in range(num_philosophers):
                if forks[fork] == philosopher:
                    forks[fork] = FREE
        elif move in (GRAB_LEFT, GRAB_RIGHT):
            fork = _target_fork(philosopher, move, num_philosophers)
            if forks[fork] == FREE:
                forks[fork] = philosopher
                acquired[philosopher] = True
        if held_forks(forks, philosopher) == 2:
            eating_now[philosopher] = True
            ate[philosopher] = True
    return forks, eating_now, ate, acquired


def is_deadlocked(fork_holder: list[int], eating: list[bool]) -> bool:
    """Every philosopher HUNGRY and holding exactly one fork."""
    return all(not eating[p] and held_forks(fork_holder, p) == 1 for p in range(len(fork_holder)))


def max_meals(num_philosophers: int, max_steps: int) -> int:
    """Best total meal count in `max_steps` simultaneous steps: the largest sum of per-step
    meal counts `m_s` with `m_1 = 0` and `2 (m_{s-1} + m_s) + m_{s+1} <= N` for every step
    (derivation in `alemlite/envs/dining/max_meals.py`)."""
    n = num_philosophers
    best = {(0, 0): 0}  # (m_{s-1}, m_s) -> most meals so far; no meals at step 1
    for _ in range(2, max_steps + 1):
        following = {}
        for (before, current), total in best.items():
            for after in range(n // 2 + 1):
                if 2 * (before + current) + after <= n and 2 * (current + after) <= n:
                    key = (current, after)
                    following[key] = max(following.get(key, 0), total + after)
        best = following
    return max(best.values())


def normalised_gini(values: list[float]) -> float:
    """Gini coefficient scaled to [0, 1] by its maximum (n - 1) / n; 0 when all are zero."""
    count, total = len(values), sum(values)
    if count < 2 or total == 0:
        return 0.0
    differences = sum(abs(a - b) for a in values for b in values)
    return differences / (2.0 * count * total) * count / (count - 1)


def jain_index(values: list[float]) -> float:
    """(sum x)^2 / (n sum x^2); 1 when all are zero."""
    squares = sum(value * value for value in values)
    if squares == 0:
        return 1.0
    return sum(values) ** 2 / (len(values) * squares)


class DiningOracle:
    """One dining table, stepped in plain Python."""

    def __init__(
        self,
        num_philosophers: int = 5,
        mode: str = "simultaneous",
        num_message_tokens: int = 0,
        reward: str = "shaped",
        max_steps: int = 30,
        deadlock_mode: str = "terminate",
        backoff_steps: int = 0,
        backoff_prob: float = 0.5,
        shared: bool = False,
        paper_meals_weight: float = 0.25,
        paper_safety_weight: float = 0.25,
        paper_fairness_weight: float = 0.25,
        paper_validity_weight: float = 0.25,
        deadlock_penalty: float = 1.0,
        starvation_penalty: float = 1.0,
        fairness_bonus: float = 0.5,
        seed: int = 0,
    ):
        self.num_philosophers = num_philosophers
        self.sequential = mode == "sequential"
        self.num_message_tokens = num_message_tokens
        self.reward = reward
        self.max_steps = max_steps
        self.release_on_deadlock = deadlock_mode == "release"
        self.backoff_steps = backoff_steps
        self.backoff_prob = backoff_prob
        self.shared = shared
        self.paper_weights = (
            paper_meals_weight,
            paper_safety_weight,
            paper_fairness_weight,
            paper_validity_weight,
        )
        self.deadlock_penalty = deadlock_penalty
        self.starvation_penalty = starvation_penalty
        self.fairness_bonus = fairness_bonus
        self.random = random.Random(seed)
        self.reset()

    @property
    def num_actions(self) -> int:
        return NUM_MOVES * (self.num_message_tokens + 1)

    def reset(self) -> None:
        n = self.num_philosophers
        self.fork_holder = [FREE] * n
        self.eating = [False] * n
        self.meals = [0] * n
        self.last_message = [0] * n
        self.step_count = 0
        self.deadlocked = False
        self.deadlock_step = -1
        self.deadlock_events = 0
        self.failed_grabs = [0] * n
        self.valid_actions = [0] * n
        self.hungry_streak = [0] * n
        self.longest_hungry_streak = [0] * n
        self.one_fork_streak = [0] * n

    def action_mask(self) -> list[list[bool]]:
        """`num_actions` flags per philosopher; every message token goes with a legal move."""
        return [
            move_mask(self.fork_holder, self.eating, p, self.sequential)
            * (self.num_message_tokens + 1)
            for p in range(self.num_philosophers)
        ]

    def step(self, actions: list[int]) -> tuple[list[float], bool, bool]:
        n = self.num_philosophers
        moves, tokens = [], []
        for p in range(n):
            action = actions[p]
            in_range = 0 <= action < self.num_actions
            moves.append(action % NUM_MOVES if in_range else WAIT)
            tokens.append(action // NUM_MOVES if in_range else 0)
            legal = move_mask(self.fork_holder, self.eating, p, self.sequential)[moves[p]]
            self.valid_actions[p] += int(in_range and legal)

        forks, eating, ate, acquired = table_step(
            self.fork_holder, self.eating, moves, self.sequential
        )
        for p in range(n):
            if moves[p] in (GRAB_LEFT, GRAB_RIGHT) and not acquired[p]:
                self.failed_grabs[p] += 1
            self.meals[p] += int(ate[p])
            self.hungry_streak[p] = 0 if ate[p] else self.hungry_streak[p] + 1
            self.longest_hungry_streak[p] = max(
                self.longest_hungry_streak[p], self.hungry_streak[p]
            )
            one_fork = not eating[p] and held_forks(forks, p) == 1
            self.one_fork_streak[p] = self.one_fork_streak[p] + 1 if one_fork else 0
        self.last_message = tokens
        self.step_count += 1

        if self.backoff_steps > 0:
            for p in range(n):
                timed_out = self.one_fork_streak[p] >= self.backoff_steps
                if timed_out and self.random.random() < self.backoff_prob:
                    forks = [FREE if holder == p else holder for holder in forks]
                    self.one_fork_streak[p] = 0

        deadlock_now = is_deadlocked(forks, eating)
        if deadlock_now:
            self.deadlock_events += 1
            if not self.deadlocked:
                self.deadlock_step = self.step_count
            self.deadlocked = True
            if self.release_on_deadlock:
                forks = [FREE] * n
                self.one_fork_streak = [0] * n
        self.fork_holder, self.eating = forks, eating

        terminated = deadlock_now and not self.release_on_deadlock
        truncated = self.step_count >= self.max_steps and not terminated
        rewards = self._rewards(ate, deadlock_now, terminated or truncated)
        return rewards, terminated, truncated

    def _rewards(self, ate: list[bool], deadlock_now: bool, done: bool) -> list[float]:
        n = self.num_philosophers
        if self.reward == "paper":
            score = self.paper_score() if done else 0.0
            return [score] * n
        rewards = []
        fairness = self.fairness()
        for p in range(n):
            reward = float(ate[p])
            if deadlock_now:
                reward -= self.deadlock_penalty
            if done:
                if self.meals[p] == 0:
                    reward -= self.starvation_penalty
                reward += self.fairness_bonus * fairness * self.meals[p]
            rewards.append(reward)
        if self.shared:
            rewards = [sum(rewards) / n] * n
        return rewards

    def fairness(self) -> float:
        return 1.0 - normalised_gini(self.meals)

    def valid_action_rate(self) -> float:
        if self.step_count == 0:
            return 1.0
        return sum(self.valid_actions) / (self.num_philosophers * self.step_count)

    def max_meals(self) -> int:
        return max_meals(self.num_philosophers, self.max_steps)

    def paper_score(self) -> float:
        w_meals, w_safe, w_fair, w_valid = self.paper_weights
        best = self.max_meals()
        meal_term = sum(self.meals) / best if best > 0 else 0.0
        return (
            w_meals * meal_term
            + w_safe * float(not self.deadlocked)
            + w_fair * self.fairness()
            + w_valid * self.valid_action_rate()
        )

    def metrics(self) -> dict[str, float]:
        total = sum(self.meals)
        return {
            "meals_total": float(total),
            "throughput": total / max(self.step_count, 1),
            "fairness": self.fairness(),
            "jain_index": jain_index(self.meals),
            "starvation": float(sum(meals == 0 for meals in self.meals)),
            "fed_share": sum(meals > 0 for meals in self.meals) / len(self.meals),
            "deadlock": float(self.deadlocked),
            "deadlock_step": float(self.deadlock_step),
            "deadlock_events": float(self.deadlock_events),
            "failed_grabs": float(sum(self.failed_grabs)),
            "longest_hungry_streak": float(max(self.longest_hungry_streak)),
            "valid_action_rate": self.valid_action_rate(),
        }
