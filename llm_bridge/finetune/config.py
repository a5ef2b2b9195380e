"""The settings of a language-model fine-tuning run (`alemlite finetune`); validated at
construction. Flag names follow `alemlite train` where the concept is the same
(`--num-envs`, `--num-updates`, `--eval-interval`, `--group.group-size`,
`--curriculum.values`, ...) and `alemlite eval-llm` for the model (`--model`, `--hf-*`)."""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import tyro

from alemlite.core.errors import require
from alemlite.core.registry import DEFAULT_ENV, resolve_options
from alemlite.core.spec import EnvOptions

Objective = Literal["grpo", "srpo", "teamtr"]
OBJECTIVES: tuple[str, ...] = ("grpo", "srpo", "teamtr")


@dataclass(frozen=True)
class LoraConfig:
    rank: int = 8
    """Rank of each low-rank adapter matrix."""
    alpha: float = 16.0
    """Scale of the adapter's update (the update is multiplied by alpha / rank)."""
    target_modules: tuple[str, ...] = ("q_proj", "k_proj", "v_proj", "o_proj")
    """Names of the linear layers that carry adapters (Llama's attention projections)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "target_modules", tuple(self.target_modules))
        require(self.rank >= 1, f"lora.rank={self.rank} must be at least 1")
        require(
            math.isfinite(self.alpha) and self.alpha > 0,
            f"lora.alpha={self.alpha} must be a finite number > 0",
        )
        require(self.target_modules, "lora.target_modules is empty; name at least one layer")


@dataclass(frozen=True)
class GroupConfig:
    group_size: int = 4
    """Episodes per start state (G); their team returns are compared with each other."""
    kl_coef: float = 0.05
    """Weight of KL(policy || starting model) over the legal actions of every turn
    (--decoding generate: estimated on the sampled reply's tokens)."""
    kl_budget: float = 0.05
    """TeamTR: the most KL(before || after) one seat's update may move its own turns."""
    backtrack_steps: int = 4
    """TeamTR: halvings of a seat's step tried before the step is undone."""

    def __post_init__(self) -> None:
        require(self.group_size >= 2, f"group.group_size={self.group_size} must be at least 2")
        require(
            math.isfinite(self.kl_coef) and self.kl_coef >= 0,
            f"group.kl_coef={self.kl_coef} must be a finite number >= 0",
        )
        require(
            math.isfinite(self.kl_budget) and self.kl_budget > 0,
            f"group.kl_budget={self.kl_budget} must be a finite number > 0",
        )
        require(
            self.backtrack_steps >= 0,
            f"group.backtrack_steps={self.backtrack_steps} must be 0 or more",
        )


@dataclass(frozen=True)
class CurriculumConfig:
    values: tuple[int, ...] = ()
    """Team sizes trained in order (dining: table sizes, e.g. 3 5 10); empty: the
    environment's `--num-agents` throughout."""
    patience: int = 2
    """Validations without improvement at the current size before the next size starts."""
    min_improvement: float = 0.05
    """Smallest rise of the validation return that counts as an improvement."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", tuple(self.values))
        require(
            all(isinstance(v, int) and not isinstance(v, bool) for v in self.values),
            f"curriculum.values={list(self.values)} must be whole numbers",
        )
        require(
            all(value >= 1 for value in self.values),
            f"curriculum.values={list(self.values)} must be team sizes of at least 1",
        )
        require(
            all(a < b for a, b in zip(self.values, self.values[1:], strict=False)),
            f"curriculum.values={list(self.values)} must increase (smallest first)",
        )
        require(self.patience >= 1, f"curriculum.patience={self.patience} must be at least 1")
        require(
            math.isfinite(self.min_improvement) and self.min_improvement >= 0,
            f"curriculum.min_improvement={self.min_improvement} must be a finite number >= 0",
        )


@dataclass(frozen=True)
class FinetuneConfig:
    """Fine-tune a language model that plays every seat, with a group-relative objective."""

    algorithm: tyro.conf.Positional[Objective] = "grpo"
    """grpo: one clipped ratio per turn; srpo: one per set of seats acting together;
    teamtr: one adapter per seat, updated in turn within a trust region."""
    env: str = DEFAULT_ENV
    """the environment"""
    options: EnvOptions | None = None
    """the environment's options; `--env NAME --help` lists them"""
    model: str = "smollm2-135m"
    """a named model (smollm2-135m), a .gguf file, or a transformers folder or id"""
    num_envs: int = 8
    """Episodes per update: `num_envs / group_size` start states, each played G times."""
    num_updates: int = 20
    num_epochs: int = 2
    """Passes over an update's turns."""
    minibatch_turns: int = 32
    """Turns per gradient step (SRPO: whole sets, as many as fit)."""
    learning_rate: float = 1e-4
    clip_eps: float = 0.2
    """Clip range of the probability ratio."""
    max_grad_norm: float = 1.0
    decoding: Literal["loglik", "generate"] = "loglik"
    """How a turn picks its action (as `alemlite eval-llm --decoding`): loglik: the softmax
    of the legal names' log-likelihoods (exact ratios and KL); generate: a reply sampled
    from the model and parsed as eval-llm parses it (an unparsed reply plays the no-op)."""
    max_tokens: int = 256
    """generate: the most tokens a reply may have (as `alemlite eval-llm --max-tokens`)."""
    temperature: float = 1.0
    """loglik: the policy is the softmax of the legal actions' log-likelihoods at this
    temperature; generate: each reply token is drawn from the model's softmax at it."""
    eval_decoding: Literal["sample", "argmax"] = "sample"
    """How validation and test episodes act: sample: draw from the policy (the policy that
    is trained; the draws are seeded by the episodes' seeds, the same for every model);
    argmax: the likeliest action (as `eval-llm --decoding loglik --temperature 0`), or
    with --decoding generate the greedy reply."""
    history: int = 0
    """observation/action pairs remembered per agent (as `alemlite eval-llm --history`)"""
    variant: str | None = None
    """system prompt variant (default: the environment's)"""
    seed: int = 0
    eval_interval: int = 5
    """Updates between validations; the best validated adapters are kept."""
    eval_episodes: int = 16
    validation_seed: int = 1_000_000
    """Base seed of the episodes that select the best checkpoint."""
    test_seed: int = 2_000_000
    """Base seed of the held-out episodes that report the starting and best models."""
    test_episodes: int = 32
    lora: LoraConfig = field(default_factory=LoraConfig)
    group: GroupConfig = field(default_factory=GroupConfig)
    curriculum: CurriculumConfig = field(default_factory=CurriculumConfig)
    hf_dtype: Literal["float32", "bfloat16"] = "float32"
    hf_device: str = "cpu"
    hf_threads: int | None = None
    """torch's threads (default: the cores this process may use)"""
    out: Path | None = None
    """The run directory; None: runs/finetune-ALGORITHM-ENV-LABEL."""
    resume: bool = False
    """Continue the run in `out` from its last checkpoint to `num_updates`."""
    progress: bool = True
    """Show progress bars."""
    publish: bool = False
    """write into benchmarks/results/ (published results; needs a clean tree)"""
    allow_dirty: bool = False
    """publish from a tree with uncommitted changes (the JSON says so)"""

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", resolve_options(self.env, self.options))
        require(self.num_envs >= 1, f"num_envs={self.num_envs} must be at least 1")
        require(
            self.num_envs % self.group.group_size == 0,
            f"num_envs={self.num_envs} must be a multiple of group.group_size="
            f"{self.group.group_size}",
        )
        for name in ("num_updates", "num_epochs", "minibatch_turns", "eval_interval", "max_tokens"):
            value = getattr(self, name)
            require(value >= 1, f"{name}={value} must be at least 1")
        for name in ("eval_episodes", "test_episodes"):
            value = getattr(self, name)
            require(value >= 1, f"{name}={value} must be at least 1")
        for name in ("learning_rate", "clip_eps", "max_grad_norm", "temperature"):
            value = getattr(self, name)
            require(math.isfinite(value) and value > 0, f"{name}={value} must be a number > 0")
        require(self.history >= 0, f"history={self.history} must be 0 or more")
        require(
            self.hf_threads is None or self.hf_threads >= 1,
            f"hf_threads={self.hf_threads} must be at least 1",
        )

    @property
    def sizes(self) -> tuple[int, ...]:
        """The team sizes of the run in order (one without a curriculum)."""
        return self.curriculum.values or (self.options.num_agents,)

    def run_dir(self) -> Path:
        if self.out is not None:
            return Path(self.out)
        label = "-".join(str(size) for size in self.sizes)
        return Path("runs") / f"finetune-{self.algorithm}-{self.env}-{label}"

    def record(self) -> dict[str, Any]:
        """Everything that decides the run's numbers, as JSON (a resume must match it)."""
        body = dataclasses.asdict(self)
        body["options"] = dataclasses.asdict(self.options)
        for name in (
            "out",
            "resume",
            "progress",
            "publish",
            "allow_dirty",
            "num_updates",
            "hf_threads",
        ):
            body.pop(name)  # where it is written, how it is watched, how far it goes
        if self.decoding == "loglik":
            # Unused by loglik, and absent from the config.json of runs before generate.
            body.pop("decoding")
            body.pop("max_tokens")
        return body
