"""`alemlite finetune`: reinforcement learning on a language model that plays every seat."""

from __future__ import annotations

from typing import Any

from llm_bridge.finetune.config import FinetuneConfig


def finetune(config: FinetuneConfig) -> dict[str, Any]:
    """Fine-tune a language model's LoRA adapters with GRPO, SRPO or TeamTR; report the
    starting model and the best validated adapters on the same held-out episodes."""
    from benchmarks.provenance import begin_run
    from llm_bridge.finetune.trainer import finetune as run

    # The summary records the commit, command and machine; published folders need --publish.
    provenance = begin_run([config.run_dir()], config.allow_dirty, config.publish)
    summary = run(config, provenance.describe)
    test = summary["test"]
    start, best = test["start"], test["best"]
    lines = [
        f"{config.algorithm} on {config.env} (N={summary['size']}), best update "
        f"{summary['best_update']} of {summary['updates']}:",
        f"  start {start['mean']:.3f} [{start['low']:.3f}, {start['high']:.3f}]  "
        f"best {best['mean']:.3f} [{best['low']:.3f}, {best['high']:.3f}]  "
        f"Welch p {test['comparison']['welch_p']:.3g}, Hedges' g "
        f"{test['comparison']['hedges_g']:.2f}",
    ]
    if "parse_rate" in test:  # --decoding generate
        parsed = test["parse_rate"]
        lines.append(f"  replies parsed: start {parsed['start']:.1%}, best {parsed['best']:.1%}")
    print("\n".join([*lines, f"wrote {config.run_dir()}"]))
    return summary
