"""The LLM results tables of the READMEs and docs (`benchmarks.readme_tables` places them):
backend and harness speed, the two inference stacks side by side, and the gap reports of
the stand-in and of the real model."""

from __future__ import annotations

import json
import statistics

from benchmarks.harness import RESULTS_DIR, format_interval
from benchmarks.harness import load_results as load
from benchmarks.study.config import method_label
from llm_bridge.gap.report import gap_table


def gap_dining_stand_in() -> str:
    """The headline gaps of the dining gap report against the scripted stand-in model."""
    report = json.loads((RESULTS_DIR / "gap_dining_stand_in" / "gap.json").read_text())
    return gap_table(report)


def llm_backend_speed() -> str:
    """Turns per second of the transformers backend on SmolLM2-135M, by mode and weights."""
    results = load("llm_backend_speed_cpu.json")
    rows = [
        "| environment | answer | weights | turns/s | tokens computed / in prompt per turn "
        "| parse rate |",
        "| --- | --- | --- | ---: | ---: | ---: |",
    ]
    for key, rate in results["turns_per_s"].items():
        env, mode, dtype = key.split("/")
        run = next(
            r for r in results["runs"] if (r["env"], r["mode"], r["dtype"]) == (env, mode, dtype)
        )
        rows.append(
            f"| {env} | {mode} | {dtype} | {rate:.2f} | {run['computed_tokens_per_turn']:.0f} / "
            f"{run['prompt_tokens_per_turn']:.0f} | {run['parse_rate']:.2f} |"
        )
    return "\n".join(rows)


def llm_harness_speed() -> str:
    """Turns per second of eval-llm's harness against an instant loopback server."""
    results = load("llm_harness_speed_cpu.json")
    goals = {"dining": 2000, "craft": 1000}
    rows = [
        "| environment | turns/s (median) | rounds | goal | compile, apart | compiles while timed "
        "| client / server CPU per turn |",
        "| --- | ---: | --- | ---: | ---: | ---: | --- |",
    ]
    for env, result in results["results"].items():
        runs = result["runs"]
        rates = ", ".join(f"{run['turns_per_s']:,.0f}" for run in runs)
        client = statistics.median(run["client_cpu_ms_per_turn"] for run in runs)
        server = statistics.median(run["server_cpu_ms_per_turn"] for run in runs)
        rows.append(
            f"| {env} | {result['turns_per_s']:,.0f} | {rates} | {goals[env]:,} "
            f"| {result['compile_s']:.1f} s | {result['timed_compiles']} "
            f"| {client:.2f} / {server:.2f} ms |"
        )
    return "\n".join(rows)


def llm_backend_agreement() -> str:
    """llama.cpp's server and the transformers backend on one GGUF file and the same seeds."""
    results = load("llm_backend_agreement_cpu.json")
    rows = [
        "| answer | stack | mode reached | turns | parse rate | actions | return "
        "| same action / same reply on the same prompt |",
        "| --- | --- | --- | ---: | ---: | --- | ---: | --- |",
    ]
    for name, stack in results["stacks"].items():
        stack_name, answer = name.split("/")
        agreement = results["agreement"][answer]
        shares = ", ".join(f"{a} {share:.0%}" for a, share in stack["action_share"].items())
        rows.append(
            f"| {answer} | {stack_name} | {stack['mode']} | {stack['turns']} "
            f"| {stack['parse_rate']:.2f} | {shares} | {stack['mean_return']:.2f} "
            f"| {agreement['same_action_share']:.0%} / {agreement['same_reply_share']:.0%} "
            f"of {agreement['same_prompt_turns']} |"
        )
    return "\n".join(rows)


# The real-model gap reports: folder under benchmarks/results/ -> how the model answered.
GAP_SMOLLM2 = {
    "gap_dining_smollm2_shaped_loglik": "loglik",
    "gap_dining_smollm2_shaped_constrained": "constrained",
    "gap_dining_smollm2_shaped_free": "free text",
    "gap_dining_smollm2_paper_loglik": "loglik",
    "gap_craft_smollm2_loglik": "loglik",
    "gap_craft_smollm2_constrained": "constrained",
    "gap_craft_smollm2_free": "free text",
}


def _best_of(stratum: dict, kind: str) -> str:
    """`RETURN (NAME)` of the stratum's best team of `kind`, or `-` where none played."""
    teams = {k: t for k, t in stratum["teams"].items() if t["kind"] == kind}
    if not teams:
        return "-"
    label = max(teams, key=lambda k: teams[k]["scores"]["return"]["mean"])
    return f"{teams[label]['scores']['return']['mean']:.2f} ({label.removeprefix(kind + ':')})"


def _reference_of(stratum: dict) -> str:
    """`RETURN (NAME)` of the stratum's MARL reference (the checkpoint trained closest to
    it), or `-` where no checkpoint plays it."""
    label = stratum["references"].get("marl")
    if label is None:
        return "-"
    return (
        f"{stratum['teams'][label]['scores']['return']['mean']:.2f} ({label.removeprefix('marl:')})"
    )


def gap_smollm2() -> str:
    """SmolLM2-135M in every seat, per report and stratum, beside the MARL reference and the
    best scripted team."""
    rows = [
        "| setting | answer | stratum | episodes | return (model) | return (MARL reference) "
        "| return (best scripted) | base task (model) | no base task | parse rate | turns |",
        "| --- | --- | --- | ---: | --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for folder, answer in GAP_SMOLLM2.items():
        report = json.loads((RESULTS_DIR / folder / "gap.json").read_text())
        options = report["config"]["options"]
        setting = (
            f"dining, {options['reward']}"
            if report["config"]["env"] == "dining"
            else f"craft, map {options['map_size']}, {options['max_steps']} steps"
        )
        for stratum in report["strata"]:
            model = stratum["teams"]["llm"]
            usage = model["usage"]
            scores = model["scores"]
            rows.append(
                f"| {setting} | {answer} | {stratum['key']} | {scores['return']['n']} "
                f"| {format_interval(scores['return'])} "
                f"| {_reference_of(stratum)} | {_best_of(stratum, 'scripted')} "
                f"| {scores['base']['mean']:.3f} | {scores['base']['zero_share']:.0%} "
                f"| {usage['parse_rate']:.2f} | {usage['requests']:,} |"
            )
    return "\n".join(rows)


def finetune_smollm2() -> str:
    """SmolLM2-135M before and after `alemlite finetune`, one row per published run."""
    rows = [
        "| objective | setting | updates (best) | training time | return, start | "
        "return, best | Welch p | Hedges' g, best - start | zero meals, start / best |",
        "| --- | --- | --- | ---: | --- | --- | ---: | ---: | --- |",
    ]
    runs = [
        json.loads(path.read_text())
        for path in (RESULTS_DIR / "finetune_dining_smollm2").glob("*/summary.json")
    ]
    # Grouped by reward, the default (`shaped`) first; objectives in the command's order.
    order = ("grpo", "srpo", "teamtr")
    runs.sort(
        key=lambda run: (
            run["config"]["options"]["reward"] != "shaped",
            run["config"]["options"]["reward"],
            order.index(run["algorithm"]),
        )
    )
    for run in runs:
        options, test = run["config"]["options"], run["test"]
        comparison, zero = test["comparison"], test["zero_share"]
        rows.append(
            f"| {method_label(run['algorithm'])} | {run['env']} N = {run['size']}, "
            f"{options['reward']}, {options['max_steps']} steps | {run['updates']} "
            f"({run['best_update']}) | {run['train_seconds'] / 60:.0f} min "
            f"| {format_interval(test['start'])} | {format_interval(test['best'])} "
            # The summary compares (start, best): its g is start - best.
            f"| {comparison['welch_p']:.2g} | {-comparison['hedges_g']:.2f} "
            f"| {zero['start']:.0%} / {zero['best']:.0%} |"
        )
    return "\n".join(rows)
