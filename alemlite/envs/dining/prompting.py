"""Dining table -> one system prompt per variant and one observation text per philosopher.

Each philosopher sees only its own view: its state, its two forks (who holds them),
its meals, the step, and its two neighbours' last messages. Texts for a whole batch
are built from one host copy of the batched state: every number a prompt needs is
computed as a numpy array over all (episode, seat) pairs at once, and the strings
are then filled in from lookup tables in a single pass.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import numpy as np

from alemlite.core.prompting import PromptOptions, load_prompt, output_format

TEMPLATES = resources.files("alemlite.envs.dining") / "prompts"
MESSAGE_CHARS = 200  # the longest message a philosopher may send

DINING_VARIANTS = ("default", "minimal", "resource_ordering", "symmetry_breaking", "theory_of_mind")
_STRATEGY_VARIANTS = ("resource_ordering", "symmetry_breaking", "theory_of_mind")


class DiningRenderer:
    env_name = "dining"
    variants = DINING_VARIANTS
    message_chars = MESSAGE_CHARS

    def __init__(self, sequential: bool = False, release_on_deadlock: bool = False):
        self.timing = _SEQUENTIAL if sequential else _SIMULTANEOUS
        self.deadlock = _RELEASED if release_on_deadlock else _ENDS

    @classmethod
    def for_env(cls, env: Any) -> DiningRenderer:
        """The rules text of `env`'s mode and deadlock handling."""
        return cls(
            sequential=env.config.sequential,
            release_on_deadlock=bool(env.default_params.release_on_deadlock),
        )

    def system_prompt(self, options: PromptOptions, constrained: bool = False) -> str:
        rules = "minimal.txt" if options.variant == "minimal" else "rules.txt"
        sections = [
            load_prompt(TEMPLATES, rules).format(timing=self.timing, deadlock=self.deadlock)
        ]
        sections.append(load_prompt(TEMPLATES, "actions.txt"))
        if options.variant in _STRATEGY_VARIANTS:
            sections.append(load_prompt(TEMPLATES, f"{options.variant}.txt"))
        sections.append(output_format(options, self.message_chars, "neighbours", constrained))
        return "\n\n".join(sections)

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
        batch_shape = np.shape(state.step)
        num_philosophers = np.broadcast_to(params.num_philosophers, batch_shape)[episodes]
        max_steps = np.broadcast_to(params.max_steps, batch_shape)[episodes]
        left_fork = seats
        right_fork = (seats + 1) % num_philosophers
        left_neighbour = (seats - 1) % num_philosophers
        right_neighbour = right_fork
        fork_holder = np.asarray(state.fork_holder)
        left_holder = fork_holder[episodes, left_fork]
        right_holder = fork_holder[episodes, right_fork]
        columns = zip(
            (np.asarray(state.step)[episodes] + 1).tolist(),
            max_steps.tolist(),
            seats.tolist(),
            num_philosophers.tolist(),
            np.asarray(state.eating)[episodes, seats].tolist(),
            np.asarray(state.meals)[episodes, seats].tolist(),
            left_fork.tolist(),
            _fork_status(left_holder, seats, "left"),
            right_fork.tolist(),
            _fork_status(right_holder, seats, "right"),
            left_neighbour.tolist(),
            messages[episodes, left_neighbour].tolist(),
            right_neighbour.tolist(),
            messages[episodes, right_neighbour].tolist(),
            strict=True,
        )
        return [
            f"Step {step} of {max_steps}.\n"
            f"You are philosopher {seat} of {count}. You are "
            f"{_EATING_TEXT if eating else 'HUNGRY'}, and have eaten {meals} "
            f"meal{'' if meals == 1 else 's'}.\n"
            f"Your left fork (fork {left}) is {left_status}. "
            f"Your right fork (fork {right}) is {right_status}."
            + _said(left_id, "left", left_message)
            + ("" if right_id == left_id else _said(right_id, "right", right_message))
            for (
                step,
                max_steps,
                seat,
                count,
                eating,
                meals,
                left,
                left_status,
                right,
                right_status,
                left_id,
                left_message,
                right_id,
                right_message,
            ) in columns
        ]


_SIMULTANEOUS = "applied to everyone at the same time each step"
_SEQUENTIAL = "applied to one philosopher at a time each step, in number order"
_ENDS = "the episode ends"
_RELEASED = "every fork is put back on the table, which counts against the team"
_EATING_TEXT = "EATING (your forks go back on the table after this step)"


def _fork_status(holder: np.ndarray, seats: np.ndarray, side: str) -> list[str]:
    """'free', 'held by you' or 'held by philosopher k (your left neighbour)', for all pairs."""
    texts = np.where(holder < 0, "free", "held by you").astype(object)
    taken = (holder >= 0) & (holder != seats)
    texts[taken] = [
        f"held by philosopher {philosopher} (your {side} neighbour)"
        for philosopher in holder[taken].tolist()
    ]
    return texts.tolist()


def _said(philosopher: int, side: str, message: str) -> str:
    return f'\nPhilosopher {philosopher} ({side} neighbour) says: "{message}"' if message else ""
