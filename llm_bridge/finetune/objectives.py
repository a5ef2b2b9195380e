"""The three objectives on a language-model policy's turns: GRPO, SRPO and TeamTR's pieces.

All three share the group-relative advantage: the `G` episodes of one start state are
compared by team return, `A = (R - mean) / (std + eps)`, and every turn of an episode
carries its episode's advantage (as `baselines/grpo.py` does for MLP policies). A turn's
log-ratio and its KL to the starting model come from its kind's `TurnTerms`: with
`--decoding loglik` (`LikelihoodTerms`) the log-ratio of the chosen name and the exact KL
over the turn's legal actions, since the policy's whole distribution over them is computed
anyway; with `--decoding generate` (`generation.CompletionTerms`) the log-ratio of the
sampled reply and a KL estimated on its tokens.

- GRPO: one clipped ratio per turn.
- SRPO: the seats acting in one step of one episode form a set of `K`; the set's log-ratio
  is the sum of its members' divided by `sqrt(K)` and is clipped once (as
  `baselines/srpo.py`). Minibatches hold whole sets.
- TeamTR: GRPO's loss on one seat's turns at a time; `kl_before_after` measures how far a
  seat's update moved its own turns, for the trust region the trainer enforces.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import numpy as np
import torch

from llm_bridge.finetune.policy import LanguagePolicy, Turn

ADVANTAGE_EPS = 1e-6


def group_advantages(returns: np.ndarray, group_size: int) -> np.ndarray:
    """Per episode, its return against its group's (episodes `g*G .. g*G + G - 1`)."""
    grouped = np.asarray(returns, np.float64).reshape(-1, group_size)
    centred = grouped - grouped.mean(axis=1, keepdims=True)
    return (centred / (grouped.std(axis=1, keepdims=True) + ADVANTAGE_EPS)).reshape(-1)


def clipped_surrogate(log_ratio: torch.Tensor, advantages: torch.Tensor, clip: float):
    """PPO's pessimistic term per sample, as a loss (to minimise)."""
    ratio = torch.exp(log_ratio)
    return -torch.minimum(ratio * advantages, ratio.clamp(1 - clip, 1 + clip) * advantages)


def exact_kl(log_p: torch.Tensor, log_q: torch.Tensor) -> torch.Tensor:
    """KL(p || q) per row over the entries where p is defined (not -inf)."""
    legal = torch.isfinite(log_p)
    # -inf replaced before the product, not after: a masked NaN still poisons gradients.
    log_p = torch.where(legal, log_p, torch.zeros_like(log_p))
    log_q = torch.where(legal, log_q, torch.zeros_like(log_q))
    return torch.where(legal, log_p.exp() * (log_p - log_q), torch.zeros_like(log_p)).sum(-1)


def padded(rows: Sequence[np.ndarray], width: int) -> torch.Tensor:
    """Rows of per-action log-probabilities, -inf beyond each row's own actions."""
    out = np.full((len(rows), width), -np.inf)
    for r, row in enumerate(rows):
        out[r, : len(row)] = row
    return torch.as_tensor(out, dtype=torch.float32)


class TurnTerms(Protocol):
    """What the objectives need of a kind of turn (`--decoding`)."""

    def reference(self, policy: LanguagePolicy, turns: Sequence[Any], batch: int) -> np.ndarray:
        """A row per turn of what the starting model (adapters off) says of it."""
        ...

    def per_turn(
        self, policy: LanguagePolicy, turns: Sequence[Any], reference: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Per turn, log(active policy / rollout policy) of what it played, with gradients,
        and its KL(active || start) (`reference`: those turns' rows)."""
        ...

    def kl_before_after(self, policy: LanguagePolicy, turns: Sequence[Any], batch: int) -> float:
        """Mean over `turns` of KL(rollout policy || active adapter now)."""
        ...


class LikelihoodTerms:
    """`--decoding loglik`: exact, over each turn's legal actions."""

    def reference(self, policy: LanguagePolicy, turns: Sequence[Turn], batch: int) -> np.ndarray:
        return policy.reference_log_probs(turns, batch)

    def per_turn(
        self, policy: LanguagePolicy, turns: Sequence[Turn], reference: np.ndarray
    ) -> tuple[torch.Tensor, torch.Tensor]:
        log_probs = policy.log_probs(turns)
        chosen = log_probs[torch.arange(len(turns)), torch.tensor([t.choice for t in turns])]
        old = torch.tensor([t.log_probs[t.choice] for t in turns], dtype=torch.float32)
        kl = exact_kl(log_probs, torch.as_tensor(reference[:, : log_probs.shape[1]]))
        return chosen - old, kl

    def kl_before_after(self, policy: LanguagePolicy, turns: Sequence[Turn], batch: int) -> float:
        total = 0.0
        with torch.no_grad():
            for start in range(0, len(turns), batch):
                part = turns[start : start + batch]
                now = policy.log_probs(part)
                before = padded([t.log_probs for t in part], now.shape[1])
                total += float(exact_kl(before, now).sum())
        return total / max(len(turns), 1)


def turn_loss(
    terms: TurnTerms,
    policy: LanguagePolicy,
    turns: Sequence[Any],
    advantages: np.ndarray,
    reference: np.ndarray,
    clip: float,
    kl_coef: float,
    setwise: bool,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The loss of one minibatch (`advantages` and `reference` row per turn); with `setwise`,
    SRPO's one clipped term per set of turns taken in the same step of the same episode."""
    log_ratio, kl = terms.per_turn(policy, turns, reference)
    gains = torch.as_tensor(advantages, dtype=torch.float32)
    if setwise:
        keys = [(t.episode, t.step) for t in turns]
        index = {key: i for i, key in enumerate(dict.fromkeys(keys))}
        members = torch.tensor([index[key] for key in keys])
        count = len(index)
        sizes = torch.zeros(count).index_add(0, members, torch.ones(len(turns)))
        set_log_ratio = torch.zeros(count).index_add(0, members, log_ratio) / sizes.sqrt()
        # Every member of a set holds its episode's advantage.
        set_gains = torch.zeros(count).index_add(0, members, gains) / sizes
        surrogate = clipped_surrogate(set_log_ratio, set_gains, clip).mean()
    else:
        surrogate = clipped_surrogate(log_ratio, gains, clip).mean()
    kl = kl.mean()
    loss = surrogate + kl_coef * kl
    return loss, {
        "surrogate": surrogate.item(),
        "kl_to_start": kl.item(),
        "clipped": float(((log_ratio.abs() > np.log1p(clip)).float()).mean()),
    }


def minibatches(
    turns: Sequence[Any], size: int, sampler: np.random.Generator, setwise: bool
) -> Iterator[list[int]]:
    """Turn indices in a random order, `size` at a time; with `setwise`, whole sets (a set
    larger than `size` is a minibatch of its own)."""
    if not setwise:
        order = sampler.permutation(len(turns))
        for start in range(0, len(order), size):
            yield order[start : start + size].tolist()
        return
    sets: dict[tuple[int, int], list[int]] = {}
    for index, turn in enumerate(turns):
        sets.setdefault((turn.episode, turn.step), []).append(index)
    groups = list(sets.values())
    batch: list[int] = []
    for g in sampler.permutation(len(groups)):
        if batch and len(batch) + len(groups[g]) > size:
            yield batch
            batch = []
        batch += groups[g]
    if batch:
        yield batch
