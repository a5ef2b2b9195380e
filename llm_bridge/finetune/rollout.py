"""Episodes played by a language-model policy in every seat, with the turns kept for training.

A `Table` is one team size: the environment, its compiled batch program (the evaluation's,
`llm_bridge.program`) and its prompt builder. `play` runs a batch of episodes to the end:
at each step every live seat of every episode is shown the same chat an `alemlite eval-llm`
run with `--decoding loglik` would show (the environment's system prompt, the last
`history` observation/action pairs, the observation), each seat's active adapter scores its
legal actions, and the action is drawn from the policy (or, with no generator, the most
likely one is played, as in validation and test episodes).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.core.prompting import PromptOptions
from alemlite.core.spec import EnvOptions, EnvSpec
from llm_bridge.agents import LLMAgent
from llm_bridge.finetune.policy import LanguagePolicy, Turn
from llm_bridge.history import History
from llm_bridge.program import batch_program


@dataclass
class Rollout:
    turns: list[Turn]
    episodes: dict[str, np.ndarray]  # per-episode metrics, `episode_return` among them


class Table:
    """One team size of an environment: its compiled program and its prompts."""

    def __init__(self, env_spec: EnvSpec, options: EnvOptions, prompt: PromptOptions):
        self.env = env_spec.build(options)
        self.params = self.env.default_params
        self.size = self.env.num_agents
        self.renderer = env_spec.prompts(self.env)
        self.prompt = prompt
        self.system_prompt = self.renderer.system_prompt(prompt)
        self.action_names = tuple(self.env.action_names)
        # Every seat is the policy's: the program takes its actions as given.
        seats = [LLMAgent(backend=None, name="policy")] * self.size  # type: ignore[arg-type]
        self.program = batch_program(self.env, self.params, seats)


def play(
    table: Table,
    policy: LanguagePolicy,
    seeds: np.ndarray,
    seat_adapters: Sequence[str],
    sampler: np.random.Generator | None,
    history: int = 0,
) -> Rollout:
    """Play one episode per seed (reset from `PRNGKey(seed)`), seat `s` acting with adapter
    `seat_adapters[s]`; draw actions with `sampler`, or play the likeliest where None."""
    num_episodes, num_seats = len(seeds), table.size
    program, params = table.program, jax.device_get(table.params)
    state, play_keys = program.reset(jax.vmap(jax.random.PRNGKey)(jnp.asarray(seeds)))
    done = jnp.zeros(num_episodes, bool)
    episode_return = jnp.zeros((num_episodes, num_seats), jnp.float32)
    length = jnp.zeros(num_episodes, jnp.int32)
    chats = [[History(history) for _ in range(num_seats)] for _ in range(num_episodes)]
    engines: dict[str, Any] = {}
    no_messages = np.full((num_episodes, num_seats), "", dtype=object)
    turns: list[Turn] = []
    step = 0
    while True:
        host_state, host_done, (active, mask) = jax.device_get((state, done, program.view(state)))
        if host_done.all():
            break
        episodes, seats = np.nonzero(~host_done[:, None] & active)
        texts = table.renderer.observations(
            host_state, params, episodes, seats, no_messages, mask, table.prompt
        )
        asked = []
        for e, s, text in zip(episodes.tolist(), seats.tolist(), texts, strict=True):
            messages = [
                {"role": "system", "content": table.system_prompt},
                *chats[e][s].messages(),
                {"role": "user", "content": text},
            ]
            asked.append((e, s, text, policy.chat_tokens(messages), np.flatnonzero(mask[e, s])))
        log_probs: list[np.ndarray | None] = [None] * len(asked)
        for adapter in dict.fromkeys(seat_adapters[s] for _, s, *_ in asked):
            mine = [k for k, (_, s, *_) in enumerate(asked) if seat_adapters[s] == adapter]
            policy.use(adapter)
            engine = engines.setdefault(adapter, policy.engine())
            scored = policy.score(engine, [asked[k][3] for k in mine], [asked[k][4] for k in mine])
            for k, values in zip(mine, scored, strict=True):
                log_probs[k] = values
        actions = np.zeros((num_episodes, num_seats), np.int32)
        for (e, s, text, tokens, legal), values in zip(asked, log_probs, strict=True):
            choice = _choose(values, sampler)
            actions[e, s] = legal[choice]
            turns.append(Turn(e, step, s, tokens, legal, choice, values))
            chats[e][s].add(text, f"<action>{table.action_names[legal[choice]]}</action>")
        state, done, episode_return, length, _ = program.step(
            state, play_keys, done, episode_return, length, jnp.asarray(actions), step
        )
        step += 1
    metrics = jax.device_get(program.metrics(state, episode_return, length))
    return Rollout(turns, {name: np.asarray(value) for name, value in metrics.items()})


def _choose(log_probs: np.ndarray, sampler: np.random.Generator | None) -> int:
    if sampler is None:
        return int(np.argmax(log_probs))
    probs = np.exp(log_probs - log_probs.max())
    return int(sampler.choice(len(probs), p=probs / probs.sum()))


def table_options(options: EnvOptions, size: int) -> EnvOptions:
    """`options` with `size` seats (a curriculum stage)."""
    return dataclasses.replace(options, num_agents=size)
