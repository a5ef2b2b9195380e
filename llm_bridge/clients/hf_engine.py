"""The transformers backend's inference: batched forwards that compute only what no earlier
request computed, and score candidate continuations in the same forward.

An agent's chat grows as a prefix of itself from one step to the next (the system prompt,
then each observation and reply), so nearly every token of a request was already run
through the model for an earlier one. `PrefixStore` keeps the keys and values (the KV
cache) of recent token sequences; a request starts from the longest stored prefix of its
tokens, and only the rest is computed: about the newest observation and reply, instead of
the whole chat. The system prompt every seat shares is one such prefix.

`Engine.forward` runs one batch of rows, each its own past (a stored prefix) plus new
tokens, in one call of the model: pasts are left-padded to one length and new tokens
right-padded, and the attention mask hides the padding, with each row's token positions
given explicitly so that its positions are the ones an unpadded run would use. Besides
the new tokens a row may carry `branches`, continuations scored side by side (the legal
action names): each branch sees the past, the new tokens and itself, not the other
branches (a 4D attention mask), so the log-likelihood of every legal action costs one
forward for the whole batch. `Engine.generate` continues a batch token by token from
such a forward, with a caller's rule for choosing and stopping.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

PRIME_MIN_TOKENS = 16  # a shared prefix worth computing on its own first
PADDING_SLACK = 1.5  # a batch of rows may hold this many token slots per real token
Layers = list[tuple[torch.Tensor, torch.Tensor]]  # per layer: keys, values (1, heads, T, dim)


def _common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a), len(b))
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if differ.size else n


class PrefixStore:
    """The KV caches of recently computed token sequences, found by longest common prefix;
    least recently used first out once they hold more than `max_bytes`."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._entries: OrderedDict[int, tuple[np.ndarray, Layers]] = OrderedDict()
        self._bytes = 0
        self._next_id = 0
        self.hit_tokens = 0  # tokens of requests served from the store
        self.computed_tokens = 0  # tokens computed by the model

    def lookup(self, tokens: np.ndarray) -> tuple[int, Layers | None]:
        """The longest stored prefix of `tokens`: its length and its KV cache (views)."""
        best_id, best = None, 0
        for entry_id, (stored, _) in self._entries.items():
            common = _common_prefix(stored, tokens)
            if common > best:
                best_id, best = entry_id, common
        # A request always computes its last token, whose logits it needs.
        best = min(best, len(tokens) - 1)
        if best_id is None or best <= 0:
            return 0, None
        self._entries.move_to_end(best_id)
        layers = self._entries[best_id][1]
        return best, [(k[:, :, :best], v[:, :, :best]) for k, v in layers]

    def store(self, tokens: np.ndarray, layers: Layers) -> None:
        """Keep `tokens`' cache; a stored sequence it extends is dropped (it holds it all)."""
        for entry_id, (stored, _) in list(self._entries.items()):
            if len(stored) <= len(tokens) and _common_prefix(stored, tokens) == len(stored):
                self._drop(entry_id)
        size = sum(k.nbytes + v.nbytes for k, v in layers)
        self._entries[self._next_id] = (tokens, layers)
        self._next_id += 1
        self._bytes += size
        while self._bytes > self.max_bytes and len(self._entries) > 1:
            self._drop(next(iter(self._entries)))

    def _drop(self, entry_id: int) -> None:
        _, layers = self._entries.pop(entry_id)
        self._bytes -= sum(k.nbytes + v.nbytes for k, v in layers)

    def __len__(self) -> int:
        return len(self._entries)


@dataclass
class Row:
    """One request of a batch: its whole token sequence so far, and branches to score."""

    tokens: np.ndarray
    branches: Sequence[Sequence[int]] = ()
    past: int = field(default=0, init=False)  # tokens served from the store
    cache: Layers | None = field(default=None, init=False)


@dataclass
class Forward:
    """What one batched forward left: per row, the log-probabilities of the next token and
    of each branch; and the padded cache, mask and positions to continue from."""

    next_logprobs: torch.Tensor  # (rows, vocab) after each row's last token
    branch_logprobs: list[list[float]]  # per row, per branch: the sum over its tokens
    cache: Any
    mask: torch.Tensor  # (rows, cached length): which cached positions each row attends to
    positions: torch.Tensor  # (rows,): the position of each row's next token


@dataclass
class Packed:
    """A batch of rows laid out for one forward: each row's new tokens, then its branches."""

    input_ids: torch.Tensor  # (rows, width)
    positions: torch.Tensor  # (rows, width): each token's position in its own row
    attend: torch.Tensor  # (rows, width, past + width): query q of row r sees key k
    predictors: list[tuple[int, int, int, int]]  # row, branch, query, the token it predicts
    spans: list[int]  # per row, its new tokens (before its branches)


def pack(rows: Sequence[Row], past: int, pad: int) -> Packed:
    """Lay out `rows` (each with `row.past` tokens already cached, left-padded to `past`) for
    one forward: every branch sees its row's past and new tokens and itself, not the other
    branches; padding sees only itself."""
    spans = [len(row.tokens) - row.past for row in rows]
    width = max(
        span + sum(len(b) for b in row.branches) for row, span in zip(rows, spans, strict=True)
    )
    count = len(rows)
    input_ids = torch.full((count, width), pad, dtype=torch.long)
    positions = torch.zeros((count, width), dtype=torch.long)
    attend = torch.zeros((count, width, past + width), dtype=torch.bool)
    predictors: list[tuple[int, int, int, int]] = []
    for r, (row, span) in enumerate(zip(rows, spans, strict=True)):
        new = torch.as_tensor(row.tokens[row.past :], dtype=torch.long)
        input_ids[r, :span] = new
        positions[r, :span] = torch.arange(row.past, row.past + span)
        attend[r, :, past - row.past : past] = True  # the row's own past
        causal = torch.ones((span, span), dtype=torch.bool).tril()
        attend[r, :span, past : past + span] = causal
        at = span
        for b, branch in enumerate(row.branches):
            size = len(branch)
            input_ids[r, at : at + size] = torch.as_tensor(list(branch), dtype=torch.long)
            positions[r, at : at + size] = torch.arange(size) + len(row.tokens)
            attend[r, at : at + size, past : past + span] = True
            own = torch.ones((size, size), dtype=torch.bool).tril()
            attend[r, at : at + size, past + at : past + at + size] = own
            for j, token in enumerate(branch):
                predictors.append((r, b, span - 1 if j == 0 else at + j - 1, int(token)))
            at += size
        # Padding queries see themselves, so that no row of the mask is empty.
        for q in range(at, width):
            attend[r, q, past + q] = True
    return Packed(input_ids, positions, attend, predictors, spans)


class Engine:
    """A causal language model and its tokenizer, run over rows that share stored prefixes."""

    def __init__(self, model: Any, pad_token_id: int, cache_bytes: int):
        self.model = model
        self.pad = pad_token_id
        self.store = PrefixStore(cache_bytes)

    def _head(self, hidden: torch.Tensor) -> torch.Tensor:
        return torch.log_softmax(self.model.get_output_embeddings()(hidden).float(), dim=-1)

    def score(self, rows: list[Row]) -> list[list[float]]:
        """Per row, the log-likelihood of each of its branches after its tokens."""
        scores: list[list[float]] = [[] for _ in rows]
        for group in self._groups(rows):
            state = self._forward([rows[r] for r in group])
            for r, branch_scores in zip(group, state.branch_logprobs, strict=True):
                scores[r] = branch_scores
        return scores

    def _groups(self, rows: list[Row]) -> list[list[int]]:
        """Find each row's stored prefix, then batch rows of like length together: a batch
        is as wide as its longest row, and a row that recomputes its chat (after its history
        window dropped turns) would make every other row of its batch pad to its width."""
        self._prime(rows)
        for row in rows:
            row.past, row.cache = self.store.lookup(row.tokens)
        width = [len(row.tokens) - row.past + sum(len(b) for b in row.branches) for row in rows]
        groups: list[list[int]] = []
        for r in sorted(range(len(rows)), key=lambda r: -width[r]):
            group = groups[-1] if groups else None
            # The widest row comes first: the group's slots are its width times its rows.
            if group and width[group[0]] * (len(group) + 1) <= PADDING_SLACK * (
                sum(width[g] for g in group) + width[r]
            ):
                group.append(r)
            else:
                groups.append([r])
        return groups

    @torch.no_grad()
    def _forward(self, rows: list[Row]) -> Forward:
        """Compute every row's tokens past its stored prefix (found by `_groups`), and its
        branches, in one call of the model."""
        past = max(row.past for row in rows)
        packed = pack(rows, past, self.pad)
        spans, count = packed.spans, len(rows)
        input_ids, positions, attend, predictors = (
            packed.input_ids, packed.positions, packed.attend, packed.predictors
        )  # fmt: skip
        cache = self._padded_cache(rows, past)
        hidden = self.model.base_model(
            input_ids=input_ids,
            attention_mask=attend[:, None],
            position_ids=positions,
            cache=cache,
            use_cache=True,
        ).last_hidden_state
        self.store.computed_tokens += sum(spans)
        self.store.hit_tokens += sum(row.past for row in rows)
        last = torch.tensor([span - 1 for span in spans])
        next_logprobs = self._head(hidden[torch.arange(count), last])
        branch_logprobs = [[0.0] * len(row.branches) for row in rows]
        if predictors:
            index = torch.tensor([(r, q) for r, _, q, _ in predictors])
            scores = self._head(hidden[index[:, 0], index[:, 1]])
            tokens = torch.tensor([token for _, _, _, token in predictors])
            picked = scores[torch.arange(len(predictors)), tokens].tolist()
            for (r, b, _, _), value in zip(predictors, picked, strict=True):
                branch_logprobs[r][b] += value
        # Keep each row's past and new tokens (not its branches) for later requests.
        for r, (row, span) in enumerate(zip(rows, spans, strict=True)):
            layers = [
                (layer.keys[r : r + 1, :, past - row.past : past + span].clone(),
                 layer.values[r : r + 1, :, past - row.past : past + span].clone())
                for layer in cache.layers
            ]  # fmt: skip
            self.store.store(row.tokens, layers)
        mask = attend[torch.arange(count), last]  # what each row's last token saw
        return Forward(
            next_logprobs=next_logprobs,
            branch_logprobs=branch_logprobs,
            cache=cache,
            mask=mask,
            positions=torch.tensor([len(row.tokens) for row in rows]),
        )

    def _prime(self, rows: list[Row]) -> None:
        """Compute once, first, a prefix that several rows share and the store lacks (the
        system prompt, at a run's first step), instead of once in every row."""
        if len(rows) < 2:
            return
        shared = min(len(row.tokens) for row in rows) - 1
        for row in rows[1:]:
            shared = min(shared, _common_prefix(rows[0].tokens, row.tokens))
        stored, _ = self.store.lookup(rows[0].tokens[: shared + 1])
        if shared - stored >= PRIME_MIN_TOKENS:
            row = Row(rows[0].tokens[:shared])
            row.past, row.cache = self.store.lookup(row.tokens)
            self._forward([row])

    def _padded_cache(self, rows: list[Row], past: int) -> Any:
        from transformers import DynamicCache

        if past == 0:
            return DynamicCache(config=self.model.config)
        template = next(row.cache for row in rows if row.cache is not None)
        layers = []
        for index, (keys, values) in enumerate(template):
            shape = (len(rows), keys.shape[1], past, keys.shape[3])
            padded_keys = keys.new_zeros(shape)
            padded_values = values.new_zeros(shape)
            for r, row in enumerate(rows):
                if row.past:
                    row_keys, row_values = row.cache[index]
                    padded_keys[r, :, past - row.past :] = row_keys[0]
                    padded_values[r, :, past - row.past :] = row_values[0]
            layers.append((padded_keys, padded_values))
        return DynamicCache(ddp_cache_data=layers, config=self.model.config)

    def generate(
        self,
        rows: list[Row],
        max_new_tokens: int,
        choose: Callable[[int, list[int], torch.Tensor], int | None],
    ) -> list[list[int]]:
        """Tokens generated after each row: `choose(row, generated, logprobs)` gives the next
        token, or None to end that row there (one forward per batch of like rows a step)."""
        generated: list[list[int]] = [[] for _ in rows]
        for group in self._groups(rows):
            replies = self._generate([rows[r] for r in group], max_new_tokens, choose, group)
            for r, reply in zip(group, replies, strict=True):
                generated[r] = reply
        return generated

    @torch.no_grad()
    def _generate(
        self,
        rows: list[Row],
        max_new_tokens: int,
        choose: Callable[[int, list[int], torch.Tensor], int | None],
        ids: list[int],
    ) -> list[list[int]]:
        state = self._forward(rows)
        generated: list[list[int]] = [[] for _ in rows]
        live = [True] * len(rows)
        logprobs, mask, positions = state.next_logprobs, state.mask, state.positions
        for count in range(1, max_new_tokens + 1):
            step = torch.full((len(rows), 1), self.pad, dtype=torch.long)
            for r in range(len(rows)):
                token = choose(ids[r], generated[r], logprobs[r]) if live[r] else None
                live[r] = token is not None
                if token is not None:
                    generated[r].append(token)
                    step[r, 0] = token
            if count == max_new_tokens or not any(live):
                break
            # A finished row feeds padding that no query sees; its own query still sees its
            # earlier tokens, so no row of the mask is empty.
            mask = torch.cat([mask, torch.tensor(live)[:, None]], dim=1)
            hidden = self.model.base_model(
                input_ids=step,
                attention_mask=mask[:, None, None, :],
                position_ids=positions[:, None],
                cache=state.cache,
                use_cache=True,
            ).last_hidden_state
            self.store.computed_tokens += sum(live)
            logprobs = self._head(hidden[:, -1])
            positions = positions + torch.tensor(live, dtype=torch.long)
        return generated
