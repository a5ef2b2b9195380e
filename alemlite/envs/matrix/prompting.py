"""Repeated matrix game -> one system prompt per variant and one observation text per player.

The system prompt states the number of players and rounds, the 2-player payoff table and how
N players are paid from it (the game's N-player form), and the moves. Each observation states
the round, the player's seat, the last round's joint action and the player's payoff, its
total so far, the tokens sent last round (with message tokens) and the other players' last
messages. Texts for a whole batch come from one host copy of the batched state: the numbers
are gathered as numpy arrays over all (episode, seat) pairs, then filled in in one pass.

Actions are named neutrally (PLAY_A, PLAY_B, PLAY_C) and the game is not named, so that a
model plays the payoffs it is shown rather than what it knows of the game's name.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import numpy as np

from alemlite.core.prompting import PromptOptions, load_prompt, output_format
from alemlite.envs.matrix.games import GAME_NAMES, GAMES, MOVE_NAMES, Game

TEMPLATES = resources.files("alemlite.envs.matrix") / "prompts"
MESSAGE_CHARS = 200  # the longest message a player may send
MATRIX_VARIANTS = ("default", "minimal")


def number(value: float) -> str:
    """A payoff as a person writes it: 11, -30, 7.5, -6.67."""
    return f"{round(float(value), 2):g}"


def payoff_rule(game: Game, num_agents: int) -> str:
    """How each player is paid from the 2-player table, for `num_agents` players."""
    if game.common:
        if num_agents == 2:
            return (
                "Both players receive the same payoff: the table's entry in player 0's row "
                "and player 1's column."
            )
        return (
            "Every player receives the same team payoff: the average, over every pair of "
            "players, of the table's entry with the lower-numbered player's move as the row "
            "and the other player's move as the column."
        )
    if num_agents == 2:
        return (
            "Your payoff is the first number of the entry in your move's row and the other "
            "player's column; the second number is the other player's payoff."
        )
    if game.form == "pairwise":
        return (
            "You play the table against every other player: your payoff is the average, over "
            "the other players, of the first number of the entry in your move's row and that "
            "player's column."
        )
    cooperate, other = MOVE_NAMES[game.cooperate], MOVE_NAMES[1 - game.cooperate]
    return (
        "Your payoff is the first number of the entry in your move's row and column "
        f"{cooperate} if every other player played {cooperate}, otherwise column {other}."
    )


def payoff_table(game: Game, matrix: np.ndarray) -> str:
    """The 2-player table: team payoffs, or (row player, column player) payoff pairs."""
    moves = MOVE_NAMES[: game.num_moves]
    matrix = np.asarray(matrix)[: game.num_moves, : game.num_moves]
    indices = range(game.num_moves)
    if game.common:
        cells = [[number(matrix[r, c]) for c in indices] for r in indices]
        title = "Payoffs (rows: the row player's move; columns: the column player's move):"
    else:
        cells = [
            [f"{number(matrix[r, c])}, {number(matrix[c, r])}" for c in indices] for r in indices
        ]
        title = (
            "Payoffs (rows: your move; columns: the other player's move; entries: yours, theirs):"
        )
    width = max(len(text) for text in [*moves, *(cell for row in cells for cell in row)])
    header = " " * width + "".join(f"  {move:>{width}}" for move in moves)
    rows = [
        f"{move:<{width}}" + "".join(f"  {cell:>{width}}" for cell in row)
        for move, row in zip(moves, cells, strict=True)
    ]
    return "\n".join([title, header, *rows])


class MatrixRenderer:
    env_name = "matrix"
    variants = MATRIX_VARIANTS
    message_chars = MESSAGE_CHARS

    def __init__(
        self, game: Game, matrix: np.ndarray, num_agents: int, rounds: int, num_tokens: int
    ):
        self.game = game
        self.matrix = np.asarray(matrix)
        self.num_agents = num_agents
        self.rounds = rounds
        self.num_tokens = num_tokens

    @classmethod
    def for_env(cls, env: Any) -> MatrixRenderer:
        """The prompts of `env`'s default game."""
        params = env.default_params
        return cls(
            game=GAMES[GAME_NAMES[int(params.game)]],
            matrix=np.asarray(params.matrix),
            num_agents=env.num_agents,
            rounds=int(params.max_steps),
            num_tokens=env.config.num_message_tokens,
        )

    def system_prompt(self, options: PromptOptions, constrained: bool = False) -> str:
        template = "minimal.txt" if options.variant == "minimal" else "rules.txt"
        goal = (
            "Your goal: the largest total team payoff over all rounds."
            if self.game.common
            else "Your goal: the largest total payoff for yourself over all rounds."
        )
        rules = load_prompt(TEMPLATES, template).format(
            num_players=self.num_agents,
            rounds=self.rounds,
            payoff_rule=payoff_rule(self.game, self.num_agents),
            table=payoff_table(self.game, self.matrix),
            goal=goal,
        )
        tokens = (
            f"\nYou may attach a token to your move, e.g. {MOVE_NAMES[0]}+MSG_1 (tokens 1 to "
            f"{self.num_tokens}); every player sees it next round. Tokens mean only what the "
            "players make of them."
            if self.num_tokens
            else ""
        )
        actions = load_prompt(TEMPLATES, "actions.txt").format(
            moves=", ".join(MOVE_NAMES[: self.game.num_moves]), tokens=tokens
        )
        return "\n\n".join(
            [
                rules,
                actions,
                output_format(options, self.message_chars, "fellow players", constrained),
            ]
        )

    def observations(
        self,
        state: Any,
        params: Any,
        episodes: np.ndarray,
        seats: np.ndarray,
        messages: np.ndarray,
        action_mask: np.ndarray,
        options: PromptOptions,
        picture: bool = False,  # no part of this text is drawn in a picture: the same either way
    ) -> list[str]:
        episodes = np.asarray(episodes, np.int64)
        seats = np.asarray(seats, np.int64)
        max_steps = np.broadcast_to(params.max_steps, np.shape(state.step))[episodes]
        last_moves = np.asarray(state.last_moves)[episodes]
        last_tokens = np.asarray(state.last_tokens)[episodes]
        columns = zip(
            (np.asarray(state.step)[episodes] + 1).tolist(),
            max_steps.tolist(),
            seats.tolist(),
            last_moves.tolist(),
            last_tokens.tolist(),
            np.asarray(state.last_payoffs)[episodes, seats].tolist(),
            np.asarray(state.payoff_sum)[episodes, seats].tolist(),
            np.asarray(messages)[episodes].tolist(),
            strict=True,
        )
        return [
            f"Round {round_} of {rounds}. You are player {seat} of {self.num_agents}.\n"
            + _last_round(moves, payoff)
            + _tokens(tokens)
            + f"\nYour total payoff so far: {number(total)}."
            + "".join(
                f'\nPlayer {other} says: "{text}"'
                for other, text in enumerate(said)
                if text and other != seat
            )
            for round_, rounds, seat, moves, tokens, payoff, total, said in columns
        ]


def _last_round(moves: list[int], payoff: float) -> str:
    if moves[0] < 0:
        return "This is the first round."
    played = ", ".join(
        f"player {seat} played {MOVE_NAMES[move]}" for seat, move in enumerate(moves)
    )
    return f"Last round: {played}. Your payoff was {number(payoff)}."


def _tokens(tokens: list[int]) -> str:
    sent = [f"player {seat} sent MSG_{token}" for seat, token in enumerate(tokens) if token]
    return f"\nTokens sent last round: {', '.join(sent)}." if sent else ""


def render_text(env: Any, state: Any, params: Any) -> str:
    """The game, its payoff table and the last joint action, for a person."""
    game = GAMES[GAME_NAMES[int(params.game)]]
    moves = np.asarray(state.last_moves).tolist()
    lines = [
        f"Game: {game.title}, {env.num_agents} players, {int(state.step)} of "
        f"{int(params.max_steps)} rounds played",
        payoff_rule(game, env.num_agents),
        payoff_table(game, np.asarray(params.matrix)),
    ]
    if moves[0] < 0:
        lines.append("no round played yet")
    else:
        payoffs = ", ".join(number(value) for value in np.asarray(state.last_payoffs).tolist())
        lines.append(f"last round: {' '.join(MOVE_NAMES[m] for m in moves)} (payoffs {payoffs})")
    return "\n".join(lines)
