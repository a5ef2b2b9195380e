"""The four stage games, their N-player forms, and what each payoff table implies.

Everything here runs on the host, once per params: a game and a player count give a payoff
table over every joint action (`payoff_table`), from which `analyse` reads the welfare-optimal
joint actions, the pure Nash equilibria and the optimal joint action the `optimal` policy
plays; `safe_move` reads the game's safe (maximin) move from its 2-player matrix.

Moves are padded to `MAX_MOVES`: a joint action is one row of a `(MAX_MOVES ** N, N)` table,
row index `sum_i move_i * MAX_MOVES ** (N - 1 - i)` (player 0 most significant, the order of
`itertools.product`). Rows holding a move the game does not have are illegal: payoff 0, never
optimal, never an equilibrium.

N-player forms, each equal to the classic 2-player game at N = 2 (M is the 2-player matrix of
the row player's payoffs, indexed `M[own move, other move]`):
- `pairwise_common` (climbing, penalty): one team payoff for everyone, the mean over every
  pair of players i < j of `M[move_i, move_j]` (the lower seat is the row; the climbing
  matrix is not symmetric). All playing the optimal move keeps the top entry; any player off
  it costs the pairs it is in, so relative overgeneralisation and miscoordination carry over.
- `pairwise` (prisoner's dilemma): a round robin; player i gets the mean over the other
  players j of `M[move_i, move_j]`. Defection still dominates and all-cooperate still beats
  all-defect for everyone (an N-person dilemma in Schelling's sense).
- `unanimous` (stag hunt): player i gets `M[move_i, STAG]` if every other player hunts stag,
  else `M[move_i, HARE]`: the stag needs the whole team, the hare is caught alone.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

MAX_MOVES = 3
MOVE_NAMES = ("PLAY_A", "PLAY_B", "PLAY_C")
_TOLERANCE = 1e-9  # payoffs of pairwise means are sums of a few integers over N - 1


@dataclass(frozen=True)
class Game:
    """A symmetric-rule stage game: a 2-player matrix and how N players are paid from it."""

    name: str
    title: str
    moves: tuple[str, ...]
    """What each move means (the actions are named neutrally, PLAY_A, ...)."""
    matrix: Callable[[float], np.ndarray]
    """`penalty -> M`, the row player's 2-player payoffs `M[own move, other move]`."""
    form: str
    """`pairwise_common`, `pairwise` or `unanimous` (see the module docstring)."""
    cooperate: int
    """The move counted by `cooperation_rate`: the one the optimal outcome needs trust for."""

    @property
    def common(self) -> bool:
        """Whether every player gets the same (team) payoff."""
        return self.form == "pairwise_common"

    @property
    def num_moves(self) -> int:
        return len(self.moves)


def _climbing(penalty: float) -> np.ndarray:
    return np.array([[11.0, -30.0, 0.0], [-30.0, 7.0, 6.0], [0.0, 0.0, 5.0]])


def _penalty(penalty: float) -> np.ndarray:
    return np.array([[10.0, 0.0, penalty], [0.0, 2.0, 0.0], [penalty, 0.0, 10.0]])


def _stag_hunt(penalty: float) -> np.ndarray:
    return np.array([[4.0, 0.0], [3.0, 3.0]])


def _prisoners_dilemma(penalty: float) -> np.ndarray:
    # Axelrod's R = 3, S = 0, T = 5, P = 1.
    return np.array([[3.0, 0.0], [5.0, 1.0]])


GAMES: dict[str, Game] = {
    game.name: game
    for game in (
        Game("climbing", "the climbing game", ("a", "b", "c"), _climbing, "pairwise_common", 0),
        Game("penalty", "the penalty game", ("a", "b", "c"), _penalty, "pairwise_common", 0),
        Game("stag_hunt", "the stag hunt", ("stag", "hare"), _stag_hunt, "unanimous", 0),
        Game(
            "prisoners_dilemma",
            "the prisoner's dilemma",
            ("cooperate", "defect"),
            _prisoners_dilemma,
            "pairwise",
            0,
        ),
    )
}
GAME_NAMES = tuple(GAMES)


def joint_actions(num_agents: int) -> np.ndarray:
    """Every joint action `(MAX_MOVES ** N, N)`, in table-row order."""
    return np.array(list(itertools.product(range(MAX_MOVES), repeat=num_agents)), np.int64)


def padded_matrix(game: Game, penalty: float) -> np.ndarray:
    """The 2-player matrix padded with zeros to `(MAX_MOVES, MAX_MOVES)`."""
    padded = np.zeros((MAX_MOVES, MAX_MOVES))
    padded[: game.num_moves, : game.num_moves] = game.matrix(penalty)
    return padded


def payoff_table(game: Game, num_agents: int, penalty: float) -> tuple[np.ndarray, np.ndarray]:
    """`(payoffs (MAX_MOVES ** N, N), legal (MAX_MOVES ** N,))` of `game` for N players."""
    joint = joint_actions(num_agents)
    legal = (joint < game.num_moves).all(axis=1)
    moves = np.where(legal[:, None], joint, 0)  # illegal rows are computed, then zeroed
    matrix = game.matrix(penalty)
    players = range(num_agents)
    if game.form == "pairwise_common":
        pairs = list(itertools.combinations(players, 2))
        team = np.mean([matrix[moves[:, i], moves[:, j]] for i, j in pairs], axis=0)
        payoffs = np.repeat(team[:, None], num_agents, axis=1)
    elif game.form == "pairwise":
        payoffs = np.stack(
            [
                np.mean([matrix[moves[:, i], moves[:, j]] for j in players if j != i], axis=0)
                for i in players
            ],
            axis=1,
        )
    else:  # unanimous: the other players act as one partner who cooperates only together
        others_all = np.stack(
            [
                np.all([moves[:, j] == game.cooperate for j in players if j != i], axis=0)
                for i in players
            ],
            axis=1,
        )
        partner = np.where(others_all, game.cooperate, 1 - game.cooperate)
        payoffs = matrix[moves, partner]
    return np.where(legal[:, None], payoffs, 0.0), legal


@dataclass(frozen=True)
class Analysis:
    """What a payoff table implies, for metrics and the scripted policies."""

    optimal: np.ndarray  # bool (rows,): social welfare (sum of payoffs) is the largest
    nash: np.ndarray  # bool (rows,): a pure Nash equilibrium of the stage game
    optimal_joint: np.ndarray  # int (N,): the first optimal joint action
    bound: float  # the largest |payoff|


def safe_move(game: Game, penalty: float) -> int:
    """The move whose worst payoff against one other player is the best (the first on ties):
    c in the climbing game, b in the penalty game, hare, defect. Read from the 2-player
    matrix: with more players a team payoff's worst case also holds the others' pairs, which
    no move of one player controls."""
    return int(np.argmax(game.matrix(penalty).min(axis=1)))


def analyse(payoffs: np.ndarray, legal: np.ndarray) -> Analysis:
    num_agents = payoffs.shape[1]
    welfare = np.where(legal, payoffs.sum(axis=1), -np.inf)
    optimal = legal & (welfare >= welfare.max() - _TOLERANCE)
    shape = (MAX_MOVES,) * num_agents
    nash = legal.copy()
    for player in range(num_agents):
        own = np.where(legal, payoffs[:, player], -np.inf).reshape(shape)
        best_reply = own.max(axis=player, keepdims=True)
        nash &= (own >= best_reply - _TOLERANCE).reshape(-1)
    optimal_joint = joint_actions(num_agents)[int(np.argmax(optimal))]
    return Analysis(
        optimal=optimal,
        nash=nash,
        optimal_joint=optimal_joint,
        bound=float(np.abs(payoffs[legal]).max()),
    )
