"""The options of an LLM evaluation: how the models are reached and how the run goes
(`LLMOptions`), and the prompt switches with their named ablations (`PromptSwitches`).

Both are frozen dataclasses checked when built (one-line `ConfigError`s naming the field),
nested unprefixed in `alemlite eval`'s config, so that their flags stay flat
(`--model`, `--base-url`, `--variant`, ...)."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from alemlite.core.errors import ConfigError, require
from alemlite.core.prompting import PromptOptions
from llm_bridge.clients.base import Backend, without_userinfo
from llm_bridge.images import OBSERVATIONS, Observation
from llm_bridge.model_config import read_model_file

# Named ablations: each is one change to the prompt switches; "variant=NAME" also works.
ABLATIONS: dict[str, dict[str, Any]] = {
    "base": {},
    "no-history": {"history": 0},
    "no-comm": {"communication": False},
    "cot": {"chain_of_thought": True},
    "scratchpad": {"scratchpad": True},
    "no-feedback": {"parse_feedback": False},
}


@dataclass(frozen=True)
class LLMOptions:
    """The model, its servers, and the run's budget, cost and files (LLM seats only)."""

    backend: Literal["openai", "hf"] = "openai"
    """openai: any OpenAI-compatible server; hf: a local transformers model (--model is its path)"""
    model_config: Path | None = None
    """a model file (models/NAME.toml: URL, model, key variable, request fields, prices,
    context length; see llm_bridge.model_config); a flag given on the command line wins"""
    base_url: tuple[str, ...] = ("http://127.0.0.1:8000/v1",)
    """one or more OpenAI-compatible endpoints (ending in /v1); requests are load-balanced"""
    model: str = "Qwen/Qwen2.5-7B-Instruct"
    """the model of `llm` seats (`llm:MODEL` or `llm:MODEL@URL` seats name their own); with
    --backend hf: a named model (smollm2-135m), a .gguf file, or a transformers folder"""
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float | None = 0.0
    """None: not sent, for models that take only their default (a server refusing it by name
    is sent none from then on)"""
    max_tokens: int = 256
    """the token budget of one reply, reasoning included; replies it cuts off are counted"""
    token_field: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    """the request field that carries --max-tokens (OpenAI's reasoning models take only
    max_completion_tokens; a server refusing one by name is sent the other)"""
    top_p: float | None = None
    reasoning_effort: str | None = None
    """sent as given (OpenAI's reasoning models: minimal, low, medium, high)"""
    stop: tuple[str, ...] = ()
    request_fields: str | None = None
    """a JSON object of more fields sent in every request as given, e.g.
    '{"chat_template_kwargs": {"enable_thinking": false}}' (over the model file's [request])"""
    context_length: int | None = None
    """the model's context in tokens (recorded; --max-tokens must fit in it)"""
    constrained: bool = False
    """ask the server to answer with one of the legal action names (vLLM guided_choice, else
    a JSON schema, else free text, as the server accepts); replies are then the action alone,
    without messages or scratchpad notes"""
    decoding: Literal["generate", "loglik"] = "generate"
    """generate: the model writes its reply; loglik (hf only): the legal action most likely
    after the prompt by the model's log-likelihood is played (sampled at --temperature > 0),
    nothing is generated, and no reply is unparsed"""
    model_seed: int | None = None
    """sampling seed sent to the server with every request (the transformers backend seeds
    each generated batch with it)"""
    concurrency: int = 64
    timeout_s: float = 120.0
    max_retries: int = 6
    """retries of a request after a rate limit, 5xx, timeout or dropped connection"""
    hf_batch_size: int = 16
    """hf only: requests generated together"""
    hf_device: str = "cpu"
    hf_dtype: Literal["float32", "bfloat16", "float16", "auto"] = "float32"
    """hf only: the weights' type (bfloat16: faster on CPUs with bf16 instructions, not the
    same numbers)"""
    hf_threads: int | None = None
    """hf only: torch's threads (default: this process's cores; fewer on a loaded machine)"""
    hf_adapter: Path | None = None
    """hf only: a LoRA adapter folder merged into --model (an `alemlite finetune` run's
    best/policy)"""
    max_failed_fraction: float = 0.01
    """the most LLM turns (as a share) that may still fail after retries in a valid run; past
    it the run is marked not valid and the command fails"""
    input_price_per_mtok: float = 0.0
    output_price_per_mtok: float = 0.0
    resume: bool = True
    """continue from the run folder's transcript (same configuration only)"""
    progress: bool = True

    def __post_init__(self) -> None:
        request: dict[str, Any] = {}
        if self.model_config is not None:
            # The file's values fill the options still at their defaults: flags win.
            defaults = {field.name: field.default for field in dataclasses.fields(self)}
            for name, value in read_model_file(self.model_config).items():
                if name == "request":
                    request.update(value)
                elif getattr(self, name) == defaults[name]:
                    object.__setattr__(self, name, value)
        if self.request_fields is not None:
            try:
                given = json.loads(self.request_fields)
            except ValueError:
                given = None
            require(
                isinstance(given, dict),
                f"request_fields={self.request_fields!r} is no JSON object; give one like "
                "'{\"top_p\": 0.9}'",
            )
            request.update(given)
        named = {"top_p": self.top_p, "reasoning_effort": self.reasoning_effort}
        request.update({name: value for name, value in named.items() if value is not None})
        if self.stop:
            request["stop"] = list(self.stop)
        object.__setattr__(self, "_request", request)
        # Every number is checked here, before anything is built or asked.
        require(bool(self.base_url), "base_url=() is empty; pass at least one endpoint")
        require(self.max_tokens >= 1, f"max_tokens={self.max_tokens} must be at least 1")
        require(
            self.temperature is None or (math.isfinite(self.temperature) and self.temperature >= 0),
            f"temperature={self.temperature} must be a finite number >= 0 (or None: not sent)",
        )
        require(
            self.top_p is None or 0 < self.top_p <= 1,
            f"top_p={self.top_p} must lie in (0, 1]",
        )
        require(
            self.context_length is None or self.max_tokens < self.context_length,
            f"max_tokens={self.max_tokens} leaves no room for a prompt in "
            f"context_length={self.context_length}; give a smaller --max-tokens",
        )
        require(
            self.backend == "openai"
            or (not request and self.token_field == "max_tokens" and self.temperature is not None),
            "request fields (--top-p, --reasoning-effort, --stop, --request-fields, "
            "--token-field, --temperature None) are sent to OpenAI-compatible servers; "
            "--backend hf takes none of them",
        )
        require(self.concurrency >= 1, f"concurrency={self.concurrency} must be at least 1")
        require(
            math.isfinite(self.timeout_s) and self.timeout_s > 0,
            f"timeout_s={self.timeout_s} must be a positive number of seconds",
        )
        require(self.max_retries >= 0, f"max_retries={self.max_retries} must be 0 or more")
        require(self.hf_batch_size >= 1, f"hf_batch_size={self.hf_batch_size} must be at least 1")
        require(
            self.hf_threads is None or self.hf_threads >= 1,
            f"hf_threads={self.hf_threads} must be at least 1",
        )
        require(
            self.hf_adapter is None or self.backend == "hf",
            f"hf_adapter={self.hf_adapter} is merged into a local model; use --backend hf",
        )
        require(
            self.decoding == "generate" or self.backend == "hf",
            f"decoding={self.decoding} scores the legal actions with a local model's "
            "likelihood; use --backend hf, or --decoding generate",
        )
        require(
            not (self.constrained and self.decoding == "loglik"),
            "constrained and decoding=loglik are two ways to pick a legal action; give one",
        )
        require(
            0.0 <= self.max_failed_fraction <= 1.0,
            f"max_failed_fraction={self.max_failed_fraction} must lie in [0, 1] "
            "(0: any failed turn makes the run not valid)",
        )
        for name in ("input_price_per_mtok", "output_price_per_mtok"):
            value = getattr(self, name)
            require(math.isfinite(value) and value >= 0, f"{name}={value} must be a number >= 0")

    def make_backend(self, seat_model: str | None = None) -> Backend:
        """The backend of an `llm` seat (`seat_model` None) or an `llm:MODEL[@URL]` one: another
        model on the configured servers, or on its own server."""
        model, _, url = (seat_model or self.model).partition("@")
        if self.backend == "hf":
            from llm_bridge.clients.hf_backend import HFBackend, HFConfig

            return HFBackend(
                HFConfig(
                    model=model,
                    max_new_tokens=self.max_tokens,
                    temperature=self.temperature or 0.0,  # never None here (checked)
                    batch_size=self.hf_batch_size,
                    device=self.hf_device,
                    dtype=self.hf_dtype,
                    seed=self.model_seed,
                    decoding=self.decoding,
                    threads=self.hf_threads,
                    adapter=None if self.hf_adapter is None else str(self.hf_adapter),
                )
            )
        from llm_bridge.clients.openai_backend import OpenAIBackend, OpenAIConfig

        return OpenAIBackend(
            OpenAIConfig(
                model=model,
                base_urls=(url,) if url else self.base_url,
                api_key_env=self.api_key_env,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                token_field=self.token_field,
                request_fields=self.request(),
                seed=self.model_seed,
                concurrency=self.concurrency,
                timeout_s=self.timeout_s,
                max_retries=self.max_retries,
            )
        )

    def describe(self) -> dict[str, Any]:
        """What of these options decides a run's answers (recorded, and part of its hash)."""
        return {
            "model": without_userinfo(self.model),  # `MODEL@URL` may carry a password
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "model_seed": self.model_seed,
            **({"backend": "hf", "hf_dtype": self.hf_dtype} if self.backend == "hf" else {}),
            **({"hf_adapter": adapter_digest(self.hf_adapter)} if self.hf_adapter else {}),
            # Only where set, so that earlier runs keep their fingerprints.
            **({"token_field": self.token_field} if self.token_field != "max_tokens" else {}),
            **({"request": self.request()} if self.request() else {}),
            **({"context_length": self.context_length} if self.context_length else {}),
        }

    def request(self) -> dict[str, Any]:
        """The request fields sent as given: the model file's [request], --request-fields,
        then --top-p, --reasoning-effort and --stop."""
        return dict(self._request)  # type: ignore[attr-defined]


@dataclass(frozen=True)
class PromptSwitches:
    """The prompt variant and memory switches, and the ablations to sweep over them."""

    variant: str | None = None
    """system prompt variant (default: the environment's; its prompt builder lists them)"""
    history: int | None = None
    """observation/action pairs remembered per agent (default: the environment's)"""
    chain_of_thought: bool = False
    communication: bool = True
    scratchpad: bool = False
    parse_feedback: bool = True
    observation: Observation = "text"
    """text: the observation in words; image: the agent's view as a picture (vision-language
    models; environments that draw one); both: the words, then the picture"""
    ablation: tuple[str, ...] = ()
    """sweep, one run per name, each in OUT/NAME: base, no-history, no-comm, cot, scratchpad,
    no-feedback, variant=NAME"""
    system_prompt: Path | None = None
    """a text file whose text replaces the environment's system prompt (its output-format
    section included: the reply must still name <action>NAME</action>)"""
    few_shot: Path | None = None
    """a JSON file of example chat messages, [{"role": "user" | "assistant", "content": ...}],
    sent after the system prompt in every request"""

    def __post_init__(self) -> None:
        require(
            self.history is None or self.history >= 0,
            f"history={self.history} must be 0 or more",
        )
        require(
            self.observation in OBSERVATIONS,
            f"observation={self.observation!r} must be one of: {', '.join(OBSERVATIONS)}",
        )
        for ablation in self.ablation:
            require(
                ablation in ABLATIONS or ablation.startswith("variant="),
                f"unknown ablation {ablation!r}; choose from: {', '.join(ABLATIONS)}, variant=NAME",
            )
        self.system_prompt_text()  # both files are read (and refused) before anything runs
        self.few_shot_messages()

    def system_prompt_text(self) -> str | None:
        """The system prompt of --system-prompt, or None: the environment's."""
        if self.system_prompt is None:
            return None
        require(self.system_prompt.is_file(), f"system_prompt={self.system_prompt} is no file")
        text = self.system_prompt.read_text().strip()
        require(bool(text), f"system_prompt={self.system_prompt} is empty; write the prompt in it")
        return text

    def few_shot_messages(self) -> tuple[tuple[str, str], ...]:
        """The (role, content) example messages of --few-shot, in order."""
        if self.few_shot is None:
            return ()
        path = self.few_shot
        require(path.is_file(), f"few_shot={path} is no file")
        try:
            messages = json.loads(path.read_text())
        except ValueError as error:
            raise ConfigError(f"few_shot={path} is no valid JSON: {error}") from None
        shape = (
            'give a JSON list of messages like [{"role": "user", "content": "..."}, '
            '{"role": "assistant", "content": "<action>WAIT</action>"}]'
        )
        require(isinstance(messages, list) and bool(messages), f"few_shot={path}: {shape}")
        for index, message in enumerate(messages):
            require(
                isinstance(message, dict)
                and set(message) == {"role", "content"}
                and message["role"] in ("user", "assistant")
                and isinstance(message["content"], str),
                f"few_shot={path}: message {index} is {json.dumps(message)[:80]}; {shape}",
            )
        return tuple((message["role"], message["content"]) for message in messages)

    def describe(self) -> dict[str, Any]:
        """The files' names and contents' digests (recorded, and part of the run's hash)."""
        described: dict[str, Any] = {}
        for name, text in (
            ("system_prompt", self.system_prompt_text()),
            ("few_shot", json.dumps(self.few_shot_messages()) if self.few_shot else None),
        ):
            if text is not None:
                digest = hashlib.sha256(text.encode()).hexdigest()[:16]
                described[name] = {"file": str(getattr(self, name)), "sha256": digest}
        return described

    def prompt_options(self, defaults: PromptOptions, ablation: str = "base") -> PromptOptions:
        """The prompt options of one run of the sweep: the environment's `defaults` for the
        variant and history unless given, these switches, then the `ablation`'s change."""
        options = PromptOptions(
            variant=defaults.variant if self.variant is None else self.variant,
            history=defaults.history if self.history is None else self.history,
            chain_of_thought=self.chain_of_thought,
            communication=self.communication,
            scratchpad=self.scratchpad,
            parse_feedback=self.parse_feedback,
        )
        if ablation.startswith("variant="):
            return dataclasses.replace(options, variant=ablation.removeprefix("variant="))
        return dataclasses.replace(options, **ABLATIONS[ablation])


def adapter_digest(folder: Path) -> str:
    """A LoRA adapter by its contents (config and weights), not by where it lies: the same
    adapter keeps a run's fingerprint wherever it is copied, another one changes it."""
    digest = hashlib.sha256()
    for path in sorted(Path(folder).iterdir()):
        if path.is_file() and path.name.startswith("adapter_"):
            digest.update(path.name.encode() + path.read_bytes())
    return digest.hexdigest()[:16]
