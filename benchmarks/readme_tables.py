"""README results tables, rendered from the results files they cite.

Every results table in the READMEs (`PAGES`) sits between `<!-- results: NAME -->`
and `<!-- /results -->`, and NAME's renderer below builds it from JSON under
`benchmarks/results/`, so a table cannot drift from its data.

    python -m benchmarks.readme_tables           # rewrite the tables from the JSON
    python -m benchmarks.readme_tables --check   # exit 1 naming every table that differs
"""

from __future__ import annotations

import re
import statistics
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from baselines.common.config import algorithm_label
from benchmarks.dining_reference_policies import markdown_table as dining_policies_table
from benchmarks.harness import format_interval
from benchmarks.harness import load_results as load
from benchmarks.llm_tables import (
    finetune_smollm2,
    gap_dining_stand_in,
    gap_smollm2,
    llm_backend_agreement,
    llm_backend_speed,
    llm_harness_speed,
)
from benchmarks.marl_craft import markdown_table as marl_craft_table
from benchmarks.marl_matrix import markdown_table as marl_matrix_table
from benchmarks.reference_tables import (
    craft_reference_projections,
    craft_references,
    dining_budget,
    matrix_references,
    pretrained,
)
from benchmarks.script import run_script
from benchmarks.study.config import method_label
from benchmarks.study.statistics import aggregates

ROOT = Path(__file__).resolve().parents[1]
PAGES = (
    ROOT / "README.md",
    ROOT / "baselines" / "README.md",
    ROOT / "baselines" / "pretrained" / "README.md",
    ROOT / "docs" / "llm_bridge.md",
    ROOT / "docs" / "environments.md",
    ROOT / "docs" / "training.md",
    ROOT / "docs" / "llm_results.md",
    ROOT / "docs" / "benchmarks.md",
    ROOT / "docs" / "finetuning.md",
)
BLOCK = re.compile(r"(<!-- results: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(<!-- /results -->)", re.S)
DINING_SIZES = (5, 10, 15)
SCRIPTED_NAMES = {
    "resource_ordering": "resource ordering",
    "backoff": "backoff",
    "uniform_random": "uniform random",
    "all_wait": "all-WAIT",
    "greedy_left": "greedy-left",
}


def dining_reference_policies() -> str:
    return dining_policies_table(load("dining_reference_policies_cpu.json"))


def marl_dining() -> str:
    """IPPO and MAPPO (final and best checkpoint) beside the scripted policies, per table size."""
    runs = {size: load(f"marl_dining_{size}.json")["runs"] for size in DINING_SIZES}
    lines = ["| policy | " + " | ".join(f"N = {n}" for n in DINING_SIZES) + " |"]
    lines.append("| --- |" + " --- |" * len(DINING_SIZES))
    for algorithm in ("ippo", "mappo"):
        for checkpoint, label in (("final", "final"), ("best", "best checkpoint")):
            cells = [
                format_interval(
                    runs[n][f"{algorithm}-dining-{n}"][checkpoint]["return_across_seeds"]
                )
                for n in DINING_SIZES
            ]
            lines.append(f"| {algorithm.upper()}, {label} | " + " | ".join(cells) + " |")
    # The references learn from the team reward (`benchmarks.dining_references`, 4 seeds).
    references = {n: load(f"dining_reference_{n}_shaped.json") for n in DINING_SIZES}
    for algorithm in ("ippo", "mappo"):
        cells = [
            format_interval(references[n]["runs"][algorithm]["best"]["return_across_seeds"])
            for n in DINING_SIZES
        ]
        lines.append(
            f"| {algorithm.upper()}, team reward (4 seeds), best checkpoint | "
            + " | ".join(cells)
            + " |"
        )
    cells = [
        f"{format_interval(references[n]['test']['return'])} "
        f"({algorithm_label(references[n]['chosen']['algorithm'])})"
        for n in DINING_SIZES
    ]
    lines.append("| shipped `dining-N-shaped` | " + " | ".join(cells) + " |")
    for policy, label in SCRIPTED_NAMES.items():
        cells = [
            f"{runs[n][f'ippo-dining-{n}']['references'][policy]['return_across_seeds']['mean']:.2f}"
            for n in DINING_SIZES
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def coordination_study() -> str:
    """Final held-out return per method: `shaped` with intervals, `paper` means."""
    settings = load("coordination_study_cpu.json")["settings"]
    methods = next(iter(settings.values()))["methods"]
    lines = [
        "| method | "
        + " | ".join(f"shaped, N = {n}" for n in DINING_SIZES)
        + " | paper, N = "
        + " / ".join(map(str, DINING_SIZES))
        + " |",
        "| --- |" + " --- |" * (len(DINING_SIZES) + 1),
    ]

    def outcome(reward: str, size: int, name: str) -> dict:
        setting = settings[f"{reward}-{size}"]
        if name in setting["methods"]:
            return setting["methods"][name]["final"]["return_across_seeds"]
        return setting["references"][name]["return_across_seeds"]

    anchors = [(name, SCRIPTED_NAMES[name]) for name in ("resource_ordering", "all_wait")]
    for name, label in [(method, method_label(method)) for method in methods] + anchors:
        shaped = [format_interval(outcome("shaped", n, name)) for n in DINING_SIZES]
        paper = " / ".join(f"{outcome('paper', n, name)['mean']:.2f}" for n in DINING_SIZES)
        lines.append(f"| {label} | " + " | ".join(shaped) + f" | {paper} |")
    return "\n".join(lines)


def study_aggregates() -> str:
    """rliable aggregates of the study's final checkpoints over its six settings."""
    summary = aggregates(load("coordination_study_cpu.json"))
    improvement = summary["improvement"]
    lines = [
        "| method | IQM | optimality gap | P(method > IPPO) | P(method > MAPPO) |",
        "| --- | --- | --- | --- | --- |",
    ]
    for method, result in summary["methods"].items():
        against = [
            format_interval(improvement[method, rival]["final"])
            if (method, rival) in improvement
            else ""
            for rival in ("ippo", "mappo")
        ]
        cells = [format_interval(result["final"][name]) for name in ("iqm", "optimality_gap")]
        lines.append(f"| {method_label(method)} | " + " | ".join(cells + against) + " |")
    return "\n".join(lines)


def _rate(value: float) -> str:
    """Steps per second in the unit a reader scans fastest."""
    if value >= 1e6:
        return f"{value / 1e6:.0f} M"
    return f"{value / 1e3:.0f} k"


def dining_throughput() -> str:
    """Best philosopher steps/s per table size beside the plain-Python engine."""
    results = load("dining_throughput_cpu.json")
    lines = [
        "| table | best env-only (hashed actions) | with a `jax.random` policy "
        "| plain-Python engine | ratio |",
        "| --- | --- | --- | --- | --- |",
    ]
    for n in results["config"]["num_agents"]:
        hashed, random = results["best"][f"N{n}_hashed"], results["best"][f"N{n}_uniform_random"]
        engine = results["python_engine"][str(n)]["philosopher_steps_per_s"]
        lines.append(
            f"| N = {n} | {_rate(hashed['philosopher_steps_per_s'])} philosopher steps/s "
            f"({hashed['num_envs']:,} tables) | {_rate(random['philosopher_steps_per_s'])} "
            f"| {_rate(engine)} | {hashed['ratio_to_python']:.0f}x |"
        )
    return "\n".join(lines)


def _met(value: float, target: float, higher_is_better: bool = True) -> str:
    return "met" if (value >= target if higher_is_better else value <= target) else "not met"


def craft_headline() -> str:
    """The Craft comparison in one line: alem-env with auto-reset and its transition alone,
    Craftax-Classic without reset, and each side's team, map and JAX version."""
    results = load("craft_throughput_cpu.json")
    config, ratios = results["config"], results["ratios"]

    def side(peer: str, mode: str) -> str:
        row = next(r for r in results["peers"] if (r.get("peer"), r.get("mode")) == (peer, mode))
        shape = row.get("map_size")
        where = " x ".join(map(str, shape)) if shape else "map size not recorded"
        agents = "agent" if row["num_agents"] == 1 else "agents"
        return f"{row['num_agents']} {agents}, {where}, JAX {row['jax_version']}"

    def ratio(key: str) -> float:
        return ratios[key]["at_ratio_envs"]["ratio"]

    no_reset = ratio("craftax/no_reset")
    return (
        f"At {config['ratio_envs']} environments, alemlite ({config['num_agents']} agents, "
        f"{config['map_size']} x {config['map_size']}, JAX {results['libraries']['jax']}) "
        f"steps **{ratio('alem/step'):.0f}x** as fast as alem-env with auto-reset (its `step` "
        f"generates a new world on every step) and **{ratio('alem/step_env'):.1f}x** on the "
        f"transition alone (`step_env`; alem-env: {side('alem', 'step')}); against "
        f"Craftax-Classic without reset ({side('craftax', 'no_reset')}) it is "
        f"{no_reset:.1f}x in env steps and {no_reset * config['num_agents']:.1f}x in agent "
        "steps."
    )


def craft_throughput() -> str:
    """alemlite's Craft rates beside alem-env and Craftax-Classic, timed in one run: each
    ratio at 64 environments (the peers' own benchmark batch; the median of the rounds in
    which alemlite and the peers alternated there) and at each side's best."""
    results = load("craft_throughput_cpu.json")
    best, hashed = results["best"], results["best"]["hashed"]
    ratio_envs = results["config"]["ratio_envs"]
    ratios = results["ratios"]
    at_sweep = next(
        row["env_steps_per_s"]
        for row in results["sweep"]
        if row["num_envs"] == ratio_envs and row["policy"] == "hashed"
    )
    step_only = {
        (row["map_size"], row["with_observation"]): row["env_steps_per_s"]
        for row in results["step_only_by_map_size"]
    }
    sizes = results["config"]["map_size_check"]
    compile_s, compile_runs = results["compile_s"], results["compile_runs"]
    num_agents = results["config"]["num_agents"]
    rounds = results["config"]["ratio_rounds"]

    def per_round(at: dict, digits: int = 0) -> str:
        return "/".join(f"{r['ratio']:.{digits}f}" for r in at["rounds"])

    def peer(name: str, label: str, unit: str, target: str = "") -> tuple[str, str, str]:
        at, top = ratios[name]["at_ratio_envs"], ratios[name]["at_best"]
        return (
            f"{label}, {ratio_envs} envs",
            f"{at['peer_env_steps_per_s']:,.0f} {unit}: alemlite {at['ratio']:.0f}x at "
            f"{ratio_envs} envs (rounds {per_round(at)}x); at each side's best {top['ratio']:.0f}x "
            f"({top['peer_env_steps_per_s']:,.0f} at {top['peer_num_envs']:,} envs against "
            f"{top['alemlite_env_steps_per_s']:,.0f} at {top['alemlite_num_envs']:,})",
            target,
        )

    alem_step = ratios["alem/step"]["at_ratio_envs"]
    craftax_no_reset = ratios["craftax/no_reset"]["at_ratio_envs"]
    rows = [
        (
            "alemlite, best env-only",
            f"{hashed['env_steps_per_s']:,.0f} env steps/s = {hashed['agent_steps_per_s']:,.0f}"
            f" agent steps/s ({hashed['num_envs']:,} envs)",
            "",
        ),
        (
            "alemlite, with a `jax.random` policy",
            f"{best['uniform_random']['env_steps_per_s']:,.0f} env steps/s "
            f"({best['uniform_random']['num_envs']:,} envs)",
            "",
        ),
        (
            f"alemlite at {ratio_envs} envs",
            f"{alem_step['alemlite_env_steps_per_s']:,.0f} env steps/s timed beside the peers "
            f"(the median of {rounds} rounds; {at_sweep:,.0f} in the sweep)",
            "",
        ),
        peer(
            "alem/step",
            "alem-env `step` (auto-reset)",
            "env steps/s",
            f"100x at {ratio_envs} envs: {_met(alem_step['ratio'], 100)}",
        ),
        peer(
            "alem/step_env",
            "alem-env `step_env` (no reset)",
            "env steps/s",
            f"10x: {_met(ratios['alem/step_env']['at_ratio_envs']['ratio'], 10)}",
        ),
        peer("craftax/auto_reset", "Craftax-Classic, auto-reset (single-agent)", "steps/s"),
        (
            f"Craftax-Classic, no reset (single-agent), {ratio_envs} envs",
            f"{craftax_no_reset['peer_env_steps_per_s']:,.0f} steps/s: alemlite "
            f"{craftax_no_reset['ratio']:.1f}x in env steps (rounds "
            f"{per_round(craftax_no_reset, 1)}x), "
            f"{craftax_no_reset['ratio'] * num_agents:.1f}x in agent steps at {ratio_envs} envs;"
            f" {ratios['craftax/no_reset']['at_best']['ratio']:.1f}x in env steps at each "
            "side's best",
            "",
        ),
        (
            f"`step` alone on {' / '.join(map(str, sizes))} maps "
            f"({results['config']['map_size_check_envs']} envs)",
            " / ".join(f"{step_only[size, False] / 1e3:.0f}k" for size in sizes)
            + " env steps/s; "
            + " / ".join(f"{step_only[size, True] / 1e3:.0f}k" for size in sizes)
            + " building and reading the whole observation",
            "",
        ),
        (
            "state per environment",
            f"{results['state_bytes_per_env']:,} bytes",
            f"<= 16 KiB: {_met(results['state_bytes_per_env'], 16 * 1024, False)}",
        ),
        (
            "compile time",
            f"{len(compile_runs['runs_s'])} fresh compiles at {compile_runs['num_envs']} envs: "
            + " / ".join(f"{value:.1f}" for value in compile_runs["runs_s"])
            + f" s; {compile_s['median']:.1f} s median over the sweep "
            f"({compile_s['min']:.1f} to {compile_s['max']:.1f} s)",
            f"<= 20 s in every run: {_met(compile_runs['max_s'], 20, False)}",
        ),
    ]
    lines = ["| what | figure | target |", "| --- | --- | --- |"]
    lines += [f"| {what} | {figure} | {target} |" for what, figure, target in rows]
    return "\n".join(lines)


TEAM_NAMES = {"random": "uniform random", "team": "scripted team"}


def _mean(summary: dict, digits: int = 2) -> str:
    return f"{summary['mean']:.{digits}f}"


def craft_reference_teams() -> str:
    """Random and scripted teams at each difficulty: the span from none to deliberate
    coordination."""
    results = load("craft_reference_teams_cpu.json")
    order = results["config"]["difficulties"]
    rows = sorted(results["rows"], key=lambda row: order.index(row["difficulty"]))
    lines = [
        "| difficulty | team | return | team achievements % | coordination achievements % "
        "| syncs / handovers | gives | revives | shelters / forges / beacons | diamond swords |",
        "| --- |" + " --- |" * 9,
    ]
    for row in rows:
        m = row["summary"]
        cells = [
            format_interval(m["episode_return"]),
            format_interval(m["team_achievement_percent"], 1),
            format_interval(m["coordination_achievement_percent"], 1),
            f"{_mean(m['coordination/syncs'])} / {_mean(m['coordination/handovers'])}",
            _mean(m["coordination/gives"], 1),
            _mean(m["coordination/revives"]),
            " / ".join(
                _mean(m[f"construction/{kind}"]) for kind in ("shelters", "forges", "beacons")
            ),
            _mean(m["construction/diamond_swords"]),
        ]
        lines.append(
            f"| {row['difficulty']} | {TEAM_NAMES[row['team']]} | " + " | ".join(cells) + " |"
        )
    return "\n".join(lines)


def marl_craft() -> str:
    return marl_craft_table(load("marl_craft_cpu.json"))


def marl_matrix() -> str:
    """IPPO and GRPO on the climbing game, seed by seed outcomes beside the scripted teams."""
    return marl_matrix_table(load("marl_matrix_cpu.json"))


def jaxmarl_training() -> str:
    """alemlite's compiled IPPO update beside JaxMARL's own IPPO script, timed in one run."""
    rows = [
        "| envs | alemlite IPPO agent steps/s | JaxMARL IPPO agent steps/s | ratio |",
        "| ---: | ---: | ---: | ---: |",
    ]
    for row in load("jaxmarl_training_cpu.json")["rows"]:
        alemlite_rate = row["alemlite"]["agent_steps_per_s"]
        jaxmarl_rate = row["jaxmarl"]["agent_steps_per_s"]
        rows.append(
            f"| {row['num_envs']} | {alemlite_rate:,.0f} | {jaxmarl_rate:,.0f} | "
            f"{row['ratio']:.2f} |"
        )
    return "\n".join(rows)


def _steps(timing: dict) -> str:
    return f"{timing['agent_steps_per_s']:,.0f}"


def training_speed_obs_encodings() -> str:
    """Craft's dense and symbolic observations timed in alternation, agent steps/s: the
    environment alone (observation unused, summed on device, read on the host each step) and
    whole updates, with the projected time of one billion agent steps and the machine's load;
    dining's projection from its own run."""
    results = load("training_speed_craft_obs_encodings_cpu.json")
    algorithms = [name for name in ("ippo", "mappo") if name in results["points"][0]["dense"]]
    header = [
        "envs",
        "observation",
        "env only",
        "observation summed on device",
        "observation read on the host",
        *(f"{name.upper()} update" for name in algorithms),
        "10^9 IPPO agent steps",
        "load average",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    readings = ("env_only_unused", "env_only_on_device", "env_only_to_host")
    for point in results["points"]:
        load_average = statistics.median(point["load_average_1min"])
        for label in results["env"]:
            row = point[label]
            cells = [
                f"{point['num_envs']:,}",
                label,
                *(_steps(row[what]) if what in row else "" for what in readings),
                *(_steps(row[name]) for name in algorithms),
                f"{row['ippo']['hours_per_billion_agent_steps']:.0f} h",
                f"{load_average:.1f}",
            ]
            lines.append("| " + " | ".join(cells) + " |")
    dining = max(
        load("training_speed_dining_cpu.json")["points"], key=lambda p: p["ippo_agent_steps_per_s"]
    )
    cells = [
        f"{dining['num_envs']:,}",
        "dining N = 5 (its own run)",
        f"{dining['env_only_agent_steps_per_s']:,.0f}",
        "",
        "",
        *(f"{dining[f'{name}_agent_steps_per_s']:,.0f}" for name in algorithms),
        f"{1e9 / dining['ippo_agent_steps_per_s'] / 3600:.1f} h",
        "",
    ]
    lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


TABLES: dict[str, Callable[[], str]] = {
    "dining_reference_policies": dining_reference_policies,
    "marl_dining": marl_dining,
    "dining_budget": dining_budget,
    "coordination_study": coordination_study,
    "study_aggregates": study_aggregates,
    "dining_throughput": dining_throughput,
    "craft_headline": craft_headline,
    "craft_throughput": craft_throughput,
    "pretrained": pretrained,
    "craft_reference_teams": craft_reference_teams,
    "marl_craft": marl_craft,
    "craft_references": craft_references,
    "craft_reference_projections": craft_reference_projections,
    "marl_matrix": marl_matrix,
    "matrix_references": matrix_references,
    "jaxmarl_training": jaxmarl_training,
    "training_speed_obs_encodings": training_speed_obs_encodings,
    "gap_dining_stand_in": gap_dining_stand_in,
    "llm_backend_speed": llm_backend_speed,
    "llm_backend_agreement": llm_backend_agreement,
    "llm_harness_speed": llm_harness_speed,
    "gap_smollm2": gap_smollm2,
    "finetune_smollm2": finetune_smollm2,
}


def render(text: str) -> tuple[str, list[str]]:
    """`text` with every table block rendered anew, and the names of blocks that changed."""
    changed: list[str] = []

    def replace(match: re.Match) -> str:
        name = match["name"]
        if name not in TABLES:
            raise KeyError(f"README block {name!r} has no renderer; known: {sorted(TABLES)}")
        body = TABLES[name]() + "\n"
        if body != match["body"]:
            changed.append(name)
        return match.group(1) + body + match.group(4)

    return BLOCK.sub(replace, text), changed


def blocks(text: str) -> list[str]:
    return [match["name"] for match in BLOCK.finditer(text)]


@dataclass(frozen=True)
class ReadmeTablesConfig:
    """Rewrite README results tables from their JSON, or check that they match."""

    check: bool = False
    """Only compare; exit 1 naming each table that differs."""


def main(config: ReadmeTablesConfig) -> None:
    stale = []
    for page in PAGES:
        text = page.read_text()
        rendered, changed = render(text)
        stale += [f"{page.relative_to(ROOT)}: {name}" for name in changed]
        if changed and not config.check:
            page.write_text(rendered)
    if config.check and stale:
        sys.exit(
            f"README tables differ from their JSON: {', '.join(stale)}; run "
            "`python -m benchmarks.readme_tables` to rewrite them"
        )
    print(f"{'differing' if config.check else 'rewrote'}: {', '.join(stale) or 'none'}")


if __name__ == "__main__":
    run_script(ReadmeTablesConfig, main)
