"""The fine-tuning loop: grouped rollouts, an objective's epochs, validation, checkpoints.

An update draws `num_envs / G` start states and plays each `G` times (the seeds of update
`u` follow on from those of update `u - 1`, well below the validation and test seeds), then
runs `num_epochs` passes of the objective over the update's turns in minibatches of
`minibatch_turns`. TeamTR instead visits the seats in a fresh random order, and for each
plays fresh grouped episodes with the team as it stands, trains that seat's adapter on its
own turns, stops its epochs once KL(before || after) over those turns passes `kl_budget`,
and halves the step (`backtrack_steps` times at most, else undoes it) until it fits.

Before the first update and every `eval_interval` updates the team plays the validation
episodes (drawing its actions from generators seeded by the episodes, or with
`--eval-decoding argmax` taking the likeliest); the adapters that score best at the final
team size are kept in `best/`, the starting (zero) adapters among them when the run starts
at that size (the last are not what a run reports: the source study found its last
checkpoint worse than its peak). With `--curriculum.values 3 5 10` the team size rises
after `patience` validations without an improvement of `min_improvement`. Before the first
update and after the last, the test episodes are played by the starting model and by the
best adapters at the last team size, and written as two evaluation reports that
`alemlite compare` reads.

With `--decoding generate` turns are sampled replies (`generation.py`): each update's line
of the curve says the share of its replies that went unparsed (`unparsed`), and the test
reports carry each episode's `parse_rate`, as eval-llm's do.

Run folder: `config.json` (settings and provenance), `curve.jsonl` (one line per update,
appended as it happens), `checkpoint/` (for `--resume`), `best/` (peft adapters, each with a
`provenance.json`), `reports/start.json`, `reports/best.json`, `summary.json`, `curve.png`.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

import alemlite
from alemlite.core.errors import ConfigError, require
from alemlite.folder_lock import hold_folder
from alemlite.outputs import writable_folder
from alemlite.report import read_episodes
from llm_bridge.finetune import objectives
from llm_bridge.finetune.checkpoint import has_checkpoint, load_checkpoint, save_checkpoint
from llm_bridge.finetune.config import FinetuneConfig
from llm_bridge.finetune.generation import CompletionTerms, Generate, unparsed_share
from llm_bridge.finetune.plots import plot_curve
from llm_bridge.finetune.policy import LanguagePolicy
from llm_bridge.finetune.results import held_out_report, held_out_summary
from llm_bridge.finetune.rollout import Decoder, Likelihood, Rollout, Table, play, table_options

SHARED_ADAPTER = "policy"


class Finetuner:
    """One run of `config`. `model` (a transformers causal LM and its tokenizer) replaces
    loading `config.model`, for models built in the process (the tests' tiny one)."""

    def __init__(
        self,
        config: FinetuneConfig,
        provenance: Callable[[], dict] | None = None,
        model: tuple[Any, Any] | None = None,
    ):
        env_spec = alemlite.spec(config.env)
        playable = [n for n in alemlite.registered_environments() if alemlite.spec(n).prompts]
        require(
            env_spec.prompts is not None,
            f"env={config.env} has no prompt builder, so no language model can play it; "
            f"choose one of: {', '.join(playable)}",
        )
        self.config = config
        self.env_spec = env_spec
        self.provenance = provenance
        self.model = model
        self.model_name = config.model if model is None else "in-process model"
        self.out = config.run_dir()
        defaults = env_spec.prompt_defaults
        self.prompt = dataclasses.replace(
            defaults, history=config.history, variant=config.variant or defaults.variant
        )
        self.groups = config.num_envs // config.group.group_size
        # TeamTR plays one rollout per seat in an update; each needs its own seeds.
        self.rollouts_per_update = max(config.sizes) if config.algorithm == "teamtr" else 1
        last_seed = config.seed + config.num_updates * self.rollouts_per_update * self.groups
        require(
            last_seed < config.validation_seed,
            f"seed={config.seed} with num_updates={config.num_updates} reaches the validation "
            f"seeds ({config.validation_seed}); lower seed or raise validation_seed",
        )
        self._tables: dict[int, Table] = {}
        self.decoder: Decoder
        self.terms: objectives.TurnTerms
        if config.decoding == "generate":
            self.decoder, self.terms = Generate(config.max_tokens), CompletionTerms()
        else:
            self.decoder, self.terms = Likelihood(), objectives.LikelihoodTerms()

    # ---- pieces ------------------------------------------------------------------------------
    def table(self, size: int) -> Table:
        if size not in self._tables:
            options = table_options(self.config.options, size)
            self._tables[size] = Table(self.env_spec, options, self.prompt)
        return self._tables[size]

    def adapters(self) -> tuple[str, ...]:
        if self.config.algorithm == "teamtr":
            return tuple(f"seat_{seat}" for seat in range(max(self.config.sizes)))
        return (SHARED_ADAPTER,)

    def seat_adapters(self, size: int) -> list[str]:
        names = self.adapters()
        return [names[seat] if len(names) > 1 else names[0] for seat in range(size)]

    def train_seeds(self, update: int, rollout: int) -> np.ndarray:
        first = self.config.seed + (update * self.rollouts_per_update + rollout) * self.groups
        return np.repeat(first + np.arange(self.groups), self.config.group.group_size)

    def evaluate(self, size: int, base_seed: int, episodes: int) -> Rollout:
        seeds = base_seed + np.arange(episodes)
        adapters = self.seat_adapters(size)
        # The same draws for every model evaluated on these seeds.
        sample = self.config.eval_decoding == "sample"
        sampler = np.random.default_rng(base_seed) if sample else None
        return play(
            self.table(size), self.policy, seeds, adapters, sampler, self.config.history,
            self.decoder,
        )  # fmt: skip

    # ---- the run -----------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        writable_folder(self.out)
        with hold_folder(self.out, "finetune.lock", "fine-tuning run", "--out"):
            return self._run()

    def _run(self) -> dict[str, Any]:
        config = self.config
        if config.hf_threads is not None:
            torch.set_num_threads(config.hf_threads)
        record_path = self.out / "config.json"
        if config.resume:
            require(
                has_checkpoint(self.out / "checkpoint"),
                f"resume=True but out={self.out} holds no checkpoint; drop --resume",
            )
            recorded = json.loads(record_path.read_text()).get("settings")
            require(
                recorded == json.loads(json.dumps(config.record())),
                f"out={self.out} was trained with other settings; resume with its "
                "config.json's settings or choose another --out",
            )
        else:
            require(
                not has_checkpoint(self.out / "checkpoint"),
                f"out={self.out} holds a run; pass --resume to continue it or choose another --out",
            )
            # The settings a resume must match, and the code and tree that started the run.
            record = {"settings": config.record(), **self._provenance()}
            record_path.write_text(json.dumps(record, indent=2) + "\n")
        first = self.table(config.sizes[0])
        torch.manual_seed(config.seed)
        if self.model is None:
            self.policy = LanguagePolicy.load(
                config.model, config.hf_dtype, config.hf_device, first.action_names,
                self.adapters(), config.lora, config.temperature,
            )  # fmt: skip
        else:
            model, tokenizer = self.model
            self.policy = LanguagePolicy(
                copy.deepcopy(model), tokenizer, first.action_names, self.adapters(),
                config.lora, config.temperature,
            )  # fmt: skip
        self.optimizers = {
            name: torch.optim.Adam(self.policy.parameters(name), lr=config.learning_rate)
            for name in self.adapters()
        }
        final_size = config.sizes[-1]
        if config.resume:
            progress = self._restore()
        else:
            start = self.evaluate(final_size, config.test_seed, config.test_episodes)
            self._report("start", start, final_size)
            progress = {
                "update": 0, "stage": 0, "stale": 0, "stage_best": None, "best": None,
                "seconds": 0.0,
            }  # fmt: skip
            # The starting model is a candidate for the kept checkpoint: a run whose updates
            # all validate worse than it keeps (and reports) the start.
            first = {"update": 0, "size": config.sizes[0]}
            first.update(self._validate(progress, config.sizes[0]))
            (self.out / "curve.jsonl").write_text(json.dumps(first) + "\n")
            self._save(progress)
        self._keep_curve(progress["update"])
        bar = tqdm(
            total=config.num_updates, initial=progress["update"], unit="update",
            disable=not config.progress, desc=f"finetune {config.algorithm}",
        )  # fmt: skip
        while progress["update"] < config.num_updates:
            update, size = progress["update"], config.sizes[progress["stage"]]
            began = time.perf_counter()
            row = self._update(update, size)
            progress["update"] = update + 1
            if progress["update"] % config.eval_interval == 0 or (
                progress["update"] == config.num_updates
            ):
                row.update(self._validate(progress, size))
            progress["seconds"] += time.perf_counter() - began
            row["seconds"] = round(progress["seconds"], 2)
            with open(self.out / "curve.jsonl", "a") as curve:
                curve.write(json.dumps(row) + "\n")
            self._save(progress)
            bar.set_postfix(ret=f"{row['train_return']:.2f}", size=size)
            bar.update(1)
        bar.close()
        return self._finish(progress)

    def _update(self, update: int, size: int) -> dict[str, Any]:
        config = self.config
        sampler = np.random.default_rng([config.seed, update])
        if config.algorithm != "teamtr":
            rollout = self._rollout(update, 0, size, sampler)
            stats = self._epochs(rollout, SHARED_ADAPTER, rollout.turns, sampler)
            rollouts = [rollout]
        else:
            stats, rollouts = {}, []
            for k, seat in enumerate(sampler.permutation(size).tolist()):
                rollout = self._rollout(update, k, size, sampler)
                rollouts.append(rollout)
                own = [turn for turn in rollout.turns if turn.seat == seat]
                stats = self._trust_region(rollout, f"seat_{seat}", own, sampler)
        returns = np.concatenate([rollout.episodes["episode_return"] for rollout in rollouts])
        row = {"update": update + 1, "size": size, "train_return": float(np.mean(returns))}
        if self.decoder.parses:
            row["unparsed"] = unparsed_share([t for rollout in rollouts for t in rollout.turns])
        return {**row, **stats}

    def _rollout(self, update: int, k: int, size: int, sampler) -> Rollout:
        seeds = self.train_seeds(update, k)
        return play(
            self.table(size), self.policy, seeds, self.seat_adapters(size), sampler,
            self.config.history, self.decoder,
        )  # fmt: skip

    def _epochs(
        self,
        rollout: Rollout,
        adapter: str,
        turns: list[Any],
        sampler: np.random.Generator,
        go_on: Callable[[], bool] = lambda: True,
    ) -> dict[str, float]:
        """The objective's epochs over `turns` for `adapter`, stopping early once `go_on()`
        says no after an epoch; the last minibatch's terms."""
        config = self.config
        advantages = objectives.group_advantages(
            rollout.episodes["episode_return"], config.group.group_size
        )
        self.policy.use(adapter)
        reference = self.terms.reference(self.policy, turns, config.minibatch_turns)
        optimizer = self.optimizers[adapter]
        setwise = config.algorithm == "srpo"
        terms: dict[str, float] = {}
        for _ in range(config.num_epochs):
            for batch in objectives.minibatches(turns, config.minibatch_turns, sampler, setwise):
                chosen = [turns[i] for i in batch]
                loss, terms = objectives.turn_loss(
                    self.terms, self.policy, chosen, advantages[[t.episode for t in chosen]],
                    reference[batch], config.clip_eps, config.group.kl_coef, setwise,
                )  # fmt: skip
                optimizer.zero_grad()
                loss.backward()
                torch.nn.utils.clip_grad_norm_(
                    self.policy.parameters(adapter), config.max_grad_norm
                )
                optimizer.step()
            if not go_on():
                break
        return {**terms, "turns": len(turns)}

    def _trust_region(
        self, rollout: Rollout, adapter: str, turns: list[Any], sampler
    ) -> dict[str, float]:
        """TeamTR's stage for one seat: epochs within the KL budget, then backtracking."""
        config = self.config
        self.policy.use(adapter)
        start = self.policy.adapter_state(adapter)
        optimizer_start = copy.deepcopy(self.optimizers[adapter].state_dict())
        measured: list[float] = []

        def within_budget() -> bool:
            measured.append(self.terms.kl_before_after(self.policy, turns, config.minibatch_turns))
            return measured[-1] <= config.group.kl_budget

        terms = self._epochs(rollout, adapter, turns, sampler, within_budget)
        kl = measured[-1]
        scale = 1.0
        if kl > config.group.kl_budget:
            end = self.policy.adapter_state(adapter)
            # Halved steps, then none at all (the rollout's own policy: KL 0, always fits).
            for scale in [0.5**k for k in range(1, config.group.backtrack_steps + 1)] + [0.0]:
                self.policy.load_adapter_state(
                    {n: start[n] + scale * (end[n] - start[n]) for n in start}
                )
                kl = self.terms.kl_before_after(self.policy, turns, config.minibatch_turns)
                if kl <= config.group.kl_budget:
                    break
            self.optimizers[adapter].load_state_dict(optimizer_start)
        return {**terms, "seat_kl": kl, "step_scale": scale}

    def _validate(self, progress: dict[str, Any], size: int) -> dict[str, Any]:
        config, curriculum = self.config, self.config.curriculum
        value = float(
            np.mean(
                self.evaluate(size, config.validation_seed, config.eval_episodes).episodes[
                    "episode_return"
                ]
            )
        )
        row: dict[str, Any] = {"validation_return": value}
        stage_best = progress["stage_best"]
        improved = stage_best is None or value >= stage_best + curriculum.min_improvement
        if stage_best is None or value > stage_best:
            progress["stage_best"] = value
        final_stage = progress["stage"] == len(config.sizes) - 1
        best = progress["best"]
        if final_stage and (best is None or value > best["validation_return"]):
            progress["best"] = {"update": progress["update"], "validation_return": value}
            self.policy.save(self.out / "best", {**progress["best"], **self._provenance()})
            torch.save(self._adapter_states(), self.out / "best" / "adapters.pt")
            row["best"] = True
        progress["stale"] = 0 if improved else progress["stale"] + 1
        if not final_stage and progress["stale"] >= curriculum.patience:
            progress.update(stage=progress["stage"] + 1, stale=0, stage_best=None)
            row["next_size"] = config.sizes[progress["stage"]]
        return row

    # ---- files -------------------------------------------------------------------------------
    def _adapter_states(self) -> dict[str, dict[str, torch.Tensor]]:
        return {name: self.policy.adapter_state(name) for name in self.adapters()}

    def _save(self, progress: dict[str, Any]) -> None:
        optimizers = {name: opt.state_dict() for name, opt in self.optimizers.items()}
        save_checkpoint(self.out / "checkpoint", self._adapter_states(), optimizers, progress)

    def _restore(self) -> dict[str, Any]:
        adapters, optimizers, progress = load_checkpoint(self.out / "checkpoint")
        for state in adapters.values():
            self.policy.load_adapter_state(state)
        for name, state in optimizers.items():
            self.optimizers[name].load_state_dict(state)
        return progress

    def _keep_curve(self, updates: int) -> None:
        """Drop curve lines of updates after the checkpoint (a resumed run plays them again)."""
        path = self.out / "curve.jsonl"
        lines = path.read_text().splitlines() if path.exists() else []
        kept = [line for line in lines if json.loads(line)["update"] <= updates]
        path.write_text("".join(line + "\n" for line in kept))

    def _provenance(self) -> dict[str, Any]:
        return {"provenance": self.provenance()} if self.provenance else {}

    def _report(self, name: str, rollout: Rollout, size: int) -> dict[str, Any]:
        path = self.out / "reports" / f"{name}.json"
        provenance = self.provenance() if self.provenance else None
        return held_out_report(
            path, self.config, self.model_name, self.prompt, name, rollout.episodes, size,
            provenance,
        )  # fmt: skip

    def _finish(self, progress: dict[str, Any]) -> dict[str, Any]:
        config = self.config
        size = config.sizes[-1]
        require(
            progress["best"] is not None,
            f"the run never validated at its last team size {size}; raise num_updates",
        )
        for state in torch.load(self.out / "best" / "adapters.pt", weights_only=True).values():
            self.policy.load_adapter_state(state)
        best = self.evaluate(size, config.test_seed, config.test_episodes)
        self._report("best", best, size)
        start = read_episodes(self.out / "reports" / "start.json")
        headline = self.env_spec.metrics[0] if self.env_spec.metrics else "episode_return"
        summary = {
            "algorithm": config.algorithm,
            "model": self.model_name,
            "env": config.env,
            "size": size,
            "best_update": progress["best"]["update"],
            "best_validation_return": progress["best"]["validation_return"],
            "updates": progress["update"],
            "train_seconds": round(progress["seconds"], 1),
            "test": held_out_summary(start, best.episodes, headline),
            "config": config.record(),
            **self._provenance(),
        }
        (self.out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
        plot_curve(self.out / "curve.jsonl", self.out / "curve.png", config.algorithm)
        return summary


def finetune(
    config: FinetuneConfig,
    provenance: Callable[[], dict] | None = None,
    model: tuple[Any, Any] | None = None,
) -> dict:
    """Run (or resume) the fine-tuning of `config`; returns its summary."""
    try:
        return Finetuner(config, provenance, model).run()
    except ImportError as error:
        raise ConfigError(f"{error}; fine-tuning needs the hf extra and peft") from None
