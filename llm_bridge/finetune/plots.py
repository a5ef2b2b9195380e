"""The learning curve of a fine-tuning run: training return per update, validations marked."""

from __future__ import annotations

import json
from pathlib import Path


def plot_curve(curve: Path, out: Path, title: str) -> Path:
    """Draw `curve.jsonl`'s training and validation returns into `out` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = [json.loads(line) for line in Path(curve).read_text().splitlines()]
    figure, axes = plt.subplots(figsize=(6, 3.5))
    trained = [r for r in rows if "train_return" in r]  # update 0 only validates the start
    axes.plot(
        [r["update"] for r in trained], [r["train_return"] for r in trained], label="training"
    )
    validated = [r for r in rows if "validation_return" in r]
    axes.plot(
        [r["update"] for r in validated],
        [r["validation_return"] for r in validated],
        "o--",
        label="validation",
    )
    best = [r for r in validated if r.get("best")]
    if best:
        last = best[-1]  # the kept checkpoint is the last one marked best
        axes.plot(last["update"], last["validation_return"], "*", ms=14, label="kept")
    axes.set_xlabel("update")
    axes.set_ylabel("team return")
    axes.set_title(title)
    axes.legend()
    figure.tight_layout()
    figure.savefig(out, dpi=120)
    plt.close(figure)
    return Path(out)
