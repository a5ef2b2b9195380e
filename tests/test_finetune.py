"""`alemlite finetune`: GRPO, SRPO and TeamTR fine-tune a language model that plays every seat.

The learning tests use a tiny Llama built here (a word-level tokenizer fitted to the dining
prompts, so that every action name is one token and the likelihood head starts spread over
the legal actions), on the same code path as a real model: chat template, likelihood head,
LoRA adapters, grouped rollouts, validation and test reports. Dining N = 3 over 6 steps:
uniform random play scores -0.60, deadlock -2.00, all-WAIT -1.00, resource ordering 0.50.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import subprocess
import sys

import numpy as np
import pytest

pytest.importorskip("peft", reason="the hf extra installs peft")
torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import alemlite  # noqa: E402
from llm_bridge.finetune import objectives  # noqa: E402
from llm_bridge.finetune.config import FinetuneConfig, GroupConfig  # noqa: E402
from llm_bridge.finetune.rollout import Table  # noqa: E402
from llm_bridge.finetune.trainer import finetune  # noqa: E402
from tests.tiny_lm import dining_llama  # noqa: E402

pytestmark = pytest.mark.usefixtures("one_torch_thread")

# What the tiny model's first test episodes score (about -1.4: it deadlocks often) leaves
# room for a rise of 0.5 that 10 updates reach with each objective.
MARGIN = 0.5


@pytest.fixture(scope="module")
def dining():
    spec = alemlite.spec("dining")
    return spec.options(num_agents=3, max_steps=6)


@pytest.fixture(scope="module")
def tiny_model(dining):
    """A tiny Llama whose words are those of the dining prompts."""
    return dining_llama(transformers, torch, dining)


def learning_config(dining, tmp_path, algorithm: str, **changes) -> FinetuneConfig:
    settings = dict(
        algorithm=algorithm, env="dining", options=dining, num_envs=16, num_updates=10,
        num_epochs=2, minibatch_turns=96, learning_rate=1e-2, eval_interval=2, eval_episodes=8,
        test_episodes=16, group=GroupConfig(group_size=4, kl_coef=0.0), out=tmp_path / algorithm,
        progress=False,
    )  # fmt: skip
    return FinetuneConfig(**(settings | changes))


@pytest.mark.parametrize("algorithm", ["grpo", "srpo", "teamtr"])
def test_each_objective_raises_the_held_out_return(dining, tiny_model, tmp_path, algorithm):
    summary = finetune(learning_config(dining, tmp_path, algorithm), model=tiny_model)
    start, best = summary["test"]["start"]["mean"], summary["test"]["best"]["mean"]
    assert best >= start + MARGIN, f"{algorithm}: start {start:.3f}, best {best:.3f}"
    # The reports are evaluation results that `alemlite compare` reads, on the same seeds.
    reports = [json.loads((tmp_path / algorithm / "reports" / f"{n}.json").read_text()) for n in
               ("start", "best")]  # fmt: skip
    assert reports[0]["config"]["seed"] == reports[1]["config"]["seed"]
    curve = (tmp_path / algorithm / "curve.jsonl").read_text().splitlines()
    assert [json.loads(line)["update"] for line in curve] == list(range(11))  # 0: the start
    assert (tmp_path / algorithm / "curve.png").stat().st_size > 0


def test_a_flipped_advantage_does_not_learn(dining, tiny_model, tmp_path, monkeypatch):
    """The learning test's teeth: with the advantage's sign flipped, no rise."""
    right = objectives.group_advantages
    monkeypatch.setattr(objectives, "group_advantages", lambda *a: -right(*a))
    summary = finetune(learning_config(dining, tmp_path, "grpo"), model=tiny_model)
    start, best = summary["test"]["start"]["mean"], summary["test"]["best"]["mean"]
    assert best < start + MARGIN, f"flipped: start {start:.3f}, best {best:.3f}"
    # No update validates better than the start, so the start is what the run keeps.
    assert summary["best_update"] == 0 and best == start


def test_a_resumed_run_repeats_the_uninterrupted_one(dining, tiny_model, tmp_path):
    def run(out, updates, resume=False):
        config = learning_config(
            dining, tmp_path, "srpo", out=tmp_path / out, num_updates=updates, resume=resume,
            num_envs=8, test_episodes=2, eval_episodes=2,
        )  # fmt: skip
        return finetune(config, model=tiny_model)

    run("whole", 4)
    run("parts", 2)
    run("parts", 4, resume=True)
    whole, parts = (
        torch.load(tmp_path / name / "checkpoint" / "tensors.pt", weights_only=True)
        for name in ("whole", "parts")
    )
    for name, tensor in whole["adapters"]["policy"].items():
        torch.testing.assert_close(parts["adapters"]["policy"][name], tensor, rtol=0, atol=1e-6)

    def curve(name):
        rows = [
            json.loads(row) for row in (tmp_path / name / "curve.jsonl").read_text().splitlines()
        ]
        return [{k: v for k, v in row.items() if k != "seconds"} for row in rows]

    assert curve("parts") == curve("whole")


def test_a_run_folder_is_not_overwritten_and_resume_checks_settings(dining, tiny_model, tmp_path):
    config = learning_config(
        dining, tmp_path, "grpo", num_updates=1, eval_interval=1, num_envs=4, group=GroupConfig(
            group_size=2), test_episodes=1, eval_episodes=1,
    )  # fmt: skip
    finetune(config, model=tiny_model)
    with pytest.raises(alemlite.ConfigError, match="holds a run; pass --resume"):
        finetune(config, model=tiny_model)
    changed = dataclasses.replace(config, learning_rate=1e-3, resume=True)
    with pytest.raises(alemlite.ConfigError, match="was trained with other settings"):
        finetune(changed, model=tiny_model)


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--num-envs", "6"], "--num-envs=6 must be a multiple of --group.group-size=4"),
        (["--group.group-size", "1"], "--group.group-size=1 must be at least 2"),
        (["--learning-rate", "0"], "--learning-rate=0.0 must be a number > 0"),
        (["--curriculum.values", "5", "3"], "--curriculum.values=[5, 3] must increase"),
        (["--lora.rank", "0"], "--lora.rank=0 must be at least 1"),
    ],
)
def test_a_bad_value_is_one_line(flags, message):
    done = subprocess.run(
        [sys.executable, "-m", "alemlite_app.cli", "finetune", *flags],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], done.stderr


def test_one_update_of_the_real_model(tmp_path):
    """SmolLM2-135M itself through `alemlite finetune`: one GRPO update moves its adapter."""
    from alemlite_app.cli import main
    from llm_bridge.models import cached_file

    if not cached_file("smollm2-135m").is_file():
        pytest.skip("smollm2-135m is not fetched: run `make model` (make test does)")
    out = tmp_path / "smollm2"
    main([
        "finetune", "grpo", "--env", "dining", "--num-agents", "3", "--max-steps", "2",
        "--num-envs", "2", "--group.group-size", "2", "--num-updates", "1", "--num-epochs", "1",
        "--eval-episodes", "1", "--test-episodes", "1", "--minibatch-turns", "8",
        "--learning-rate", "1e-3", "--hf-threads", "1", "--no-progress", "--out", str(out),
    ])  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    assert summary["model"] == "smollm2-135m" and summary["updates"] == 1
    adapters = torch.load(out / "checkpoint" / "tensors.pt", weights_only=True)["adapters"]
    moved = [t for name, t in adapters["policy"].items() if "lora_B" in name]
    assert moved and all(torch.isfinite(t).all() for t in moved)
    assert any(t.abs().max() > 0 for t in moved), "the update left every adapter at zero"
    assert (out / "best" / "policy" / "adapter_config.json").is_file()  # peft's own format


def test_eval_llm_plays_the_kept_adapters_as_the_trainer_scored_them(dining, tiny_model, tmp_path):
    """`eval-llm --hf-adapter RUN/best/policy` merges the kept adapters into the model and
    plays the policy the fine-tuning run validated: the same probabilities of the same turn."""
    from alemlite_app.cli import main
    from llm_bridge.finetune.config import LoraConfig
    from llm_bridge.finetune.policy import LanguagePolicy, Turn
    from llm_bridge.transcripts import read_records

    run = tmp_path / "run"
    config = learning_config(dining, tmp_path, "grpo", out=run, num_updates=2, eval_interval=1,
                             num_envs=8, test_episodes=1, eval_episodes=2)  # fmt: skip
    finetune(config, model=tiny_model)
    model, tokenizer = tiny_model
    folder = tmp_path / "tiny"
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    main([
        "eval-llm", "--env", "dining", "--num-agents", "3", "--max-steps", "1", "--episodes",
        "1", "--backend", "hf", "--model", str(folder), "--hf-adapter", str(run / "best" /
        "policy"), "--decoding", "loglik", "--history", "0", "--no-progress", "--out",
        str(tmp_path / "eval"),
    ])  # fmt: skip
    turns = [r for r in read_records(tmp_path / "eval" / "transcript.jsonl") if "choice_probs" in r]
    played = next(t for t in turns if t["seat"] == 0)
    table = Table(alemlite.spec("dining"), dining, dataclasses.replace(
        alemlite.spec("dining").prompt_defaults, history=0))  # fmt: skip
    # peft puts adapters into the model it is given: a copy, the fixture's stays bare.
    policy = LanguagePolicy(
        copy.deepcopy(model), tokenizer, table.action_names, ["policy"], LoraConfig()
    )
    policy.load_adapter_state(torch.load(run / "best" / "adapters.pt", weights_only=True)["policy"])
    chat = [{"role": "system", "content": table.system_prompt}, *played["prompt"]]
    legal = np.array([table.action_names.index(name) for name in played["choice_probs"]])
    turn = Turn(0, 0, 0, policy.chat_tokens(chat), legal, 0, np.zeros(len(legal)))
    with torch.no_grad():
        trained = policy.log_probs([turn]).exp().numpy()[0]
    np.testing.assert_allclose(list(played["choice_probs"].values()), trained, atol=1e-4)
    assert not np.allclose(trained, np.full(len(legal), 1 / len(legal)), atol=1e-3)
