"""A local Hugging Face transformers chat model, with batched generation (optional extra).

Requests that arrive together (the runner asks every live agent of a step at once)
are gathered and generated in batches of `batch_size` with left padding, on a worker
thread so the event loop stays free. Install with `pip install -e ".[hf]"` (pin a
CPU build of torch first where that matters).

With a seed, sampling (temperature > 0) is reproducible: each batch draws from torch's
generator seeded from the seed and the batch's prompts, so the same seed and the same
requests, batched alike, give the same replies, while different prompts get different
draws. The process-wide generator is saved and restored around each batch.

Image observations need a vision-language model: `check_images` refuses a model whose
config has no vision part, and otherwise loads it with its processor
(`AutoModelForImageTextToText`, `AutoProcessor`), which reads the OpenAI image parts of
the chat. Constrained mode is not offered here: the model answers freely (`mode` "free")
and the parser reads it. A reply that fills `max_new_tokens` without its end token is
counted as cut off.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from alemlite.core.errors import require
from llm_bridge.clients.base import ChatMessages, Completion


@dataclass(frozen=True)
class HFConfig:
    model: str  # a local model directory, or a model id that transformers loads as usual
    max_new_tokens: int = 256
    temperature: float = 0.0  # 0: greedy decoding
    batch_size: int = 16
    device: str = "cpu"
    dtype: str = "auto"
    seed: int | None = None  # sampling seed for every request that brings none of its own

    def __post_init__(self) -> None:
        require(
            self.max_new_tokens >= 1, f"max_new_tokens={self.max_new_tokens} must be at least 1"
        )
        require(self.temperature >= 0, f"temperature={self.temperature} must be 0 or more")
        require(self.batch_size >= 1, f"batch_size={self.batch_size} must be at least 1")


# torch samples from one process-wide generator: one sampling batch at a time, so that a
# seeded batch's draws are not taken by another backend's batch on another thread.
_SAMPLING = threading.Lock()


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


class HFBackend:
    def __init__(self, config: HFConfig, model: Any = None, tokenizer: Any = None):
        self.config = config
        self.name = config.model
        # `tokenizer`: the model's processor (tokenizer and image processor) in image mode.
        self._model, self._tokenizer = model, tokenizer
        self._images = False  # set by check_images: prompts go through the processor
        self._pending: list[tuple[ChatMessages, int | None, asyncio.Future]] = []
        self._flush_scheduled = False
        self.generate_calls = 0

    def _load(self) -> None:
        if self._model is not None:
            return
        transformers = _transformers()
        if self._images:
            self._tokenizer = transformers.AutoProcessor.from_pretrained(self.config.model)
            loader = transformers.AutoModelForImageTextToText
        else:
            self._tokenizer = transformers.AutoTokenizer.from_pretrained(self.config.model)
            loader = transformers.AutoModelForCausalLM
        self._model = loader.from_pretrained(self.config.model, dtype=self.config.dtype).to(
            self.config.device
        )

    async def check(self) -> None:
        await asyncio.to_thread(self._load)

    async def check_images(self) -> None:
        await asyncio.to_thread(self._require_vision)

    def _require_vision(self) -> None:
        """Refuse a text-only model in image mode, before loading its weights."""
        config = (
            self._model.config
            if self._model is not None
            else _transformers().AutoConfig.from_pretrained(self.config.model)
        )
        require(
            getattr(config, "vision_config", None) is not None,
            f"observation=image must be text for the transformers model {self.config.model} "
            f"({type(config).__name__}), which reads no images (its config has no "
            "vision_config); use --observation text, or a vision-language model as --model",
        )
        self._images = True

    async def complete(
        self,
        messages: ChatMessages,
        seed: int | None = None,
        choices: Sequence[str] | None = None,
    ) -> Completion:
        future = asyncio.get_running_loop().create_future()
        self._pending.append((messages, self.config.seed if seed is None else seed, future))
        if not self._flush_scheduled:
            # Runs after every request already scheduled in this step has queued itself.
            self._flush_scheduled = True
            asyncio.get_running_loop().call_soon(lambda: asyncio.ensure_future(self._flush()))
        return await future

    async def _flush(self) -> None:
        pending, self._pending, self._flush_scheduled = self._pending, [], False
        by_seed: dict[int | None, list[tuple[ChatMessages, asyncio.Future]]] = {}
        for messages, seed, future in pending:  # a batch samples under one seed
            by_seed.setdefault(seed, []).append((messages, future))
        size = self.config.batch_size
        for seed, requests in by_seed.items():
            for start in range(0, len(requests), size):
                batch = requests[start : start + size]
                try:
                    completions = await asyncio.to_thread(
                        self._generate, [m for m, _ in batch], seed
                    )
                except Exception as error:  # a failed batch is counted by the runner, not raised
                    failed = Completion(text="", error=f"{type(error).__name__}: {error}")
                    completions = [failed] * len(batch)
                for (_, future), completion in zip(batch, completions, strict=True):
                    future.set_result(completion)

    def _generate(
        self, conversations: list[ChatMessages], seed: int | None = None
    ) -> list[Completion]:
        import torch

        self._load()
        model = self._model
        tokenizer = getattr(self._tokenizer, "tokenizer", self._tokenizer)  # a processor's own
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        if self._images:
            prompts: list[Any] = [_processor_chat(c) for c in conversations]
            encoded = self._tokenizer.apply_chat_template(
                prompts, add_generation_prompt=True, tokenize=True, return_dict=True,
                return_tensors="pt", padding=True,
            )  # fmt: skip
        else:
            prompts = [
                tokenizer.apply_chat_template(c, tokenize=False, add_generation_prompt=True)
                if getattr(tokenizer, "chat_template", None)
                else _plain_chat(c)
                for c in conversations
            ]
            encoded = tokenizer(prompts, return_tensors="pt", padding=True)
        encoded = encoded.to(model.device)
        sampling = (
            {"do_sample": True, "temperature": self.config.temperature}
            if self.config.temperature > 0
            else {"do_sample": False}
        )
        started = time.perf_counter()
        with _sampling_rng(model.device, sampling["do_sample"], seed, prompts), torch.no_grad():
            output = model.generate(
                **encoded,
                max_new_tokens=self.config.max_new_tokens,
                pad_token_id=tokenizer.pad_token_id,
                **sampling,
            )
        latency = time.perf_counter() - started
        self.generate_calls += 1
        new_tokens = output[:, encoded["input_ids"].shape[1] :]
        texts = tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        prompt_lengths = encoded["attention_mask"].sum(dim=1).tolist()
        generated_lengths = (new_tokens != tokenizer.pad_token_id).sum(dim=1).tolist()
        # Cut off: the budget filled without the end token.
        full = new_tokens.shape[1] >= self.config.max_new_tokens
        cut_off = [full and not ended for ended in (new_tokens == tokenizer.eos_token_id).any(1)]
        return [
            Completion(
                text=text,
                prompt_tokens=int(prompt_tokens),
                completion_tokens=int(generated),
                latency_s=latency,
                server=f"local:{self.config.device}",
                cut_off=bool(cut),
            )
            for text, prompt_tokens, generated, cut in zip(
                texts, prompt_lengths, generated_lengths, cut_off, strict=True
            )
        ]

    async def close(self) -> None:
        pass


def _transformers() -> Any:
    try:
        import transformers
    except ImportError as error:
        raise ImportError(
            'the transformers backend needs the hf extra: pip install -e ".[hf]"'
        ) from error
    return transformers


@contextlib.contextmanager
def _sampling_rng(device: Any, sampling: bool, seed: int | None, prompts: list[Any]):
    """Greedy decoding draws nothing; sampling holds the generator, seeded if asked."""
    if not sampling:
        yield
        return
    import torch

    # `manual_seed` seeds every accelerator of the process: save and restore them all.
    devices = (
        {"devices": []}
        if device.type == "cpu"
        else {
            "devices": list(range(getattr(torch, device.type).device_count())),
            "device_type": device.type,
        }
    )
    with _SAMPLING, torch.random.fork_rng(enabled=seed is not None, **devices):
        if seed is not None:
            # From the seed and the prompts: reproducible, yet no two different batches
            # (say, two steps of an episode) reuse the same draws.
            digest = hashlib.sha256(json.dumps([seed, prompts]).encode()).digest()
            torch.manual_seed(int.from_bytes(digest[:8], "little") >> 1)
        yield
