"""The tables of the shipped reference agents: each pretrained policy with its command and
held-out return, and the matrix-game references method by method (rendered by
`benchmarks.readme_tables`)."""

from __future__ import annotations

import json

import numpy as np

import alemlite
import baselines
from alemlite.envs.dining.rewards import shaped_ceiling
from benchmarks import references
from benchmarks.harness import format_interval
from benchmarks.harness import load_results as load
from benchmarks.references import p_value
from benchmarks.study.config import method_label

# Per Craft difficulty, its shipped references (`benchmarks.craft_references`, a `--label`
# naming each variant) and their results files, in table order.
CRAFT_REFERENCES = {
    difficulty: tuple(
        (
            "-".join(("craft", difficulty, *label)),
            "_".join(("craft_reference", difficulty, *label)) + ".json",
        )
        for label in ((), *((name,) for name in labels))
    )
    for difficulty, labels in (
        ("easy", ("ippo", "curriculum")),
        ("medium", ("ippo", "curriculum")),
        ("hard", ("curriculum",)),
    )
}
DINING_ANCHORS = ("uniform_random", "backoff", "resource_ordering")
MATRIX_ANCHORS = ("uniform", "tit_for_tat", "optimal")
MATRIX_GAMES = ("climbing", "penalty", "stag_hunt", "prisoners_dilemma")
# Shipped policy -> (results file, run name, scripted anchors shown beside it); run name None:
# a `benchmarks.references` file (a dining, matrix or Craft preset), whose chosen algorithm
# names the run.
SHIPPED = {
    "ippo-dining-5": (
        "marl_dining_5.json",
        "ippo-dining-5",
        DINING_ANCHORS,
    ),
    "ippo-craft-medium": ("marl_craft_cpu.json", "ippo-craft-medium", ("random", "team")),
    **{
        name: (results_file, None, ("random", "team"))
        for variants in CRAFT_REFERENCES.values()
        for name, results_file in variants
    },
    "dining-3-shaped": ("dining_reference_3_shaped.json", None, DINING_ANCHORS),
    "dining-5-shaped": ("dining_reference_5_shaped.json", None, DINING_ANCHORS),
    "dining-5-shaped-1b": ("dining_reference_5_shaped_1b.json", None, DINING_ANCHORS),
    "dining-10-shaped": ("dining_reference_10_shaped.json", None, DINING_ANCHORS),
    "dining-10-shaped-250m": ("dining_reference_10_shaped_250m.json", None, DINING_ANCHORS),
    "dining-15-shaped": ("dining_reference_15_shaped.json", None, DINING_ANCHORS),
    "dining-3-paper": ("dining_reference_3_paper.json", None, DINING_ANCHORS),
    "dining-5-paper": ("dining_reference_5_paper.json", None, DINING_ANCHORS),
    "dining-10-paper": ("dining_reference_10_paper.json", None, DINING_ANCHORS),
    "dining-15-paper": ("dining_reference_15_paper.json", None, DINING_ANCHORS),
    **{
        f"matrix-{game.replace('_', '-')}-2": (
            f"matrix_reference_{game}_2.json",
            None,
            MATRIX_ANCHORS,
        )
        for game in MATRIX_GAMES
    },
}


def curriculum_stages(results: dict) -> str:
    """`, building_cost 0 then 1 then 3` for a reference trained over a curriculum, else ''."""
    values = results["config"].get("curriculum", {}).get("values")
    if not values:
        return ""
    env_name = results["runs"][results["chosen"]["algorithm"]]["env"]["name"]
    option = alemlite.spec(env_name).curriculum.option
    return f", {option} " + " then ".join(str(value) for value in values)


def _describe_policy(description: dict) -> str:
    network = description["network"]
    # Policies exported since environments had options record them under "options".
    env = description["env"].get("options") or {
        key: value for key, value in description["env"].items() if key != "name"
    }
    settings = ", ".join(f"{key} {value}" for key, value in env.items())
    kind = "GRU" if network["recurrent"] else "feed-forward"
    return (
        f"{kind} {method_label(description['algorithm'])} actor, {network['num_layers']}x"
        f"{network['hidden_size']} tanh, {description['env']['name']} ({settings}), "
        f"{description['num_actions']} actions, {description['observation_shape'][0]:,} "
        "observation features"
    )


def _chosen_among(results: dict) -> str:
    """How a reference was chosen, and its Welch test against the best scripted policy."""
    scripted = results["test"]["scripted"]
    best = max(scripted, key=lambda policy: scripted[policy]["return"]["mean"])
    algorithms = ", ".join(method_label(name) for name in results["runs"])
    return (
        f"chosen on validation seeds among {algorithms}; "
        f"{format_interval(results['test']['return'])} vs {best.replace('_', ' ')} "
        f"{scripted[best]['return']['mean']:.2f}, Welch p: {p_value(scripted[best]['welch_p'])}; "
    )


def pretrained() -> str:
    """Each shipped policy: what it is, the command that trained it, its held-out return."""
    lines = [
        "| name | what | trained with | held-out return |",
        "| --- | --- | --- | --- |",
    ]
    for name, (results_file, run_name, anchors) in SHIPPED.items():
        description = json.loads((baselines.PRETRAINED_DIR / name / "policy.json").read_text())
        results = load(results_file)
        chosen = "" if run_name else _chosen_among(results)
        run = results["runs"][run_name or results["chosen"]["algorithm"]]
        seed, update = description["seed_index"], description["update"]
        steps = run["agent_steps_per_seed"] * update // run["num_updates"]
        references = run["references"]
        anchor_text = ", ".join(
            f"{anchor.replace('_', ' ')} {references[anchor]['return_across_seeds']['mean']:.2f}"
            for anchor in anchors
        )
        lines.append(
            f"| `{name}` | {_describe_policy(description)} | `{results['machine']['command']}` "
            f"({chosen}best checkpoint of the best seed: update {update} of {run['num_updates']}, "
            f"{steps / 1e6:.2f} M agent steps; `{results_file}`) "
            f"| {run['best']['return_per_seed'][seed]:.2f} on {run['test_episodes']} test "
            f"episodes from seed {run['test_seed']:,} ({anchor_text}) |"
        )
    return "\n".join(lines)


def matrix_references() -> str:
    """Per game, every algorithm's best checkpoints over its seeds (the held-out return with
    its interval across seeds, and how many seeds reach the optimal team's return), the
    shipped reference and the scripted ceiling and floor, on the same test episodes."""
    first = load(f"matrix_reference_{MATRIX_GAMES[0]}_2.json")
    algorithms = list(first["runs"])
    lines = [
        "| game | "
        + " | ".join(method_label(name) for name in algorithms)
        + " | shipped reference | optimal | uniform |",
        "| --- |" + " --- |" * (len(algorithms) + 3),
    ]
    for game in MATRIX_GAMES:
        results = load(f"matrix_reference_{game}_2.json")
        scripted = results["test"]["scripted"]
        ceiling = scripted["optimal"]["return"]["mean"]
        cells = []
        for name in algorithms:
            best = results["runs"][name]["best"]
            seeds = best["return_per_seed"]
            # within one payoff unit of the optimal team over the whole episode
            at_optimum = sum(value >= ceiling - 1 for value in seeds)
            cells.append(
                f"{format_interval(best['return_across_seeds'], 1)} "
                f"({at_optimum}/{len(seeds)} at the optimum)"
            )
        chosen = results["chosen"]
        cells.append(
            f"`matrix-{game.replace('_', '-')}-2`: {method_label(chosen['algorithm'])}, "
            f"{format_interval(results['test']['return'], 1)}"
        )
        cells += [f"{ceiling:.1f}", format_interval(scripted["uniform"]["return"], 1)]
        lines.append(f"| {game.replace('_', ' ')} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _budget(agent_steps: float) -> str:
    """Agent steps a seed in a row's words: `2 M`, `250 M`, `1 B`."""
    return f"{agent_steps / 1e9:.0f} B" if agent_steps >= 1e9 else f"{agent_steps / 1e6:.0f} M"


def _millions(agent_steps: float) -> str:
    return f"{agent_steps / 1e6:,.2f} M" if agent_steps < 1e8 else f"{agent_steps / 1e6:,.0f} M"


# Each setting's reference results, then the same setting trained for longer (`--label`).
DINING_BUDGETS = (
    "dining_reference_5_shaped.json",
    "dining_reference_5_shaped_1b.json",
    "dining_reference_10_shaped.json",
    "dining_reference_10_shaped_250m.json",
)


def dining_budget() -> str:
    """Each `shaped` dining reference at its budget (IPPO and MAPPO, 4 seeds) beside the same
    setting trained for far longer (one seed a method): where each best checkpoint was, its
    held-out return, and the setting's ceiling (`shaped_ceiling`)."""
    lines = [
        "| table (ceiling) | run | agent steps a seed | seeds | best checkpoint at | held-out "
        "return (best checkpoints) | shipped policy on the test episodes | vs resource ordering |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for found in map(load, DINING_BUDGETS):
        lines += _budget_rows(found)
    return "\n".join(lines)


def _budget_rows(found: dict) -> list[str]:
    """One row a method of a `dining_references` results file."""
    chosen = found["chosen"]
    chosen_run = found["runs"][chosen["algorithm"]]
    options = alemlite.spec("dining").options(**chosen_run["env"]["options"])
    env = alemlite.spec("dining").build(options)
    ceiling = shaped_ceiling(env.default_params, int(env.max_meals(env.default_params)))
    resource_ordering = found["test"]["scripted"]["resource_ordering"]
    rows = []
    for name, run in found["runs"].items():
        steps = run["agent_steps_per_seed"]
        best = run["best"]
        at = ", ".join(
            _millions(steps * update / run["num_updates"]) for update in best["update_per_seed"]
        )
        held_out = (
            f"{format_interval(best['return_across_seeds'])} across seeds"
            if run["num_seeds"] > 1
            else f"{best['return_per_seed'][0]:.2f}"
        )
        shipped = (
            f"{format_interval(found['test']['return'])} (seed {chosen['seed']}) | "
            f"{resource_ordering['return']['mean']:.2f}, Welch p "
            f"{p_value(resource_ordering['welch_p'])}"
            if name == chosen["algorithm"]
            else f"not shipped (below {method_label(chosen['algorithm'])} on validation) |"
        )
        rows.append(
            f"| N = {options.num_agents} ({ceiling:.2f}) | {method_label(name)}, {_budget(steps)} "
            f"| {_millions(steps)} | {run['num_seeds']} | {at} | {held_out} | {shipped} |"
        )
    return rows


CRAFT_ANCHORS = {"random": "uniform random", "team": "scripted team"}


def craft_references() -> str:
    """Per difficulty, the shipped Craft reference beside IPPO and MAPPO trained from the
    reward (`marl_craft_cpu.json`) and the random and scripted teams, on the same test
    episodes (the best checkpoints; learned rows pool their seeds' episodes)."""
    from_reward = load("marl_craft_cpu.json")["runs"]
    lines = [
        "| difficulty | policy | agent steps a seed | held-out return | team achievements % "
        "| coordination achievements % | tasks completed | syncs / handovers | gives | shelters |",
        "| --- |" + " --- |" * 9,
    ]

    def row(difficulty: str, policy: str, steps: str, episodes: dict) -> str:
        cells = [
            format_interval(episodes["episode_return"]),
            format_interval(episodes["team_achievement_percent"], 1),
            format_interval(episodes["coordination_achievement_percent"], 1),
            f"{episodes['coordination/task_completions']['mean']:.2f}",
            f"{episodes['coordination/syncs']['mean']:.2f} / "
            f"{episodes['coordination/handovers']['mean']:.2f}",
            f"{episodes['coordination/gives']['mean']:.1f}",
            f"{episodes['construction/shelters']['mean']:.2f}",
        ]
        return f"| {difficulty} | {policy} | {steps} | " + " | ".join(cells) + " |"

    def chosen_steps(results: dict) -> int:
        chosen = results["chosen"]
        run = results["runs"][chosen["algorithm"]]
        return run["agent_steps_per_seed"] * chosen["update"] // run["num_updates"]

    for difficulty, variants in CRAFT_REFERENCES.items():
        for name, results_file in variants:
            results = load(results_file)
            chosen = results["chosen"]
            # the steps of the references it started from come first, the earliest first
            parts, start = [chosen_steps(results)], results["config"].get("init_actor")
            while start in SHIPPED:
                earlier = load(SHIPPED[start][0])
                parts.insert(0, chosen_steps(earlier))
                start = earlier["config"].get("init_actor")
            steps = " + ".join(f"{part / 1e6:.2f}" for part in parts) + " M"
            method = references.chosen_method_label(results) + curriculum_stages(results)
            lines.append(
                row(
                    difficulty,
                    f"`{name}` ({method}, seed {chosen['seed']})",
                    steps,
                    results["runs"][chosen["algorithm"]]["best"]["episodes"],
                )
            )
        for algorithm in ("ippo", "mappo"):
            trained = from_reward[f"{algorithm}-craft-{difficulty}"]
            lines.append(
                row(
                    difficulty,
                    f"{method_label(algorithm)} from the reward ({trained['num_seeds']} seeds)",
                    f"{trained['agent_steps_per_seed'] / 1e6:.2f} M",
                    trained["best"]["episodes"],
                )
            )
        base = load(variants[0][1])  # the anchors played the same test episodes in every run
        scripted = base["runs"][base["chosen"]["algorithm"]]["references"]
        for anchor, label in CRAFT_ANCHORS.items():
            lines.append(row(difficulty, label, "", scripted[anchor]["episodes"]))
    return "\n".join(lines)


def craft_reference_projections() -> str:
    """Each shipped Craft reference's validation curve in brief and the agent steps (of its
    own run) at which its late log-linear trend reaches the best scripted policy's return
    (`references.projection`)."""
    lines = [
        "| reference | validation return: first / best / last evaluation | trend per tenfold "
        "agent steps (last half, ± s.e.) | target: test return of | projected agent steps |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, results_file in (pair for pairs in CRAFT_REFERENCES.values() for pair in pairs):
        results = load(results_file)
        if "projection" not in results:
            lines.append(
                f"| `{name}` | not in `{results_file}`, published before the curves were kept "
                "| | | |"
            )
            continue
        curve = results["runs"][results["chosen"]["algorithm"]]["validation_curve"]
        returns = [float(np.mean(row["validation_return"])) for row in curve]
        found = results["projection"]
        slope = found["return_per_tenfold_steps"]
        steps = found["agent_steps"]
        lines.append(
            f"| `{name}` | {returns[0]:.2f} / {max(returns):.2f} / {returns[-1]:.2f} | "
            + (f"{slope:+.2f} ± {found['slope_stderr']:.2f}" if slope is not None else "no fit")
            + f" | {CRAFT_ANCHORS[found['target_policy']]}, {found['target_return']:.2f} | "
            + (f"{steps:.1e}" if steps is not None else "none: no rising trend")
            + " |"
        )
    return "\n".join(lines)
