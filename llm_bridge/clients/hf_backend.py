"""A local Hugging Face transformers chat model (optional extra: `pip install -e ".[hf]"`).

`--model` is a named model (`smollm2-135m`, see `llm_bridge.models`), a `.gguf` file, or
a transformers folder or id. Requests that arrive together (the runner asks every live
agent of a step at once) are answered in batches of `batch_size`, on a worker thread so
that the event loop stays free, through `llm_bridge.clients.hf_engine`: each request
computes only the tokens no earlier request computed (its chat's earlier turns and the
shared system prompt come from a KV cache), and a batch is one forward.

Three ways to answer, each its own `Completion.mode`:
- `free`: the model writes freely (greedy, or sampled at `temperature`) until its end
  token, until the reply holds a complete `<action>...</action>` with no message or
  scratchpad left open, or until `max_new_tokens` (then counted as cut off).
- `constrained:logits` (the runner passes the legal action names as `choices`): at each
  token only the tokens that continue a legal name are allowed, so the reply is one legal
  name, the action alone (the same contract as the OpenAI backend's constrained modes).
- `loglik` (`decoding="loglik"`): nothing is generated. Each legal name is scored by the
  model's log-likelihood of `<action>NAME</action>` after the prompt (the multiple-choice
  method of lm-evaluation-harness: the sum of the continuation's token log-probabilities),
  all names of all requests in one forward; the argmax is played, or at temperature > 0 a
  draw from the softmax of the scores over temperature. Never unparsed; the completion
  carries each legal name's probability (the softmax of the scores).

Sampling is reproducible: each request draws from its own generator, seeded from the
seed, the request's tokens and how many identical requests came before it in its batch
(so that episodes which start alike, as every dining table does, do not draw alike and
stay copies of each other). The same seed and requests give the same replies; the
process-wide generator is not touched.

Threads: torch computes on `threads` threads (default: the cores this process may use).
Its OpenMP threads meet at a barrier after every operation, so a forward of this model
passes thousands of barriers; where other processes hold the cores, each barrier waits
for a descheduled thread's next time slice, and a batch takes tens of times longer. On a
loaded machine, give fewer threads (`--hf-threads 1` has no barrier at all).

Image observations need a vision-language model: `check_images` refuses a model whose
config has no vision part, and otherwise loads it with its processor
(`AutoModelForImageTextToText`, `AutoProcessor`), whose chat template reads the OpenAI
image parts; those requests are generated freely with `model.generate`.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from alemlite.core.errors import require
from llm_bridge.clients.base import ChatMessages, Completion
from llm_bridge.models import resolve_model

Decoding = Literal["generate", "loglik"]
DECODINGS: tuple[str, ...] = ("generate", "loglik")
DTYPES = ("float32", "bfloat16", "float16", "auto")


@dataclass(frozen=True)
class HFConfig:
    model: str  # a named model, a .gguf file, a local model folder, or a transformers id
    max_new_tokens: int = 256
    temperature: float = 0.0  # 0: greedy decoding (loglik: the most likely action)
    batch_size: int = 16
    device: str = "cpu"
    dtype: str = "float32"
    seed: int | None = None  # sampling seed for every request that brings none of its own
    decoding: Decoding = "generate"
    threads: int | None = None  # torch's threads; None: the cores this process may use
    cache_gb: float = 4.0  # the most memory the KV caches of earlier requests may hold
    adapter: str | None = None  # a LoRA adapter folder (peft's format) merged into the model

    def __post_init__(self) -> None:
        require(
            self.max_new_tokens >= 1, f"max_new_tokens={self.max_new_tokens} must be at least 1"
        )
        require(self.temperature >= 0, f"temperature={self.temperature} must be 0 or more")
        require(self.batch_size >= 1, f"batch_size={self.batch_size} must be at least 1")
        require(
            self.decoding in DECODINGS,
            f"decoding={self.decoding!r} must be one of: {', '.join(DECODINGS)}",
        )
        require(self.dtype in DTYPES, f"dtype={self.dtype!r} must be one of: {', '.join(DTYPES)}")
        require(
            self.threads is None or self.threads >= 1,
            f"threads={self.threads} must be at least 1",
        )
        require(self.cache_gb >= 0, f"cache_gb={self.cache_gb} must be 0 or more")
        require(
            self.adapter is None or (Path(self.adapter) / "adapter_config.json").is_file(),
            f"hf_adapter={self.adapter} holds no adapter_config.json; give a LoRA adapter "
            "folder (a finetune run's best/policy)",
        )


def _processor_chat(messages: ChatMessages) -> ChatMessages:
    """OpenAI image parts as a transformers processor's chat template reads them."""
    return [
        {**message, "content": [_processor_part(part) for part in message["content"]]}
        if isinstance(message["content"], list)
        else message
        for message in messages
    ]


def _processor_part(part: dict[str, Any]) -> dict[str, Any]:
    if part.get("type") == "image_url":
        return {"type": "image", "url": part["image_url"]["url"]}
    return part


def _plain_chat(messages: ChatMessages) -> str:
    """For tokenizers without a chat template: one `role: content` line per message."""
    return "\n".join(f"{m['role']}: {m['content']}" for m in messages) + "\nassistant:"


def prompt_tokens(tokenizer: Any, messages: ChatMessages) -> np.ndarray:
    """The tokens of `messages` as the model is asked them: its chat template with the
    generation prompt (or plain `role: content` lines where it has none)."""
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    else:
        text = _plain_chat(messages)
    return np.asarray(tokenizer(text, add_special_tokens=False)["input_ids"], dtype=np.int64)


_OPTIONAL_TAGS = ("<message>", "<scratchpad>")


def reply_complete(text: str) -> bool:
    """Whether a free reply is done: it holds a complete action, no message or scratchpad is
    left open, and what follows the last closing tag is neither empty nor a tag beginning
    (the format lets a message follow the action)."""
    if "</action>" not in text:
        return False
    for tag in _OPTIONAL_TAGS:
        closing = tag.replace("<", "</")
        if text.rfind(tag) > text.rfind(closing):
            return False
    ends = [text.rfind(tag) + len(tag) for tag in ("</action>", "</message>", "</scratchpad>")]
    rest = text[max(ends) :].lstrip()
    return bool(rest) and not any(t.startswith(rest) or rest.startswith(t) for t in _OPTIONAL_TAGS)


@dataclass
class _Request:
    messages: ChatMessages
    seed: int | None
    choices: Sequence[str] | None
    future: asyncio.Future


class HFBackend:
    def __init__(self, config: HFConfig, model: Any = None, tokenizer: Any = None):
        self.config = config
        self.name = config.model if config.adapter is None else f"{config.model}+{config.adapter}"
        # `tokenizer`: the model's processor (tokenizer and image processor) in image mode.
        self._model, self._tokenizer = model, tokenizer
        self._engine: Any = None
        self._images = False  # set by check_images: prompts go through the processor
        self._pending: list[_Request] = []
        self._flush_scheduled = False
        self.generate_calls = 0  # batches answered

    # ---- loading ---------------------------------------------------------------------
    def _load(self) -> None:
        if self._engine is not None:
            return
        import torch

        torch.set_num_threads(self.config.threads or len(os.sched_getaffinity(0)))
        if self._model is None:
            self._model, self._tokenizer = loaded_model(
                self.config.model, self.config.dtype, self.config.device, self._images,
                self.config.adapter,
            )  # fmt: skip
        self._model.eval()
        tokenizer = self._text_tokenizer
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        from llm_bridge.clients.hf_engine import Engine

        self._engine = Engine(
            self._model, tokenizer.pad_token_id, int(self.config.cache_gb * (1 << 30))
        )

    @property
    def _text_tokenizer(self) -> Any:
        return getattr(self._tokenizer, "tokenizer", self._tokenizer)  # a processor's own

    async def check(self) -> None:
        await asyncio.to_thread(self._load)

    async def check_images(self) -> None:
        await asyncio.to_thread(self._require_vision)

    def _require_vision(self) -> None:
        """Refuse a text-only model in image mode, before loading its weights."""
        if self._model is not None:
            config = self._model.config
        else:
            source = resolve_model(self.config.model)
            config = _transformers().AutoConfig.from_pretrained(
                source.source, **source.from_pretrained_args()
            )
        require(
            getattr(config, "vision_config", None) is not None,
            f"observation=image must be text for the transformers model {self.config.model} "
            f"({type(config).__name__}), which reads no images (its config has no "
            "vision_config); use --observation text, or a vision-language model as --model",
        )
        require(
            self.config.decoding == "generate",
            "decoding=loglik scores action names after a text prompt; use --observation text",
        )
        self._images = True

    # ---- requests --------------------------------------------------------------------
    async def complete(
        self,
        messages: ChatMessages,
        seed: int | None = None,
        choices: Sequence[str] | None = None,
    ) -> Completion:
        future = asyncio.get_running_loop().create_future()
        seed = self.config.seed if seed is None else seed
        self._pending.append(_Request(messages, seed, choices, future))
        if not self._flush_scheduled:
            # Runs after every request already scheduled in this step has queued itself.
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self._flush()))
        return await future

    async def _flush(self) -> None:
        pending, self._pending, self._flush_scheduled = self._pending, [], False
        size = self.config.batch_size
        for start in range(0, len(pending), size):
            batch = pending[start : start + size]
            try:
                completions = await asyncio.to_thread(self._answer, batch)
            except Exception as error:  # a failed batch is counted by the runner, not raised
                failed = Completion(text="", error=f"{type(error).__name__}: {error}")
                completions = [failed] * len(batch)
            for request, completion in zip(batch, completions, strict=True):
                request.future.set_result(completion)

    def _answer(self, batch: list[_Request]) -> list[Completion]:
        self._load()
        started = time.perf_counter()
        if self._images:
            answers = self._generate_images(batch)
        else:
            tokens = [self._prompt_tokens(request.messages) for request in batch]
            if self.config.decoding == "loglik":
                require(
                    all(request.choices for request in batch),
                    "decoding=loglik needs the legal action names with every request",
                )
                answers = self._loglik(batch, tokens)
            else:
                answers = self._generate(batch, tokens)
        latency = time.perf_counter() - started
        self.generate_calls += 1
        return [
            Completion(**answer, latency_s=latency, server=f"local:{self.config.device}")
            for answer in answers
        ]

    def _prompt_tokens(self, messages: ChatMessages) -> np.ndarray:
        return prompt_tokens(self._text_tokenizer, messages)

    def _generators(self, batch: list[_Request], tokens: list[np.ndarray]) -> list[Any]:
        """Each request's own sampling generator (unseeded where its seed is None), from its
        seed, its tokens and the count of identical requests before it in the batch."""
        import torch

        seen: dict[tuple[int | None, bytes], int] = {}
        generators = []
        for request, prompt in zip(batch, tokens, strict=True):
            key = (request.seed, prompt.tobytes())
            occurrence = seen[key] = seen.get(key, -1) + 1
            generator = torch.Generator()
            if request.seed is None:
                generator.seed()
            else:
                words = np.array([request.seed, occurrence], np.int64).tobytes()
                digest = hashlib.sha256(words + key[1]).digest()
                generator.manual_seed(int.from_bytes(digest[:8], "little") >> 1)
            generators.append(generator)
        return generators

    # ---- loglik ----------------------------------------------------------------------
    def _loglik(self, batch: list[_Request], tokens: list[np.ndarray]) -> list[dict[str, Any]]:
        import torch

        rows, names = [], []
        generators = self._generators(batch, tokens) if self.config.temperature > 0 else None
        for request, prompt in zip(batch, tokens, strict=True):
            choices = list(request.choices or ())
            encoded = [self._encode(f"<action>{name}</action>") for name in choices]
            shared = shared_prefix(encoded)  # "<action>": part of the prompt, not the score
            rows.append(
                _row(np.concatenate([prompt, encoded[0][:shared]]), [e[shared:] for e in encoded])
            )
            names.append(choices)
        scored = self._engine.score(rows)
        answers = []
        for index, (row, choices, scores) in enumerate(zip(rows, names, scored, strict=True)):
            logits = torch.tensor(scores, dtype=torch.float64)
            probs = torch.softmax(logits, 0)
            if generators is not None:
                sampling = torch.softmax(logits / self.config.temperature, 0)
                pick = int(torch.multinomial(sampling, 1, generator=generators[index]))
            else:
                pick = int(torch.argmax(logits))
            answers.append(
                {
                    "text": f"<action>{choices[pick]}</action>",
                    "prompt_tokens": len(row.tokens),
                    "mode": "loglik",
                    "choice_probs": {
                        n: round(float(p), 6) for n, p in zip(choices, probs, strict=True)
                    },
                }
            )
        return answers

    def _encode(self, text: str) -> list[int]:
        return self._text_tokenizer(text, add_special_tokens=False)["input_ids"]

    # ---- generation --------------------------------------------------------------------
    def _generate(self, batch: list[_Request], tokens: list[np.ndarray]) -> list[dict[str, Any]]:
        import torch

        tokenizer = self._text_tokenizer
        eos = tokenizer.eos_token_id
        tries = [
            _Trie([self._encode(name) for name in request.choices]) if request.choices else None
            for request in batch
        ]
        generators = (
            self._generators(batch, tokens) if self.config.temperature > 0 else [None] * len(batch)
        )
        ended = [False] * len(batch)

        def choose(row: int, generated: list[int], logprobs: Any) -> int | None:
            if tries[row] is not None:
                allowed, whole = tries[row].next_tokens(generated)
                if whole and not allowed:
                    ended[row] = True
                    return None
                if whole:  # a legal name that a longer one continues: the end token may end it
                    allowed = [*allowed, eos]
                logprobs = torch.full_like(logprobs, -torch.inf).index_copy(
                    0, torch.tensor(allowed), logprobs[allowed]
                )
            elif generated and reply_complete(tokenizer.decode(generated)):
                ended[row] = True
                return None
            if generators[row] is None:
                token = int(torch.argmax(logprobs))
            else:
                probs = torch.softmax(logprobs / self.config.temperature, 0)
                token = int(torch.multinomial(probs, 1, generator=generators[row]))
            if token == eos:
                ended[row] = True
                return None
            return token

        rows = [_row(prompt) for prompt in tokens]
        generated = self._engine.generate(rows, self.config.max_new_tokens, choose)
        return [
            {
                "text": tokenizer.decode(new, skip_special_tokens=True),
                "prompt_tokens": len(prompt),
                "completion_tokens": len(new) + done,  # the end token counts, as servers count it
                "cut_off": not done,
                "mode": "free" if trie is None else "constrained:logits",
            }
            for new, prompt, done, trie in zip(generated, tokens, ended, tries, strict=True)
        ]

    def _generate_images(self, batch: list[_Request]) -> list[dict[str, Any]]:
        """Vision-language requests, generated freely by `model.generate` (left padding)."""
        import torch

        model, tokenizer = self._model, self._text_tokenizer
        tokenizer.padding_side = "left"
        encoded = self._tokenizer.apply_chat_template(
            [_processor_chat(request.messages) for request in batch],
            add_generation_prompt=True, tokenize=True, return_dict=True,
            return_tensors="pt", padding=True,
        ).to(model.device)  # fmt: skip
        sampling = (
            {"do_sample": True, "temperature": self.config.temperature}
            if self.config.temperature > 0
            else {"do_sample": False}
        )
        with torch.no_grad():
            output = model.generate(
                **encoded,
                max_new_tokens=self.config.max_new_tokens,
                pad_token_id=tokenizer.pad_token_id,
                **sampling,
            )
        new_tokens = output[:, encoded["input_ids"].shape[1] :]
        full = new_tokens.shape[1] >= self.config.max_new_tokens
        return [
            {
                "text": tokenizer.decode(row, skip_special_tokens=True),
                "prompt_tokens": int(prompt),
                "completion_tokens": int((row != tokenizer.pad_token_id).sum()),
                "cut_off": bool(full and not (row == tokenizer.eos_token_id).any()),
            }
            for row, prompt in zip(new_tokens, encoded["attention_mask"].sum(dim=1), strict=True)
        ]

    async def close(self) -> None:
        pass


def _row(tokens: np.ndarray, branches: Sequence[Sequence[int]] = ()) -> Any:
    from llm_bridge.clients.hf_engine import Row

    return Row(np.asarray(tokens, dtype=np.int64), branches)


def shared_prefix(sequences: list[list[int]]) -> int:
    """How many leading tokens every sequence shares, leaving each at least one of its own."""
    shortest = min(len(s) for s in sequences)
    shared = 0
    while shared < shortest - 1 and len({s[shared] for s in sequences}) == 1:
        shared += 1
    return shared


class _Trie:
    """The token sequences of the legal names: which tokens may come next."""

    def __init__(self, sequences: list[list[int]]):
        self._sequences = [tuple(s) for s in sequences]

    def next_tokens(self, generated: list[int]) -> tuple[list[int], bool]:
        """The tokens that continue a legal name after `generated`, and whether `generated`
        is a whole legal name itself."""
        prefix, size = tuple(generated), len(generated)
        following = {s[size] for s in self._sequences if len(s) > size and s[:size] == prefix}
        return sorted(following), prefix in self._sequences


# Models loaded in this process, by what was asked: every backend of a sweep or a gap report
# (a run per stratum and team) shares one copy instead of loading the weights again.
_LOADED: dict[tuple[str, str, str, bool, str | None], tuple[Any, Any]] = {}


def loaded_model(
    model: str, dtype: str, device: str, images: bool, adapter: str | None = None
) -> tuple[Any, Any]:
    """(model, tokenizer or processor) of `--model`, loaded once per process; with `adapter`,
    that LoRA adapter merged into its weights (as `alemlite finetune` trained it)."""
    key = (model, dtype, device, images, adapter)
    if key not in _LOADED:
        transformers = _transformers()
        source = resolve_model(model)
        args = source.from_pretrained_args()
        if images:
            tokenizer = transformers.AutoProcessor.from_pretrained(source.source, **args)
            loader = transformers.AutoModelForImageTextToText
        else:
            tokenizer = transformers.AutoTokenizer.from_pretrained(source.source, **args)
            loader = transformers.AutoModelForCausalLM
        loaded = loader.from_pretrained(source.source, dtype=dtype, **args).to(device)
        if adapter is not None:
            from peft import PeftModel

            loaded = PeftModel.from_pretrained(loaded, adapter).merge_and_unload()
        _LOADED[key] = (loaded.eval(), tokenizer)
    return _LOADED[key]


def _transformers() -> Any:
    try:
        import transformers
    except ImportError as error:
        raise ImportError(
            'the transformers backend needs the hf extra: pip install -e ".[hf]"'
        ) from error
    return transformers
