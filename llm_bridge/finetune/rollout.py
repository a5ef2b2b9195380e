"""Episodes played by a language-model policy in every seat, with the turns kept for training.

A `Table` is one team size: the environment, its compiled batch program (the evaluation's,
`llm_bridge.program`), its prompt builder and its reply parser. `play` runs a batch of
episodes to the end: at each step every live seat of every episode is shown the chat an
`alemlite eval-llm` run would show (the environment's system prompt, the last `history`
observation/reply pairs, the observation, the neighbours' messages and the note after an
unparsed reply), and a `Decoder` turns each seat's chat into its action with the seat's
active adapter: `Likelihood` (`--decoding loglik`) draws from the softmax over the legal
names, or with no generator plays the likeliest (as in validation and test episodes);
`generation.Generate` (`--decoding generate`) samples a reply and parses it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import jax
import jax.numpy as jnp
import numpy as np

from alemlite.core.prompting import PromptOptions
from alemlite.core.spec import EnvOptions, EnvSpec
from llm_bridge.agents import LLMAgent
from llm_bridge.clients.hf_engine import Engine
from llm_bridge.finetune.policy import LanguagePolicy, Turn
from llm_bridge.history import History
from llm_bridge.images import user_content
from llm_bridge.parse import ActionParser
from llm_bridge.program import batch_program
from llm_bridge.runner import free_reply_text, parse_feedback_note


@dataclass
class Rollout:
    turns: list[Any]  # `Turn`s, or `generation.GeneratedTurn`s
    episodes: dict[str, np.ndarray]  # per-episode metrics, `episode_return` among them


class Table:
    """One team size of an environment: its compiled program, its prompts and its parser."""

    def __init__(self, env_spec: EnvSpec, options: EnvOptions, prompt: PromptOptions):
        self.env = env_spec.build(options)
        self.params = self.env.default_params
        self.size = self.env.num_agents
        self.renderer = env_spec.prompts(self.env)
        self.prompt = prompt
        self.system_prompt = self.renderer.system_prompt(prompt)
        self.action_names = tuple(self.env.action_names)
        # As eval-llm's: an unparsed reply plays the parser's no-op.
        self.parser = ActionParser(self.action_names, message_chars=self.renderer.message_chars)
        # Every seat is the policy's: the program takes its actions as given.
        seats = [LLMAgent(backend=None, name="policy")] * self.size  # type: ignore[arg-type]
        self.program = batch_program(self.env, self.params, seats)


@dataclass
class Ask:
    """A live seat's request at one step: its chat's tokens and its legal actions."""

    episode: int
    seat: int
    tokens: np.ndarray
    legal: np.ndarray  # the legal action indices, in the environment's order


@dataclass
class Decision:
    """What a seat played, the turn kept for training, and what its reply said."""

    action: int
    turn: Any  # a `Turn`, or a `generation.GeneratedTurn`
    message: str = ""
    parsed: bool = True


class Engines:
    """One scoring engine per adapter for one rollout (cached keys and values belong to the
    weights that computed them)."""

    def __init__(self, policy: LanguagePolicy):
        self.policy = policy
        self._engines: dict[str, Engine] = {}

    def activate(self, adapter: str) -> Engine:
        """Make `adapter` the policy's active one; its engine."""
        self.policy.use(adapter)
        if adapter not in self._engines:
            self._engines[adapter] = self.policy.engine()
        return self._engines[adapter]


class Decoder(Protocol):
    parses: bool  # whether replies can go unparsed (then episodes report their parse rate)

    def tokens(self, policy: LanguagePolicy, messages: list[dict[str, Any]]) -> np.ndarray:
        """The tokens a request is asked with."""
        ...

    def decide(
        self,
        policy: LanguagePolicy,
        engines: Engines,
        table: Table,
        asks: list[Ask],
        seat_adapters: Sequence[str],
        sampler: np.random.Generator | None,
        step: int,
    ) -> list[Decision]:
        """Each request's decision, in order; drawn with `sampler`, or the likeliest if None."""
        ...


def by_adapter(asks: Sequence[Ask], seat_adapters: Sequence[str]) -> dict[str, list[int]]:
    """The requests' positions per adapter, adapters in the order their seats first ask."""
    groups: dict[str, list[int]] = {}
    for k, ask in enumerate(asks):
        groups.setdefault(seat_adapters[ask.seat], []).append(k)
    return groups


class Likelihood:
    """`--decoding loglik`: the softmax of the legal names' log-likelihoods (`policy.score`)."""

    parses = False

    def tokens(self, policy: LanguagePolicy, messages: list[dict[str, Any]]) -> np.ndarray:
        return policy.chat_tokens(messages)

    def decide(
        self,
        policy: LanguagePolicy,
        engines: Engines,
        table: Table,
        asks: list[Ask],
        seat_adapters: Sequence[str],
        sampler: np.random.Generator | None,
        step: int,
    ) -> list[Decision]:
        log_probs: list[np.ndarray | None] = [None] * len(asks)
        for adapter, mine in by_adapter(asks, seat_adapters).items():
            engine = engines.activate(adapter)
            scored = policy.score(
                engine, [asks[k].tokens for k in mine], [asks[k].legal for k in mine]
            )
            for k, values in zip(mine, scored, strict=True):
                log_probs[k] = values
        decisions = []
        for ask, values in zip(asks, log_probs, strict=True):
            choice = _choose(values, sampler)
            turn = Turn(ask.episode, step, ask.seat, ask.tokens, ask.legal, choice, values)
            decisions.append(Decision(int(ask.legal[choice]), turn))
        return decisions


def play(
    table: Table,
    policy: LanguagePolicy,
    seeds: np.ndarray,
    seat_adapters: Sequence[str],
    sampler: np.random.Generator | None,
    history: int = 0,
    decoder: Decoder | None = None,
) -> Rollout:
    """Play one episode per seed (reset from `PRNGKey(seed)`), seat `s` acting with adapter
    `seat_adapters[s]` through `decoder` (default: `Likelihood`); draw with `sampler`, or
    play the likeliest where None."""
    decoder = decoder or Likelihood()
    num_episodes, num_seats = len(seeds), table.size
    program, params = table.program, jax.device_get(table.params)
    state, play_keys = program.reset(jax.vmap(jax.random.PRNGKey)(jnp.asarray(seeds)))
    done = jnp.zeros(num_episodes, bool)
    episode_return = jnp.zeros((num_episodes, num_seats), jnp.float32)
    length = jnp.zeros(num_episodes, jnp.int32)
    chats = [[History(history) for _ in range(num_seats)] for _ in range(num_episodes)]
    engines = Engines(policy)
    messages = np.full((num_episodes, num_seats), "", dtype=object)
    unparsed = np.zeros((num_episodes, num_seats), bool)  # the seat's last reply
    turn_counts = np.zeros((num_episodes, 2), np.int64)  # per episode: turns, parsed
    turns: list[Any] = []
    step = 0
    while True:
        host_state, host_done, (active, mask) = jax.device_get((state, done, program.view(state)))
        if host_done.all():
            break
        episodes, seats = np.nonzero(~host_done[:, None] & active)
        texts = table.renderer.observations(
            host_state, params, episodes, seats, messages, mask, table.prompt
        )
        contents, asks = [], []
        for e, s, text in zip(episodes.tolist(), seats.tolist(), texts, strict=True):
            content = _user_content(table, text, unparsed[e, s])
            chat = [
                {"role": "system", "content": table.system_prompt},
                *chats[e][s].messages(),
                {"role": "user", "content": content},
            ]
            contents.append(content)
            asks.append(Ask(e, s, decoder.tokens(policy, chat), np.flatnonzero(mask[e, s])))
        decisions = decoder.decide(policy, engines, table, asks, seat_adapters, sampler, step)
        actions = np.zeros((num_episodes, num_seats), np.int32)
        messages = np.full((num_episodes, num_seats), "", dtype=object)
        for ask, content, decision in zip(asks, contents, decisions, strict=True):
            e, s = ask.episode, ask.seat
            actions[e, s] = decision.action
            turns.append(decision.turn)
            message = decision.message if table.prompt.communication else ""
            chats[e][s].add(content, free_reply_text(table.action_names[decision.action], message))
            messages[e, s] = message
            unparsed[e, s] = not decision.parsed
            turn_counts[e] += (1, decision.parsed)
        state, done, episode_return, length, _ = program.step(
            state, play_keys, done, episode_return, length, jnp.asarray(actions), step
        )
        step += 1
    metrics = jax.device_get(program.metrics(state, episode_return, length))
    episodes = {name: np.asarray(value) for name, value in metrics.items()}
    if decoder.parses:  # as eval-llm's reports: the share of an episode's replies parsed
        episodes["parse_rate"] = turn_counts[:, 1] / np.maximum(turn_counts[:, 0], 1)
    return Rollout(turns, episodes)


def _user_content(table: Table, observation: str, unparsed: bool) -> str:
    """The observation, with eval-llm's note where the seat's last reply was unparsed."""
    note = ""
    if table.prompt.parse_feedback and unparsed:
        note = parse_feedback_note(table.action_names[table.parser.noop_action], True)
    return user_content("text", observation, note, None)


def _choose(log_probs: np.ndarray, sampler: np.random.Generator | None) -> int:
    if sampler is None:
        return int(np.argmax(log_probs))
    probs = np.exp(log_probs - log_probs.max())
    return int(sampler.choice(len(probs), p=probs / probs.sum()))


def table_options(options: EnvOptions, size: int) -> EnvOptions:
    """`options` with `size` seats (a curriculum stage)."""
    return dataclasses.replace(options, num_agents=size)
