"""`--decoding generate`: a turn is a reply sampled from the model and parsed, as in the study.

A seat's turn samples a reply after the free-text chat `alemlite eval-llm --decoding
generate` shows (the environment's system prompt, which asks for `<action>NAME</action>`),
token by token at `temperature` with the seat's adapter, and stops as the transformers
backend's free replies stop: at the end token, once the reply holds a complete action with
nothing left open (`hf_backend.reply_complete`), or after `max_tokens`. The bridge's parser
(`llm_bridge.parse`) reads the action from the reply; an unparsed reply plays the parser's
no-op, is counted (each episode's `parse_rate`, each update's `unparsed` share) and is
noted in the seat's next observation, as eval-llm does.

A turn keeps the reply's tokens (the end token included when it was drawn: drawing it was
part of the policy's choice) and their log-probabilities under the rollout policy at the
sampling temperature, so the ratio of a turn is that of the sampling distribution:
`exp(sum new - sum old)` over the reply's tokens, recomputed with gradients in training.
The stopping rules are functions of the tokens already drawn, so they add nothing to it.

The KL to the starting model cannot be summed over every possible reply. It is estimated
on the sampled tokens with k3 (`r - 1 - log r`, `r = p_ref / p_new` per token, summed over
the reply): non-negative per token, unbiased for KL(new || ref) over replies drawn from the
new policy (by the chain rule the per-token KLs add up to the reply's), lower-variance
than `-log r`, and the estimator DeepSeekMath's GRPO uses; the turns were drawn by the
rollout policy, which the new one equals at an update's first step. The reference is the
model with its adapters off. TeamTR's trust region measures KL(before || after) on a seat's
own turns with the same estimator, `r = p_after / p_before`: those replies were drawn from
`before`, so there it is unbiased exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from llm_bridge.clients.hf_backend import reply_complete
from llm_bridge.clients.hf_engine import Engine, Row
from llm_bridge.finetune.policy import LanguagePolicy
from llm_bridge.finetune.rollout import Ask, Decision, Engines, Table, by_adapter
from llm_bridge.parse import split_reasoning

SEED_BOUND = 2**62  # a reply's generator seed is drawn below this


@dataclass
class GeneratedTurn:
    """One seat's reply: the chat's tokens, the reply's tokens and how likely each was."""

    episode: int
    step: int
    seat: int
    tokens: np.ndarray  # the chat's tokens, with the generation prompt
    completion: np.ndarray  # the reply's tokens as drawn, the end token too if drawn
    token_log_probs: np.ndarray  # each one's log-probability under the rollout policy
    parsed: bool


def sample_replies(
    engine: Engine,
    tokenizer: Any,
    prompts: Sequence[np.ndarray],
    seeds: Sequence[int | None],
    temperature: float,
    max_tokens: int,
) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per prompt, the reply's tokens and their log-probabilities at `temperature`, drawn
    from a generator seeded by its seed (greedy where the seed is None)."""
    eos = tokenizer.eos_token_id
    generators = [None if s is None else torch.Generator().manual_seed(int(s)) for s in seeds]
    drawn: list[list[int]] = [[] for _ in prompts]
    log_probs: list[list[float]] = [[] for _ in prompts]

    def choose(row: int, generated: list[int], logprobs: torch.Tensor) -> int | None:
        # As the backend's free replies end: a complete reply needs no more tokens.
        if generated and reply_complete(tokenizer.decode(generated)):
            return None
        scaled = torch.log_softmax(logprobs / temperature, 0)
        generator = generators[row]
        if generator is None:
            token = int(torch.argmax(scaled))
        else:
            token = int(torch.multinomial(scaled.exp(), 1, generator=generator))
        drawn[row].append(token)
        log_probs[row].append(float(scaled[token]))
        return None if token == eos else token

    engine.generate([Row(np.asarray(p, np.int64)) for p in prompts], max_tokens, choose)
    return [
        (np.asarray(tokens, np.int64), np.asarray(values, np.float64))
        for tokens, values in zip(drawn, log_probs, strict=True)
    ]


class Generate:
    """`--decoding generate`: a sampled reply per turn, parsed into the action it plays."""

    parses = True

    def __init__(self, max_tokens: int):
        self.max_tokens = max_tokens

    def tokens(self, policy: LanguagePolicy, messages: list[dict[str, Any]]) -> np.ndarray:
        return policy.prompt_tokens(messages)

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
        # A generator per reply, seeded in the requests' order: the draws do not depend on
        # how the engine batches the rows.
        seeds = [None if sampler is None else int(sampler.integers(SEED_BOUND)) for _ in asks]
        replies: list[Any] = [None] * len(asks)
        for adapter, mine in by_adapter(asks, seat_adapters).items():
            engine = engines.activate(adapter)
            sampled = sample_replies(
                engine, policy.tokenizer, [asks[k].tokens for k in mine],
                [seeds[k] for k in mine], policy.temperature, self.max_tokens,
            )  # fmt: skip
            for k, reply in zip(mine, sampled, strict=True):
                replies[k] = reply
        decisions = []
        for ask, (completion, log_probs) in zip(asks, replies, strict=True):
            text = policy.tokenizer.decode(completion, skip_special_tokens=True)
            reply = table.parser(split_reasoning(text)[1])  # thoughts are not parsed
            turn = GeneratedTurn(
                ask.episode, step, ask.seat, ask.tokens, completion, log_probs, reply.parsed
            )
            decisions.append(Decision(reply.action, turn, reply.message, reply.parsed))
        return decisions


def unparsed_share(turns: Sequence[GeneratedTurn]) -> float:
    return float(np.mean([not turn.parsed for turn in turns])) if turns else 0.0


# ---- training --------------------------------------------------------------------------------
def completion_log_probs(policy: LanguagePolicy, turns: Sequence[GeneratedTurn]) -> torch.Tensor:
    """`(turns, longest reply)`: the log-probability of each reply token under the active
    adapter at the policy's temperature, with gradients; 0 past a reply's end."""
    rows = [Row(turn.tokens, [turn.completion]) for turn in turns]
    logits, predictors = policy.branch_logits(rows)
    token_log_probs = torch.log_softmax(logits.float() / policy.temperature, -1)
    picked = token_log_probs[
        torch.arange(len(predictors)), torch.tensor([token for *_, token in predictors])
    ]
    # `pack` lists each row's branch tokens in order, row after row.
    per_turn = torch.split(picked, [len(turn.completion) for turn in turns])
    return torch.nn.utils.rnn.pad_sequence(list(per_turn), batch_first=True)


def _reply_mask(turns: Sequence[GeneratedTurn], width: int) -> torch.Tensor:
    lengths = torch.tensor([len(turn.completion) for turn in turns])
    return torch.arange(width)[None] < lengths[:, None]


def k3(log_ratio: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per row, the sum over its tokens (where `mask`) of `r - 1 - log r`, `log r` given."""
    terms = torch.expm1(log_ratio) - log_ratio
    return torch.where(mask, terms, torch.zeros_like(terms)).sum(-1)


def _padded(rows: Sequence[np.ndarray], width: int) -> np.ndarray:
    out = np.zeros((len(rows), width))
    for r, row in enumerate(rows):
        out[r, : len(row)] = row
    return out


class CompletionTerms:
    """The objectives' per-turn terms for generated replies (see the module's docstring)."""

    def reference(
        self, policy: LanguagePolicy, turns: Sequence[GeneratedTurn], batch: int
    ) -> np.ndarray:
        """`(turns, longest reply)`: each reply token's log-probability under the starting
        model (adapters off), 0 past a reply's end."""
        parts = []
        with torch.no_grad(), policy.model.disable_adapter():
            for start in range(0, len(turns), batch):
                parts.append(completion_log_probs(policy, turns[start : start + batch]).numpy())
        return _padded([row for part in parts for row in part], max(p.shape[1] for p in parts))

    def per_turn(
        self, policy: LanguagePolicy, turns: Sequence[GeneratedTurn], reference: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per turn, the log-ratio of its reply (active adapter against the rollout's), with
        gradients, and the k3 estimate of KL(active || start) on its tokens."""
        new = completion_log_probs(policy, turns)
        old = torch.tensor([turn.token_log_probs.sum() for turn in turns], dtype=torch.float32)
        start = torch.as_tensor(reference[:, : new.shape[1]], dtype=torch.float32)
        kl = k3(start - new, _reply_mask(turns, new.shape[1]))
        return new.sum(-1) - old, kl

    def kl_before_after(
        self, policy: LanguagePolicy, turns: Sequence[GeneratedTurn], batch: int
    ) -> float:
        """Mean over `turns` of the k3 estimate of KL(rollout policy || active adapter now)."""
        total = 0.0
        with torch.no_grad():
            for start in range(0, len(turns), batch):
                part = turns[start : start + batch]
                now = completion_log_probs(policy, part)
                before = _padded([turn.token_log_probs for turn in part], now.shape[1])
                mask = _reply_mask(part, now.shape[1])
                total += float(k3(now - torch.as_tensor(before, dtype=torch.float32), mask).sum())
        return total / max(len(turns), 1)
