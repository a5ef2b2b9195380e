"""The prompt contract: what an environment's prompt builder provides to the LLM bridge,
the prompt switches shared by every environment, and the shared answer-format section.

An environment that can be played by language models declares a prompt builder in its
spec (`EnvSpec.prompts`); `llm_bridge` reads only this contract, never an environment."""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Any, Protocol

import numpy as np


@dataclass(frozen=True)
class PromptOptions:
    """Prompt variant and memory switches; each is one axis of an ablation sweep."""

    variant: str = "default"
    history: int = 5  # observation/action pairs of the agent's own past shown back to it
    chain_of_thought: bool = False  # ask for <think>...</think> before the action
    communication: bool = True  # agents may send <message>, read by neighbours next step
    scratchpad: bool = False  # agents may keep <scratchpad> notes, shown back to themselves
    parse_feedback: bool = True  # the next observation says when a reply could not be parsed


def load_prompt(folder: Traversable, name: str) -> str:
    """The template `name` from a folder of package data, e.g. an environment's
    `resources.files("alemlite.envs.dining") / "prompts"`."""
    return folder.joinpath(name).read_text(encoding="utf-8").strip()


# The answer-format section every environment shares.
SHARED_TEMPLATES = resources.files("alemlite.core") / "prompts"


def output_format(
    options: PromptOptions, message_chars: int, audience: str, constrained: bool = False
) -> str:
    """The "how to answer" section, following the prompt switches; `constrained`: the model
    server restricts each reply to one legal action name, so the section asks for the name
    alone (no tags, thoughts, messages or notes, which such a reply cannot hold)."""
    if constrained:
        return load_prompt(SHARED_TEMPLATES, "format_constrained.txt")
    think = "First think briefly inside <think>...</think>.\n" if options.chain_of_thought else ""
    message = (
        f"You may add <message>...</message> (at most {message_chars} characters); "
        f"your {audience} read it next step.\n"
        if options.communication
        else ""
    )
    scratchpad = (
        "You may keep private notes in <scratchpad>...</scratchpad>; they are shown back "
        "to you next step.\n"
        if options.scratchpad
        else ""
    )
    return load_prompt(SHARED_TEMPLATES, "format.txt").format(
        think_line=think, message_line=message, scratchpad_line=scratchpad
    )


class PromptBuilder(Protocol):
    """Turns a batch of host-side states into one user text per live agent."""

    env_name: str
    variants: tuple[str, ...]
    message_chars: int

    def system_prompt(self, options: PromptOptions, constrained: bool = False) -> str:
        """The rules, actions and answer format; `constrained`: the answer-format section is
        `output_format(..., constrained=True)` (the server restricts replies to a name)."""
        ...

    def observations(
        self,
        state: Any,
        params: Any,
        episodes: np.ndarray,
        seats: np.ndarray,
        messages: np.ndarray,
        action_mask: np.ndarray,
        options: PromptOptions,
        picture: bool = False,
    ) -> list[str]:
        """Texts for the agents `(episodes[k], seats[k])` of the batched host `state`.

        `messages` `(num_episodes, num_seats)` holds every agent's last sanitised message
        ("" for none); each agent sees only those its own view allows. `action_mask`
        `(num_episodes, num_seats, num_actions)` marks the actions legal now. `picture`: the
        agent is also shown its view drawn (the spec's `render_agent_rgb`), so the text leaves
        out what the picture shows (the tiles and creatures of its view) and keeps the rest
        (stats, inventory, teammates, messages, legal actions); a text with nothing drawn in
        the picture is the same either way.
        """
        ...
