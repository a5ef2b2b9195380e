"""The local transformers backend, on a tiny randomly initialised model built here (and saved
and loaded back through `from_pretrained`)."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

transformers = pytest.importorskip(
    "transformers", reason="transformers is not installed (optional extra: pip install -e '.[hf]')"
)
torch = pytest.importorskip("torch", reason="torch is not installed (optional extra)")

from llm_bridge.clients.hf_backend import HFBackend, HFConfig  # noqa: E402
from tests.tiny_lm import character_tokenizer  # noqa: E402


@pytest.fixture(scope="module")
def tiny():
    """A one-layer GPT-2 with a character-level tokenizer: no downloads."""
    tokenizer = character_tokenizer(transformers, chat_template=None)
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=len(tokenizer), n_positions=8192, n_embd=16, n_layer=1, n_head=2,
        bos_token_id=1, eos_token_id=1, pad_token_id=0,
    )  # fmt: skip
    return transformers.GPT2LMHeadModel(config).eval(), tokenizer


def test_concurrent_requests_are_generated_in_batches(tiny):
    model, tokenizer = tiny
    backend = HFBackend(HFConfig("tiny", max_new_tokens=5, batch_size=4), model, tokenizer)

    async def ask():
        requests = [[{"role": "user", "content": "hi " * (i + 1)}] for i in range(6)]
        return await asyncio.gather(*(backend.complete(messages) for messages in requests))

    completions = asyncio.run(ask())
    assert backend.generate_calls == 2  # 6 requests, batches of 4
    assert all(not c.failed and isinstance(c.text, str) for c in completions)
    assert all(0 < c.completion_tokens <= 5 for c in completions)
    prompt_lengths = [c.prompt_tokens for c in completions]
    assert prompt_lengths == sorted(prompt_lengths) and len(set(prompt_lengths)) == 6


def test_a_dining_evaluation_runs_on_the_local_model(tiny, tmp_path):
    import alemlite
    from alemlite.core.prompting import PromptOptions
    from alemlite.envs.dining.prompting import DiningRenderer
    from llm_bridge.agents import LLMAgent
    from llm_bridge.runner import RunConfig, run_evaluation

    model, tokenizer = tiny
    backend = HFBackend(HFConfig("tiny", max_new_tokens=4, batch_size=16), model, tokenizer)
    env = alemlite.make("dining", num_philosophers=3, max_steps=3)
    report = run_evaluation(
        env,
        DiningRenderer(),
        [LLMAgent(backend, "tiny")] * 3,
        PromptOptions(history=1),
        RunConfig(episodes=2, out=tmp_path, progress=False),
    )
    steps = max(report["episodes"]["episode_length"])
    assert backend.generate_calls == steps  # one batch per step: 2 tables x 3 seats
    assert report["usage"]["requests"] == 3 * sum(report["episodes"]["episode_length"])
    assert report["usage"]["failed_requests"] == 0
    assert 0.0 <= report["usage"]["parse_rate"] <= 1.0


def _replies(backend, requests, seed=None):
    async def ask():
        return await asyncio.gather(*(backend.complete(m, seed=seed) for m in requests))

    return [completion.text for completion in asyncio.run(ask())]


def test_a_seed_makes_sampling_reproducible(tiny):
    model, tokenizer = tiny
    requests = [[{"role": "user", "content": f"seat {seat}"}] for seat in range(3)]

    def sample(seed):
        config = HFConfig("tiny", max_new_tokens=12, temperature=1.0, batch_size=2, seed=seed)
        return _replies(HFBackend(config, model, tokenizer), requests)

    first = sample(seed=7)
    torch.rand(5)  # the process-wide generator moves on; the seeded replies do not
    state = torch.get_rng_state()
    again = sample(seed=7)
    assert again == first
    assert torch.equal(torch.get_rng_state(), state), "seeding must leave the global stream"
    assert sample(seed=8) != first
    assert len(set(first)) == 3  # each prompt its own draws
    # A seed may come with each request instead (the backend protocol's `seed`).
    unseeded = HFConfig("tiny", max_new_tokens=12, temperature=1.0, batch_size=2)
    assert _replies(HFBackend(unseeded, model, tokenizer), requests, seed=7) == first


CHAT_TEMPLATE = (
    "{% for m in messages %}[{{ m['role'] }}] {{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}[assistant] {% endif %}"
)


def test_a_saved_model_loads_through_from_pretrained(tiny, tmp_path):
    model, tokenizer = tiny
    tokenizer.chat_template = CHAT_TEMPLATE
    model.save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    tokenizer.chat_template = None  # the in-memory copy keeps the plain format of other tests
    loaded = HFBackend(HFConfig(str(tmp_path), max_new_tokens=6))
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]

    async def ask():
        await loaded.check()
        return await loaded.complete(messages)

    completion = asyncio.run(ask())
    assert not completion.failed and completion.server == "local:cpu"
    # One token a character: the prompt is the template's rendering, not the plain format.
    assert completion.prompt_tokens == len("[system] Be brief.\n[user] hi\n[assistant] ")
    assert type(loaded._model) is type(model)
    # The saved weights, not a fresh initialisation: the same greedy reply as the original
    # model given the same rendered prompt.
    prompt = tokenizer("[system] Be brief.\n[user] hi\n[assistant] ", return_tensors="pt")
    with torch.no_grad():
        output = model.generate(**prompt, max_new_tokens=6, do_sample=False, pad_token_id=0)
    expected = tokenizer.decode(output[0, prompt["input_ids"].shape[1] :], skip_special_tokens=True)
    assert completion.text == expected


# ---- the three ways to answer, on a tiny Llama with a chat template -----------------------
from llm_bridge.clients.hf_backend import reply_complete  # noqa: E402
from tests.tiny_lm import tiny_llama  # noqa: E402

NAMES = ["WAIT", "GRAB_LEFT", "GRAB_RIGHT", "RELEASE"]


@pytest.fixture(scope="module")
def llama():
    return tiny_llama(transformers, torch)


def _chats(count):
    return [
        [{"role": "system", "content": "Pick one."}, {"role": "user", "content": f"step {i}"}]
        for i in range(count)
    ]


def _ask(backend, chats, choices, seed=None):
    async def ask():
        return await asyncio.gather(
            *(
                backend.complete(chat, seed=seed, choices=legal)
                for chat, legal in zip(chats, choices, strict=True)
            )
        )

    return asyncio.run(ask())


def _full_scores(model, tokenizer, chat, names):
    """Each name's log-likelihood as `<action>NAME</action>` after the prompt, computed
    without the backend: one plain forward over the whole text per name."""
    prompt = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    scores = []
    for name in names:
        start = len(tokenizer(prompt + "<action>")["input_ids"])
        ids = tokenizer(prompt + f"<action>{name}</action>", return_tensors="pt")["input_ids"]
        with torch.no_grad():
            logprobs = torch.log_softmax(model(ids).logits[0].float(), -1)
        scores.append(sum(float(logprobs[i - 1, ids[0, i]]) for i in range(start, ids.shape[1])))
    return np.array(scores)


def test_loglik_plays_the_most_likely_legal_action_and_reports_its_probabilities(llama):
    model, tokenizer = llama
    backend = HFBackend(HFConfig("tiny", decoding="loglik"), model, tokenizer)
    chats = _chats(6)
    # Legal sets differ per request; a scorer that read another set would be caught here.
    legal = [NAMES, NAMES[:2], ["RELEASE", "WAIT"], NAMES[1:], ["GRAB_RIGHT"], NAMES]
    completions = _ask(backend, chats, legal)
    for chat, names, completion in zip(chats, legal, completions, strict=True):
        scores = _full_scores(model, tokenizer, chat, names)
        assert completion.mode == "loglik" and not completion.failed
        assert list(completion.choice_probs) == names
        expected = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()
        np.testing.assert_allclose(list(completion.choice_probs.values()), expected, atol=1e-4)
        assert completion.text == f"<action>{names[int(np.argmax(scores))]}</action>"
    # The scores must separate the names somewhere, or the argmax test above tests nothing.
    assert len({c.text for c in completions}) > 1


def test_loglik_samples_reproducibly_at_a_temperature(llama):
    model, tokenizer = llama
    backend = HFBackend(HFConfig("tiny", decoding="loglik", temperature=1e4), model, tokenizer)
    chats = _chats(12)
    legal = [NAMES] * len(chats)
    first = [c.text for c in _ask(backend, chats, legal, seed=3)]
    assert [c.text for c in _ask(backend, chats, legal, seed=3)] == first
    # (The tiny model is sure of its choices; a high temperature makes the draws vary.)
    draws = {tuple(c.text for c in _ask(backend, chats, legal, seed=s)) for s in range(4)}
    assert len(draws) > 1  # other seeds, other draws


def _greedy_in_names(model, tokenizer, chat, names):
    """Greedy decoding restricted to the names' tokens, one plain forward per token."""
    prompt = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
    ids = tokenizer(prompt)["input_ids"]
    encoded = [tokenizer(name)["input_ids"] for name in names]
    generated: list[int] = []
    while tuple(generated) not in {tuple(e) for e in encoded}:
        allowed = sorted({e[len(generated)] for e in encoded if e[: len(generated)] == generated})
        with torch.no_grad():
            logits = model(torch.tensor([ids + generated])).logits[0, -1]
        generated.append(max(allowed, key=lambda token: float(logits[token])))
    return tokenizer.decode(generated)


def test_constrained_generation_answers_with_the_best_legal_name(llama):
    model, tokenizer = llama
    backend = HFBackend(HFConfig("tiny", max_new_tokens=20), model, tokenizer)
    chats = _chats(5)
    legal = [NAMES, NAMES[2:], ["WAIT", "RELEASE"], NAMES[:3], NAMES]
    completions = _ask(backend, chats, legal)
    for chat, names, completion in zip(chats, legal, completions, strict=True):
        assert completion.mode == "constrained:logits" and not completion.cut_off
        assert completion.text in names
        assert completion.text == _greedy_in_names(model, tokenizer, chat, names)


@pytest.mark.parametrize(
    ("text", "done"),
    [
        ("<action>WAIT", False),
        ("<action>WAIT</action>", False),  # a message may follow
        ("<action>WAIT</action><mess", False),
        ("<action>WAIT</action><message>hi", False),
        ("<action>WAIT</action><message>hi</message>", False),
        ("<action>WAIT</action><message>hi</message> ok", True),
        ("<action>WAIT</action> because", True),
        ("<action>WAIT</action>\nI wait", True),
        ("I think <action>GRAB_LEFT</action><scratchpad>x</scratchpad>.", True),
    ],
)
def test_a_free_reply_is_complete_once_its_action_is(text, done):
    assert reply_complete(text) is done


def test_alike_requests_of_a_batch_draw_apart_and_reproducibly(llama):
    """Tables that start alike ask alike; their seats must not draw alike, or every episode
    of a seeded sampling run would be a copy of the first."""
    model, tokenizer = llama
    backend = HFBackend(HFConfig("tiny", decoding="loglik", temperature=1e4), model, tokenizer)
    chats = _chats(1) * 12
    first = [c.text for c in _ask(backend, chats, [NAMES] * 12, seed=5)]
    assert len(set(first)) > 1
    assert [c.text for c in _ask(backend, chats, [NAMES] * 12, seed=5)] == first
