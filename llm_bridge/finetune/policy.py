"""A language model as a policy over legal action names, with LoRA adapters to train.

The policy of a turn is the `--decoding loglik` head of the transformers backend: each legal
name is scored by the model's log-likelihood of `<action>NAME</action>` after the chat, and
the policy is the softmax of those scores over the legal names, at a temperature.
Log-ratios between two versions of the model are therefore exact, and no turn goes
unparsed. (With `--decoding generate` a turn is a sampled reply instead: `generation.py`,
which scores replies with the same one-forward `branch_logits`.)

Adapters (peft's LoRA) start as zero updates, so the starting model is the base model and
the reference of the KL penalty is the base model with its adapters switched off. GRPO and
SRPO train one adapter that every seat shares; TeamTR one per seat (`seat_0`, `seat_1`, ...).

Rollouts score turns without gradients through `hf_engine.Engine`, which reuses the keys and
values of prefixes it computed before (the shared system prompt); a fresh engine serves each
rollout, since the cached values belong to the weights that computed them. Training recomputes
the chosen turns with gradients in one forward per minibatch: the prefix every row shares is
run once and its keys and values are shared by all rows, with gradients flowing through both.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from llm_bridge.clients.hf_backend import loaded_model, prompt_tokens, shared_prefix
from llm_bridge.clients.hf_engine import Engine, Row, pack
from llm_bridge.finetune.config import LoraConfig

# One budget for all of a rollout's scoring engines: TeamTR has one per seat, and with a
# budget each the five seats of N = 5 held five times the memory.
ENGINE_CACHE_BYTES = 1 << 30


@dataclass
class Turn:
    """One seat's decision: its tokens, its legal actions and what the rollout drew."""

    episode: int
    step: int
    seat: int
    tokens: np.ndarray  # the chat's tokens, up to and including "<action>"
    legal: np.ndarray  # the legal action indices, in the environment's order
    choice: int  # position of the played action in `legal`
    log_probs: np.ndarray  # the rollout policy's log-probability of each legal action


class LanguagePolicy:
    """A causal language model with LoRA adapters; one adapter is active at a time."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        action_names: Sequence[str],
        adapters: Sequence[str],
        lora: LoraConfig,
        temperature: float = 1.0,
    ):
        from peft import LoraConfig as PeftLoraConfig
        from peft import get_peft_model

        settings = PeftLoraConfig(
            r=lora.rank,
            lora_alpha=lora.alpha,
            lora_dropout=0.0,  # dropout would make the rollout's and the update's ratios differ
            target_modules=list(lora.target_modules),
            bias="none",
        )
        self.model = get_peft_model(model, settings, adapter_name=adapters[0])
        for name in adapters[1:]:
            self.model.add_adapter(name, settings)
        self.model.eval()  # no dropout anywhere; gradients still flow
        self.adapters = tuple(adapters)
        self.temperature = temperature
        self.tokenizer = tokenizer
        self.pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0
        encoded = [self._encode(f"<action>{name}</action>") for name in action_names]
        shared = shared_prefix(encoded)  # "<action>": part of the prompt, not of the score
        self.action_prefix = np.asarray(encoded[0][:shared], np.int64)
        self.branches = [tuple(tokens[shared:]) for tokens in encoded]
        self.use(adapters[0])

    @classmethod
    def load(
        cls,
        model: str,
        dtype: str,
        device: str,
        action_names: Sequence[str],
        adapters: Sequence[str],
        lora: LoraConfig,
        temperature: float = 1.0,
    ) -> LanguagePolicy:
        """The named model (as `--model` of `eval-llm --backend hf`), with fresh adapters."""
        import copy

        base, tokenizer = loaded_model(model, dtype, device, images=False)
        # The backend keeps its loaded model for later runs: adapters go on a copy.
        return cls(copy.deepcopy(base), tokenizer, action_names, adapters, lora, temperature)

    # ---- adapters --------------------------------------------------------------------------
    def use(self, adapter: str) -> None:
        """Make `adapter` the one that acts and trains."""
        self.model.set_adapter(adapter)
        self.active = adapter

    def parameters(self, adapter: str) -> list[torch.nn.Parameter]:
        """The trainable tensors of `adapter`, in a fixed order."""
        return list(self._named(adapter).values())

    def _named(self, adapter: str) -> dict[str, torch.nn.Parameter]:
        marker = f".{adapter}."
        named = self.model.named_parameters()
        return {name: p for name, p in named if "lora_" in name and marker in name}

    def adapter_state(self, adapter: str) -> dict[str, torch.Tensor]:
        return {name: p.detach().clone() for name, p in self._named(adapter).items()}

    def load_adapter_state(self, state: dict[str, torch.Tensor]) -> None:
        named = dict(self.model.named_parameters())
        with torch.no_grad():
            for name, value in state.items():
                named[name].copy_(value)

    def save(self, directory: Path, stamp: dict[str, Any]) -> None:
        """Every adapter in peft's format (`adapter_model.safetensors` per adapter), with
        `stamp` as its `provenance.json`: peft's `adapter_config.json` has no place for where
        the weights came from, and an adapter folder travels alone (`--hf-adapter`)."""
        self.model.save_pretrained(str(directory), selected_adapters=list(self.adapters))
        for adapter in self.adapters:  # peft writes each named adapter to its own folder
            (directory / adapter / "provenance.json").write_text(json.dumps(stamp, indent=2) + "\n")

    # ---- prompts ---------------------------------------------------------------------------
    def _encode(self, text: str) -> list[int]:
        return self.tokenizer(text, add_special_tokens=False)["input_ids"]

    def prompt_tokens(self, messages: list[dict[str, Any]]) -> np.ndarray:
        """The chat with the generation prompt, as the transformers backend asks it."""
        return prompt_tokens(self.tokenizer, messages)

    def chat_tokens(self, messages: list[dict[str, Any]]) -> np.ndarray:
        """The chat with the generation prompt, then `<action>`: the tokens every legal name
        continues."""
        return np.concatenate([self.prompt_tokens(messages), self.action_prefix])

    # ---- scoring ---------------------------------------------------------------------------
    def engine(self) -> Engine:
        """A scorer for one rollout of the active adapter (its cache belongs to these weights)."""
        budget = ENGINE_CACHE_BYTES // len(self.adapters)
        return Engine(self.model.get_base_model(), self.pad, budget)

    @torch.no_grad()
    def score(self, engine: Engine, tokens: list[np.ndarray], legal: list[np.ndarray]) -> list:
        """Per request, the log-probabilities of its legal actions (no gradients)."""
        rows = [
            Row(t, [self.branches[a] for a in actions])
            for t, actions in zip(tokens, legal, strict=True)
        ]
        scores = engine.score(rows)
        return [
            torch.log_softmax(torch.tensor(s, dtype=torch.float64) / self.temperature, 0).numpy()
            for s in scores
        ]

    def log_probs(self, turns: Sequence[Turn]) -> torch.Tensor:
        """`(turns, most legal actions)`: each turn's log-probabilities of its legal actions
        under the active adapter, with gradients; -inf past a turn's own legal actions."""
        rows = [Row(turn.tokens, [self.branches[a] for a in turn.legal]) for turn in turns]
        logits, predictors = self.branch_logits(rows)
        token_log_probs = torch.log_softmax(logits.float(), -1)
        picked = token_log_probs[
            torch.arange(len(predictors)),
            torch.tensor([token for _, _, _, token in predictors]),
        ]
        width = max(len(turn.legal) for turn in turns)
        scores = torch.zeros(len(turns), width, dtype=torch.float32)
        slot = torch.tensor([r * width + b for r, b, _, _ in predictors])
        scores = scores.flatten().index_add(0, slot, picked).view(len(turns), width)
        legal = torch.arange(width)[None] < torch.tensor([len(t.legal) for t in turns])[:, None]
        scores = scores.masked_fill(~legal, float("-inf"))
        return torch.log_softmax(scores / self.temperature, -1)

    def branch_logits(self, rows: list[Row]) -> tuple[torch.Tensor, list[tuple]]:
        """The logits before every token of every row's branches, under the active adapter
        and with gradients, and `pack`'s predictors (row, branch, query, token) in the same
        order. One forward: the prefix every row shares runs once, its keys and values
        shared by all rows."""
        prefix = _common_prefix_length([row.tokens for row in rows])
        trunk = self.model.get_base_model().base_model
        cache = None
        if prefix > 0:
            shared = torch.as_tensor(rows[0].tokens[:prefix], dtype=torch.long)[None]
            cache = trunk(input_ids=shared, use_cache=True).cache
        for row in rows:
            row.past = prefix
        packed = pack(rows, prefix, self.pad)
        if cache is not None:
            from transformers import DynamicCache

            layers = [
                (
                    layer.keys.expand(len(rows), -1, -1, -1),
                    layer.values.expand(len(rows), -1, -1, -1),
                )
                for layer in cache.layers
            ]
            cache = DynamicCache(ddp_cache_data=layers, config=self.model.config)
        hidden = trunk(
            input_ids=packed.input_ids,
            attention_mask=packed.attend[:, None],
            position_ids=packed.positions,
            cache=cache,
            use_cache=cache is not None,
        ).last_hidden_state
        index = torch.tensor([(r, q) for r, _, q, _ in packed.predictors])
        head = self.model.get_base_model().get_output_embeddings()
        return head(hidden[index[:, 0], index[:, 1]]), packed.predictors

    def reference_log_probs(self, turns: Sequence[Turn], batch: int) -> np.ndarray:
        """The starting model's log-probabilities (adapters off), padded as `log_probs`."""
        parts = []
        with torch.no_grad(), self.model.disable_adapter():
            for start in range(0, len(turns), batch):
                parts.append(self.log_probs(turns[start : start + batch]).numpy())
        width = max(part.shape[1] for part in parts)
        return np.concatenate(
            [np.pad(p, ((0, 0), (0, width - p.shape[1])), constant_values=-np.inf) for p in parts]
        )


def _common_prefix_length(sequences: Sequence[np.ndarray]) -> int:
    """The tokens all `sequences` start with, leaving each at least one of its own."""
    length = min(len(s) for s in sequences) - 1
    first = sequences[0]
    for other in sequences[1:]:
        differ = np.flatnonzero(first[:length] != other[:length])
        if differ.size:
            length = int(differ[0])
    return max(length, 0)
