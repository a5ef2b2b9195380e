"""A tiny causal language model built in the test process (no downloads): a two-layer Llama
(rotary positions and grouped keys and values, as SmolLM2) with a character-level tokenizer
(or a word-level one fitted to given texts) and a chat template, randomly initialised from a
fixed seed."""

from __future__ import annotations

from typing import Any

CHAT_TEMPLATE = (
    "{% for m in messages %}<{{ m['role'] }}>{{ m['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}<assistant>{% endif %}"
)


def character_tokenizer(transformers: Any, chat_template: str | None = CHAT_TEMPLATE) -> Any:
    """One token a printable character (and newline); pad 0, end 1."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    characters = [chr(code) for code in range(32, 127)] + ["\n"]
    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2} | {c: i + 3 for i, c in enumerate(characters)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")
    core.decoder = decoders.Fuse()
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )
    tokenizer.chat_template = chat_template
    return tokenizer


def word_tokenizer(transformers: Any, texts: list[str]) -> Any:
    """One token a word of `texts`, a tag or a punctuation mark; spaces dropped; pad 0, end 1.

    Every action name is one token, so the likelihood head starts near uniform over them
    (under characters a short name would be far likelier than a long one)."""
    import re

    from tokenizers import Regex, Tokenizer, models, pre_tokenizers

    pattern = r"</?\w+>|\w+|[^\w\s]"
    roles = "<system> <user> <assistant>"  # the chat template's tags
    words = sorted({piece for text in [*texts, roles] for piece in re.findall(pattern, text)})
    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2} | {w: i + 3 for i, w in enumerate(words)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.WhitespaceSplit(), pre_tokenizers.Split(Regex(pattern), "isolated")]
    )
    tokenizer = transformers.PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


def tiny_llama(
    transformers: Any,
    torch: Any,
    seed: int = 0,
    tokenizer: Any = None,
    weight_scale: float = 8.0,
) -> tuple[Any, Any]:
    """(model, tokenizer): a 2-layer Llama of width 32, in eval mode; the character tokenizer
    unless one is given."""
    tokenizer = tokenizer or character_tokenizer(transformers)
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(
        vocab_size=len(tokenizer), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
        num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
        bos_token_id=1, eos_token_id=1, pad_token_id=0, tie_word_embeddings=True,
    )  # fmt: skip
    model = transformers.LlamaForCausalLM(config).eval()
    # Larger weights than the initialisation's: sharper, more varied next-token choices.
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(weight_scale)
    return model, tokenizer


def dining_llama(transformers: Any, torch: Any, options: Any) -> tuple[Any, Any]:
    """(model, tokenizer): a tiny Llama whose words are those of the dining prompts at
    `options` (the system prompt, the first observations, the action tags), weights three
    times the initialisation's so that its likelihoods differ from state to state."""
    import dataclasses

    import jax
    import numpy as np

    import alemlite
    from llm_bridge.finetune.rollout import Table

    spec = alemlite.spec("dining")
    table = Table(spec, options, dataclasses.replace(spec.prompt_defaults, history=0))
    episodes, seats = 4, table.size
    state, _ = table.program.reset(jax.vmap(jax.random.PRNGKey)(np.arange(episodes)))
    _, mask = jax.device_get(table.program.view(state))
    rows, columns = np.meshgrid(np.arange(episodes), np.arange(seats), indexing="ij")
    observations = table.renderer.observations(
        jax.device_get(state), jax.device_get(table.params), rows.ravel(), columns.ravel(),
        np.full((episodes, seats), "", dtype=object), mask, table.prompt,
    )  # fmt: skip
    actions = [f"<action>{name}</action>" for name in table.action_names]
    tokenizer = word_tokenizer(transformers, [table.system_prompt, *observations, *actions])
    return tiny_llama(transformers, torch, tokenizer=tokenizer, weight_scale=3.0)
