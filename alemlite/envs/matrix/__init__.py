"""Repeated matrix games: N players play one stage game for `max_steps` rounds.

Games (`game`; the 2-player matrices, row player's payoff `M[own move, other move]`):
- `climbing` (Claus & Boutilier 1998), common payoff, moves a, b, c:
  `[[11, -30, 0], [-30, 7, 6], [0, 0, 5]]`. The optimum (a, a) sits next to the worst
  penalties, so independent learners averaging over an exploring partner prefer the safe c
  (relative overgeneralisation).
- `penalty` (Claus & Boutilier 1998), common payoff, `[[10, 0, k], [0, 2, 0], [k, 0, 10]]`
  with `penalty` k <= 0 (default -10): two optima (a, a) and (c, c), and choosing between
  them independently risks k (miscoordination); b is safe.
- `stag_hunt`, individual payoffs, moves stag, hare: `[[4, 0], [3, 3]]`: all-stag is
  payoff-dominant, all-hare risk-dominant.
- `prisoners_dilemma`, individual payoffs, moves cooperate, defect: Axelrod's
  `[[3, 0], [5, 1]]` (R = 3, S = 0, T = 5, P = 1).

N-player forms (equal to the matrices above at N = 2; details in `games.py`):
- climbing and penalty: one team payoff for all, the mean over every pair i < j of
  `M[move_i, move_j]` (lower seat as the row);
- prisoner's dilemma: player i gets the mean over the other players j of `M[move_i, move_j]`
  (a round robin of 2-player games);
- stag hunt: player i gets `M[move_i, stag]` if every other player hunts stag, else
  `M[move_i, hare]` (the stag needs the whole team).

Actions are named neutrally `PLAY_A, PLAY_B, PLAY_C`, padded to 3 moves for every game, so
that one compiled batch mixes games: the payoff table is a dynamic parameter (`MatrixParams`,
`env.make_params(game=...)`, stacked for a batch) and a 2-move game masks PLAY_C. With C > 0
message tokens `action = move + 3 * token` (token 0 silent, `num_actions = 3 * (C + 1)`,
named like `PLAY_A+MSG_2`); every player sees every token next round. An action the mask
forbids (PLAY_C in a 2-move game, or an id out of range) plays PLAY_A, silent, and counts as
invalid.

Reward each round: each player's payoff (`reward="payoff"`), or the payoff divided by the
game's largest |payoff| (`reward="normalised"`, rewards in [-1, 1]). The coordination games
pay every player the team payoff; the stag hunt and the prisoner's dilemma pay each its own.
The time limit is part of the task (`TimeLimit.TASK`): players observe the rounds left, and
nothing is terminated early. No randomness: every episode starts before round 1.

Episode metrics, rates over the rounds played:
- `mean_payoff`: payoff per player per round (unscaled); `payoff`: per player.
- `optimal_joint_action_rate`: rounds whose joint action maximised social welfare (the sum of
  payoffs; for the coordination games the team payoff): all-a in the climbing game, all-a or
  all-c in the penalty game, all-stag, all-cooperate.
- `miscoordination_rate`: rounds where the players did not all play the same move: in the
  climbing and penalty games an off-diagonal joint action (the -30 and k penalties, or the
  mixed a/b/c outcomes), in the stag hunt a stag hunter left alone (payoff 0), in the
  prisoner's dilemma a cooperator exploited by a defector (the sucker's payoff).
- `suboptimal_equilibrium_rate`: rounds on a pure Nash equilibrium of the stage game that is
  not optimal (the coordinated but payoff-dominated outcome): all-b in the climbing and
  penalty games, all-hare, all-defect.
- `cooperation_rate`: share of moves that are the game's cooperative move (the one the optimum
  needs trust for): a in the climbing and penalty games, stag, cooperate.
- `play_a_rate`, `play_b_rate`, `play_c_rate`: share of moves of each kind (the action a team
  settles on); `valid_action_rate`: share of actions the mask allowed.
"""

from __future__ import annotations

from alemlite.envs.matrix.config import MatrixConfig, MatrixParams
from alemlite.envs.matrix.env import MatrixEnv
from alemlite.envs.matrix.games import GAMES
from alemlite.envs.matrix.policies import MATRIX_POLICIES
from alemlite.envs.matrix.spec import SPEC, MatrixOptions, make_matrix
from alemlite.envs.matrix.state import MatrixState

__all__ = [
    "GAMES",
    "MATRIX_POLICIES",
    "SPEC",
    "MatrixConfig",
    "MatrixEnv",
    "MatrixOptions",
    "MatrixParams",
    "MatrixState",
    "make_matrix",
]
