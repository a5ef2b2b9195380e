"""The transformers backend's inference engine against the plain model: batched rows with
stored prefixes, padding and scored branches give the numbers of one unpadded forward
over each whole sequence, and generation gives `model.generate`'s greedy tokens."""

from __future__ import annotations

import numpy as np
import pytest

transformers = pytest.importorskip(
    "transformers", reason="transformers is not installed (optional extra: pip install -e '.[hf]')"
)
torch = pytest.importorskip("torch", reason="torch is not installed (optional extra)")

from llm_bridge.clients.hf_engine import Engine, PrefixStore, Row  # noqa: E402
from tests.tiny_lm import tiny_llama  # noqa: E402


@pytest.fixture(scope="module")
def model():
    return tiny_llama(transformers, torch)[0]


def _sequences(lengths, seed=0, vocab=90):
    generator = np.random.default_rng(seed)
    return [generator.integers(3, vocab, size=n) for n in lengths]


def _reference_scores(model, tokens, branches):
    """Each branch's log-likelihood after `tokens`, from one plain forward of the whole."""
    scores = []
    for branch in branches:
        sequence = torch.tensor(np.concatenate([tokens, branch]))[None]
        with torch.no_grad():
            logprobs = torch.log_softmax(model(sequence).logits[0].float(), -1)
        start = len(tokens) - 1
        scores.append(sum(float(logprobs[start + j, t]) for j, t in enumerate(branch)))
    return scores


BRANCHES = [[5, 6, 7], [8], [9, 10]]


def test_scores_equal_a_plain_forward_with_and_without_stored_prefixes(model):
    engine = Engine(model, pad_token_id=0, cache_bytes=1 << 30)
    first = _sequences([30, 47, 12])
    scores = engine.score([Row(tokens, BRANCHES) for tokens in first])
    for tokens, row_scores in zip(first, scores, strict=True):
        np.testing.assert_allclose(
            row_scores, _reference_scores(model, tokens, BRANCHES), rtol=1e-4, atol=1e-4
        )
    assert engine.store.hit_tokens == 0
    # Each conversation goes on: only its new tokens are computed, the numbers are the same.
    later = [
        np.concatenate([t, extra])
        for t, extra in zip(first, _sequences([9, 4, 20], 1), strict=True)
    ]
    computed = engine.store.computed_tokens
    scores = engine.score([Row(tokens, BRANCHES) for tokens in later])
    assert engine.store.computed_tokens - computed == 9 + 4 + 20
    assert engine.store.hit_tokens == 30 + 47 + 12
    for tokens, row_scores in zip(later, scores, strict=True):
        np.testing.assert_allclose(
            row_scores, _reference_scores(model, tokens, BRANCHES), rtol=1e-4, atol=1e-4
        )


def test_a_prefix_shared_by_a_batch_is_computed_once(model):
    engine = Engine(model, pad_token_id=0, cache_bytes=1 << 30)
    shared = _sequences([40])[0]
    rows = [Row(np.concatenate([shared, tail]), BRANCHES) for tail in _sequences([5, 6, 7], 2)]
    scores = engine.score(rows)
    assert engine.store.computed_tokens == 40 + 5 + 6 + 7
    for row, row_scores in zip(rows, scores, strict=True):
        np.testing.assert_allclose(
            row_scores, _reference_scores(model, row.tokens, BRANCHES), rtol=1e-4, atol=1e-4
        )


def test_rows_of_unlike_length_go_in_separate_batches(model, monkeypatch):
    engine = Engine(model, pad_token_id=0, cache_bytes=1 << 30)
    widths = []
    forward = engine._forward

    def counted(rows):
        widths.append(len(rows))
        return forward(rows)

    monkeypatch.setattr(engine, "_forward", counted)
    rows = [Row(tokens, BRANCHES) for tokens in _sequences([200, 10, 11, 12], 3)]
    scores = engine.score(rows)
    assert sorted(widths) == [1, 3]  # the long row alone; the three short ones together
    for row, row_scores in zip(rows, scores, strict=True):
        np.testing.assert_allclose(
            row_scores, _reference_scores(model, row.tokens, BRANCHES), rtol=1e-4, atol=1e-4
        )


def test_generation_equals_greedy_generate(model):
    engine = Engine(model, pad_token_id=0, cache_bytes=1 << 30)
    prompts = _sequences([25, 9, 16], 4)
    engine.score([Row(prompts[0][:20], BRANCHES)])  # a stored prefix for the first row

    def greedy(row, generated, logprobs):
        return int(torch.argmax(logprobs))

    replies = engine.generate([Row(tokens) for tokens in prompts], 7, greedy)
    for tokens, reply in zip(prompts, replies, strict=True):
        with torch.no_grad():
            output = model.generate(
                torch.tensor(tokens)[None], max_new_tokens=7, min_new_tokens=7, do_sample=False
            )
        assert reply == output[0, len(tokens) :].tolist()


def test_a_row_that_stops_leaves_the_others_unchanged(model):
    engine = Engine(model, pad_token_id=0, cache_bytes=1 << 30)
    prompts = _sequences([14, 18], 5)

    def first_stops_after_two(row, generated, logprobs):
        if row == 0 and len(generated) == 2:
            return None
        return int(torch.argmax(logprobs))

    replies = engine.generate([Row(tokens) for tokens in prompts], 6, first_stops_after_two)
    alone = Engine(model, pad_token_id=0, cache_bytes=1 << 30).generate(
        [Row(prompts[1])], 6, lambda row, generated, logprobs: int(torch.argmax(logprobs))
    )
    assert len(replies[0]) == 2
    assert replies[1] == alone[0]


def test_the_store_drops_what_a_longer_entry_holds_and_the_least_recently_used():
    def layers(length):
        return [(torch.zeros(1, 1, length, 4), torch.zeros(1, 1, length, 4))]

    per_token = 2 * 4 * 4  # keys and values, 4 floats each
    store = PrefixStore(max_bytes=100 * per_token)
    store.store(np.arange(10), layers(10))
    store.store(np.arange(20), layers(20))  # extends the first, which it replaces
    assert len(store) == 1
    assert store.lookup(np.arange(30))[0] == 20
    store.store(np.arange(100, 160), layers(60))
    store.store(np.arange(200, 230), layers(30))  # over 100 tokens: the oldest goes
    assert len(store) == 2
    assert store.lookup(np.arange(15))[0] == 0
    # A request always computes its last token: a stored copy of it serves the rest.
    length, cache = store.lookup(np.arange(100, 160))
    assert length == 59 and cache[0][0].shape[2] == 59
