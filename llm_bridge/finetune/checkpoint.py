"""A fine-tuning run's checkpoint: adapters, optimiser states and the trainer's progress.

One folder, replaced whole: it is written beside the old one and swapped in with a rename,
so a run stopped at any moment leaves either the old checkpoint or the new one, never a mix.
Sampling needs no saved generator: every update's draws are seeded from the run's seed and
the update's number, so a resumed run repeats exactly what the uninterrupted one did.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import torch

STATE = "trainer.json"
TENSORS = "tensors.pt"


def save_checkpoint(
    folder: Path,
    adapters: dict[str, dict[str, torch.Tensor]],
    optimizers: dict[str, dict[str, Any]],
    progress: dict[str, Any],
) -> None:
    """Write the checkpoint into `folder`, replacing the one there."""
    folder = Path(folder)
    fresh = folder.with_name(folder.name + ".new")
    shutil.rmtree(fresh, ignore_errors=True)
    fresh.mkdir(parents=True)
    torch.save({"adapters": adapters, "optimizers": optimizers}, fresh / TENSORS)
    (fresh / STATE).write_text(json.dumps(progress, indent=2) + "\n")
    old = folder.with_name(folder.name + ".old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    fresh.rename(folder)
    shutil.rmtree(old, ignore_errors=True)


def load_checkpoint(folder: Path) -> tuple[dict, dict, dict[str, Any]]:
    """(adapters, optimizer states, progress) of the checkpoint in `folder`."""
    folder = Path(folder)
    if not folder.exists() and folder.with_name(folder.name + ".old").exists():
        folder = folder.with_name(folder.name + ".old")  # stopped between the two renames
    tensors = torch.load(folder / TENSORS, weights_only=True)
    progress = json.loads((folder / STATE).read_text())
    return tensors["adapters"], tensors["optimizers"], progress


def has_checkpoint(folder: Path) -> bool:
    folder = Path(folder)
    return any((f / STATE).exists() for f in (folder, folder.with_name(folder.name + ".old")))
