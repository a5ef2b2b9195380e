"""The local transformers backend, on a tiny randomly initialised model built here (and saved
and loaded back through `from_pretrained`)."""

from __future__ import annotations

import asyncio

import pytest

transformers = pytest.importorskip(
    "transformers", reason="transformers is not installed (optional extra: pip install -e '.[hf]')"
)
torch = pytest.importorskip("torch", reason="torch is not installed (optional extra)")

from llm_bridge.clients.hf_backend import HFBackend, HFConfig  # noqa: E402


@pytest.fixture(scope="module")
def tiny():
    """A one-layer GPT-2 with a character-level tokenizer: no downloads."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    characters = [chr(code) for code in range(32, 127)] + ["\n"]
    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2} | {c: i + 3 for i, c in enumerate(characters)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )
    torch.manual_seed(0)
    config = transformers.GPT2Config(
        vocab_size=len(vocab), n_positions=8192, n_embd=16, n_layer=1, n_head=2,
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
