"""What a fine-tuning run reports: the held-out test episodes of the starting model and of
the best adapters, as evaluation reports that `alemlite compare` reads, and the summary."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

from alemlite.core.prompting import PromptOptions
from alemlite.report import write_report
from alemlite.stats import compare, summarise
from llm_bridge.finetune.config import FinetuneConfig
from llm_bridge.finetune.rollout import table_options


def held_out_report(
    path: Path,
    config: FinetuneConfig,
    model_name: str,
    prompt: PromptOptions,
    adapters: str,
    episodes: dict[str, np.ndarray],
    size: int,
    provenance: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Write the test episodes played with `adapters` ("start" or "best") to `path`, with
    the run's provenance so that the report names the code that made it."""
    settings = {
        "env": config.env,
        "options": dataclasses.asdict(table_options(config.options, size)),
        "team": [f"llm:{model_name}"] * size,
        "model": model_name,
        "adapters": adapters,
        "algorithm": config.algorithm,
        "decoding": config.decoding,
        **({"max_tokens": config.max_tokens} if config.decoding == "generate" else {}),
        "eval_decoding": config.eval_decoding,
        "temperature": config.temperature,
        "prompt": dataclasses.asdict(prompt),
        "episodes": config.test_episodes,
        "seed": config.test_seed,
    }
    return write_report(path, settings, episodes, provenance)


def held_out_summary(
    start: dict[str, np.ndarray], best: dict[str, np.ndarray], headline: str
) -> dict[str, Any]:
    """The starting model against the best adapters on the test episodes: their returns,
    the comparison, the share of episodes whose `headline` metric is 0, and (generated
    replies) the mean parse rate."""
    summary = {
        "start": summarise({"episode_return": start["episode_return"]})["episode_return"],
        "best": summarise({"episode_return": best["episode_return"]})["episode_return"],
        "comparison": compare(start["episode_return"], best["episode_return"]),
        "zero_share": {
            "metric": headline,
            "start": float(np.mean(start[headline] == 0)),
            "best": float(np.mean(best[headline] == 0)),
        },
    }
    if "parse_rate" in start:
        summary["parse_rate"] = {
            "start": float(np.mean(start["parse_rate"])),
            "best": float(np.mean(best["parse_rate"])),
        }
    return summary
