"""The matrix games against a plain-Python oracle written from the package docstring.

The oracle knows the classic 2-player matrices and the N-player rules, and finds the optimal
joint actions and pure equilibria by brute force; random action sequences (with forbidden and
out-of-range ids, and message tokens) are played through both, round by round.
"""

import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import alemlite

GAMES = ("climbing", "penalty", "stag_hunt", "prisoners_dilemma")
LETTERS = 3  # every game's actions are padded to PLAY_A, PLAY_B, PLAY_C


def classic(game: str, k: float) -> list[list[float]]:
    """The row player's payoffs of the classic 2-player game."""
    return {
        "climbing": [[11, -30, 0], [-30, 7, 6], [0, 0, 5]],
        "penalty": [[10, 0, k], [0, 2, 0], [k, 0, 10]],
        "stag_hunt": [[4, 0], [3, 3]],
        "prisoners_dilemma": [[3, 0], [5, 1]],
    }[game]


def payoffs(game: str, k: float, moves: tuple[int, ...]) -> list[float]:
    matrix, n = classic(game, k), len(moves)
    if game in ("climbing", "penalty"):
        pairs = list(itertools.combinations(range(n), 2))
        team = sum(matrix[moves[i]][moves[j]] for i, j in pairs) / len(pairs)
        return [team] * n
    if game == "prisoners_dilemma":
        return [
            sum(matrix[moves[i]][moves[j]] for j in range(n) if j != i) / (n - 1) for i in range(n)
        ]
    # stag hunt: the others count as a stag partner only if all of them hunt stag
    return [
        matrix[moves[i]][0 if all(moves[j] == 0 for j in range(n) if j != i) else 1]
        for i in range(n)
    ]


class Oracle:
    """One repeated game, played round by round in plain Python."""

    def __init__(self, game: str, n: int, tokens: int, rounds: int, k: float, reward: str):
        self.game, self.n, self.tokens, self.rounds, self.k = game, n, tokens, rounds, k
        self.num_moves = len(classic(game, k))
        joints = list(itertools.product(range(self.num_moves), repeat=n))
        table = {joint: payoffs(game, k, joint) for joint in joints}
        best = max(sum(p) for p in table.values())
        self.optimal = {joint for joint, p in table.items() if sum(p) == pytest.approx(best)}
        self.nash = {
            joint
            for joint, p in table.items()
            if all(
                table[(*joint[:i], m, *joint[i + 1 :])][i] <= p[i] + 1e-9
                for i in range(n)
                for m in range(self.num_moves)
            )
        }
        self.bound = max(abs(x) for p in table.values() for x in p)
        self.scale = 1 / self.bound if reward == "normalised" else 1.0
        self.table = table
        self.step_count = 0
        self.last_moves = [None] * n
        self.last_tokens = [0] * n
        self.last_payoffs = [0.0] * n
        self.totals = [0.0] * n
        self.optimal_rounds = self.split_rounds = self.equilibrium_rounds = 0
        self.move_counts = [0] * LETTERS
        self.valid = 0

    def step(self, actions: list[int]):
        moves, tokens = [], []
        for action in actions:
            legal = 0 <= action < LETTERS * (self.tokens + 1) and action % 3 < self.num_moves
            self.valid += legal
            moves.append(action % 3 if legal else 0)
            tokens.append(action // 3 if legal else 0)
        joint = tuple(moves)
        paid = self.table[joint]
        self.step_count += 1
        self.last_moves, self.last_tokens, self.last_payoffs = moves, tokens, paid
        self.totals = [a + b for a, b in zip(self.totals, paid, strict=True)]
        self.optimal_rounds += joint in self.optimal
        self.split_rounds += len(set(moves)) > 1
        self.equilibrium_rounds += joint in self.nash and joint not in self.optimal
        for move in moves:
            self.move_counts[move] += 1
        return [p * self.scale for p in paid], self.step_count >= self.rounds

    def observations(self) -> list[list[float]]:
        shared = [(self.rounds - self.step_count) / self.rounds]
        shared += [float(g == self.game) for g in GAMES]
        for move in self.last_moves:
            shared += [float(move == m) for m in range(LETTERS)]
        if self.tokens:
            for token in self.last_tokens:
                shared += [float(token == t) for t in range(self.tokens + 1)]
        return [
            [float(seat == i) for i in range(self.n)]
            + [self.last_payoffs[seat] / self.bound]
            + shared
            for seat in range(self.n)
        ]

    def metrics(self) -> dict[str, float]:
        rounds, moves = self.step_count, self.step_count * self.n
        return {
            "mean_payoff": sum(self.totals) / moves,
            "optimal_joint_action_rate": self.optimal_rounds / rounds,
            "miscoordination_rate": self.split_rounds / rounds,
            "suboptimal_equilibrium_rate": self.equilibrium_rounds / rounds,
            "cooperation_rate": self.move_counts[0] / moves,  # move 0 cooperates in every game
            "play_a_rate": self.move_counts[0] / moves,
            "play_b_rate": self.move_counts[1] / moves,
            "play_c_rate": self.move_counts[2] / moves,
            "valid_action_rate": self.valid / moves,
        }


ROUNDS = 6
# (num_agents, message tokens): one compiled program each, shared by every game.
SHAPES = ((2, 0), (3, 2))


@pytest.fixture(scope="module", params=SHAPES, ids=lambda shape: f"N{shape[0]}-C{shape[1]}")
def played(request):
    """`play(params, actions)`: every round's obs, reward, done and metrics, from one jit."""
    n, tokens = request.param
    env = alemlite.make("matrix", num_agents=n, num_message_tokens=tokens, max_steps=ROUNDS)

    @jax.jit
    def play(params, actions):
        obs, state = env.reset(jax.random.PRNGKey(0), params)

        def one_round(state, round_actions):
            obs, state, reward, done, info = env.step(None, state, round_actions, params)
            return state, (obs, reward, done, info, env.episode_metrics(state, params))

        return obs, jax.lax.scan(one_round, state, actions)[1]

    return env, play


@pytest.mark.parametrize("game", GAMES)
@pytest.mark.parametrize("reward", ["payoff", "normalised"])
def test_random_play_matches_the_oracle(played, game, reward):
    env, play = played
    n, tokens = env.num_agents, env.config.num_message_tokens
    k = -25.0
    oracle = Oracle(game, n, tokens, ROUNDS, k, reward)
    params = env.make_params(game=game, penalty=k, reward=reward)
    rng = np.random.default_rng(sum(map(ord, game + reward)) + n)
    # Mostly legal actions, some forbidden (PLAY_C of a 2-move game) or out of range.
    actions = rng.integers(-1, env.num_actions + 1, size=(ROUNDS, n))
    first_obs, (obs, reward_seq, done, info, metrics) = jax.device_get(
        play(params, jnp.asarray(actions, jnp.int32))
    )
    np.testing.assert_allclose(first_obs, oracle.observations(), atol=1e-6)
    for t in range(ROUNDS):
        expected_reward, expected_done = oracle.step(actions[t].tolist())
        np.testing.assert_allclose(reward_seq[t], expected_reward, rtol=1e-6, atol=1e-6)
        assert done[t] == expected_done == info["truncated"][t]
        assert not info["terminated"][t]
        np.testing.assert_allclose(obs[t], oracle.observations(), atol=1e-6)
        for name, value in oracle.metrics().items():
            assert metrics[name][t] == pytest.approx(value, abs=1e-5), (name, t)
        np.testing.assert_allclose(
            metrics["payoff"][t], [total / (t + 1) for total in oracle.totals], rtol=1e-5
        )


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("game", GAMES)
def test_optimal_and_equilibrium_sets_match_brute_force(game, n):
    env = alemlite.make("matrix", num_agents=n, game=game)
    params = jax.device_get(env.default_params)
    oracle = Oracle(game, n, 0, ROUNDS, -10.0, "payoff")
    joints = list(itertools.product(range(LETTERS), repeat=n))
    assert {j for j, flag in zip(joints, params.optimal, strict=True) if flag} == oracle.optimal
    assert {j for j, flag in zip(joints, params.nash, strict=True) if flag} == oracle.nash
    assert tuple(params.optimal_joint.tolist()) in oracle.optimal
    assert float(params.payoff_bound) == pytest.approx(oracle.bound)
