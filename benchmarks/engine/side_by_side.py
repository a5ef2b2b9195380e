"""Peers timed beside alemlite, alternating with it, and the ratios read from those rows.

At each batch of `peer_envs` (and at `ratio_envs`) alemlite is timed, then every peer still
sweeping; at `ratio_envs` that alternation runs `ratio_rounds` times and the headline ratio
is the median of the rounds' ratios, each alemlite timing paired with the peer timings just
after it: on a shared host the speed of the machine drifts between minutes, and a single
pair can land on either side. A peer that plays one environment at a time is timed once,
beside alemlite at one environment.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from tqdm import tqdm

from alemlite.core.spec import EnvOptions
from benchmarks.peers.table import Peer, PeerRun


class SweepSettings(Protocol):
    """What the side-by-side timing reads of the engine's options (`ThroughputOptions`)."""

    peer_envs: tuple[int, ...]
    ratio_envs: int
    ratio_rounds: int
    peer_stop_gain: float
    steps_per_call: int
    peer_steps: int
    repeats: int


# alemlite's hashed-action row at a batch size
TimeOurs = Callable[[int], dict[str, Any]]


def side_by_side(
    time_ours: TimeOurs,
    options: EnvOptions,
    config: SweepSettings,
    peers: Sequence[tuple[Peer, Path | None]],
) -> list[dict[str, Any]]:
    """Rows of alemlite (`"peer": "alemlite"`) and of every peer, each with its `round`.

    A batched peer stops past `ratio_envs` once a batch brings none of its modes a gain of
    `peer_stop_gain` over its best so far (a larger batch no longer helps it); a peer that
    fails (out of memory) stops there.
    """
    rows = []
    for peer, python in peers:
        if not peer.batched:
            rows += _round(time_ours, options, config, 1, [(peer, python)], 0, 1)
    sweeping = [(peer, python) for peer, python in peers if peer.batched]
    if not sweeping:
        return rows
    best: dict[tuple[str, str], float] = {}
    for num_envs in tqdm(sorted(set(config.peer_envs) | {config.ratio_envs}), desc="side by side"):
        if not sweeping:
            break
        gained = dict.fromkeys((peer.name for peer, _ in sweeping), False)
        rounds = config.ratio_rounds if num_envs == config.ratio_envs else 1
        timed = []
        for round_index in range(rounds):
            timed += _round(time_ours, options, config, num_envs, sweeping, round_index, rounds)
        for row in timed:
            if row["peer"] != "alemlite" and "env_steps_per_s" in row:
                previous = best.get((row["peer"], row["mode"]), 0.0)
                gained[row["peer"]] |= row["env_steps_per_s"] >= config.peer_stop_gain * previous
                best[row["peer"], row["mode"]] = max(previous, row["env_steps_per_s"])
        rows += timed
        failed = {row["peer"] for row in timed if "error" in row}
        stopped = [
            (peer, python)
            for peer, python in sweeping
            if peer.name in failed or (num_envs > config.ratio_envs and not gained[peer.name])
        ]
        for peer, python in stopped:
            print(f"{peer.name}: sweep stops at {num_envs} envs")
            sweeping.remove((peer, python))
    return rows


def _round(
    time_ours: TimeOurs,
    options: EnvOptions,
    config: SweepSettings,
    num_envs: int,
    peers: Sequence[tuple[Peer, Path | None]],
    round_index: int,
    rounds: int,
) -> list[dict[str, Any]]:
    """alemlite, then each peer just after it, at one batch size."""
    ours = {"peer": "alemlite", "mode": "beside the peers", "round": round_index}
    ours |= time_ours(num_envs)
    rows = [ours]
    for peer, python in peers:
        steps = config.steps_per_call if peer.batched else config.peer_steps
        for row in peer.time(options, PeerRun(num_envs, steps, config.repeats, python)):
            row["round"] = round_index
            rows.append(row)
            if "env_steps_per_s" not in row:
                continue
            row["alemlite_env_steps_per_s"] = ours["env_steps_per_s"]
            row["ratio"] = ours["env_steps_per_s"] / row["env_steps_per_s"]
            print(
                f"{num_envs:>6} envs  {peer.name} {row['mode']:<12} "
                f"{row['env_steps_per_s']:>12.0f} env steps/s  "
                f"alemlite {ours['env_steps_per_s']:>12.0f}  ratio {row['ratio']:.3g}x"
                + (f"  (round {round_index + 1} of {rounds})" if rounds > 1 else "")
            )
    return rows


def ratios(ours: list[dict], peers: list[dict], ratio_envs: int) -> dict[str, dict]:
    """Per peer mode: the ratio at `ratio_envs` (the median over the rounds of alemlite
    timed just before the peer, with the rounds listed) and at each side's best batch
    (alemlite's best hashed rate in the whole run against the peer's best)."""
    found = {}
    for key in sorted({(r["peer"], r["mode"]) for r in peers if "ratio" in r}):
        top = max(ours, key=lambda row: row["env_steps_per_s"])
        rows = [r for r in peers if (r.get("peer"), r.get("mode")) == key and "ratio" in r]
        rounds = [r for r in rows if r["num_envs"] == ratio_envs]
        peer_top = max(rows, key=lambda row: row["env_steps_per_s"])
        found[f"{key[0]}/{key[1]}"] = {
            "at_ratio_envs": median_round(rounds, ratio_envs) if rounds else None,
            "at_best": {
                "alemlite_num_envs": top["num_envs"],
                "alemlite_env_steps_per_s": top["env_steps_per_s"],
                "peer_num_envs": peer_top["num_envs"],
                "peer_env_steps_per_s": peer_top["env_steps_per_s"],
                "ratio": top["env_steps_per_s"] / peer_top["env_steps_per_s"],
            },
            "peer_batches": sorted({r["num_envs"] for r in rows}),
        }
    return found


def median_round(rounds: list[dict], ratio_envs: int) -> dict:
    """The medians over the rounds at `ratio_envs` of alemlite's rate, the peer's and
    their paired ratio (not the ratio of the two medians), and every round's figures."""
    figures = [
        {
            "alemlite_env_steps_per_s": r["alemlite_env_steps_per_s"],
            "peer_env_steps_per_s": r["env_steps_per_s"],
            "ratio": r["ratio"],
        }
        for r in rounds
    ]
    return {
        "num_envs": ratio_envs,
        **{name: float(np.median([f[name] for f in figures])) for name in figures[0]},
        "rounds": figures,
    }
