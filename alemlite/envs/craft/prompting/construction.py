"""Craft's construction sites in words: the rules, and the unbuilt sites in each view.

Built shelters, forges and beacons are tiles, named with the other landmarks; an
unbuilt site is named here with what finishing it takes (a sync's quorum, or a
handover's progress). Per-turn text is numpy work over every (episode, agent) pair of
the one host copy of the batched state; only the string assembly walks the pairs.
"""

from __future__ import annotations

from importlib import resources
from typing import Any

import numpy as np

from alemlite.core.prompting import load_prompt
from alemlite.envs.craft import constants as C
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.prompting.coordination import (
    handover_window_range,
    named,
    quorum,
    relative,
)

TEMPLATES = resources.files("alemlite.envs.craft.prompting") / "templates"


def items_text(amounts: np.ndarray) -> str:
    """'1 stone, 1 coal and 1 iron' for an amount per inventory item."""
    parts = [
        f"{amount} {named(C.INVENTORY[item])}"
        for item, amount in enumerate(np.asarray(amounts).tolist())
        if amount
    ]
    return " and ".join([", ".join(parts[:-1]), parts[-1]] if len(parts) > 1 else parts)


class ConstructionText:
    """Construction rules and per-turn site lines for one Craft config (silent when off)."""

    def __init__(self, config: Any, default_params: Any):
        self.config = config
        self.enabled = config.has_construction
        share = np.asarray(default_params.building_share)
        self.shares = "; ".join(
            f"{building}: {items_text(share[kind])}" for kind, building in enumerate(L.BUILDINGS)
        )
        self.beacon_side = 2 * int(np.asarray(default_params.beacon_radius)) + 1
        self.build_actions = [f"build_{building}" for building in L.BUILDINGS]
        self._half_height, self._half_width = config.view_height // 2, config.view_width // 2

    def formats(self) -> dict[str, Any]:
        """Values the construction texts of the system prompt are filled with."""
        return {
            "shares": self.shares,
            "shelter_factor": L.SHELTER_RECOVERY_FACTOR,
            "beacon_side": self.beacon_side,
            "smiths": L.DIAMOND_SWORD_SMITHS,
            "sword_share": items_text(L.DIAMOND_SWORD_SHARE),
            "sword_damage": L.DIAMOND_SWORD_DAMAGE,
        }

    def section(self) -> str:
        if not self.enabled:
            return ""
        return load_prompt(TEMPLATES, "construction.txt").format(**self.formats())

    def own_lines(self, state: Any, episodes: np.ndarray, seats: np.ndarray) -> list[str]:
        if not self.enabled:
            return [""] * len(seats)
        held = np.asarray(state.coordination.diamond_sword)[episodes, seats]
        return [
            f"You hold a diamond sword (melee damage {L.DIAMOND_SWORD_DAMAGE})." if sword else ""
            for sword in held.tolist()
        ]

    def site_lines(
        self, state: Any, episodes: np.ndarray, seats: np.ndarray, position: np.ndarray
    ) -> list[str]:
        """Unbuilt sites in each view, nearest first, with what finishing each takes."""
        count = len(seats)
        if not self.enabled:
            return [""] * count
        coordination = state.coordination
        sites = coordination.sites
        site_position = np.asarray(sites.position).astype(np.int64)[episodes]  # (K, Q, 2)
        task = np.asarray(sites.task)[episodes]
        offset = site_position - position[:, None, :]
        visible = (
            (task > 0)
            & (np.asarray(sites.building)[episodes] < 0)
            & (np.abs(offset[..., 0]) <= self._half_height)
            & (np.abs(offset[..., 1]) <= self._half_width)
        )
        pair, slot = np.nonzero(visible)
        if not pair.size:
            return [""] * count
        episode = episodes[pair]
        byte = task[pair, slot]
        kind = byte & ((1 << L.TASK_KIND_BITS) - 1)
        alpha = np.asarray(coordination.alpha)[episode]
        needed = quorum(byte, alpha, self.config.num_agents)
        low, high = handover_window_range(alpha)
        starter = np.asarray(sites.starter)[episode, slot]
        pending = np.asarray(sites.pending)[episode, slot]
        steps_left = np.asarray(sites.timer)[episode, slot]
        d_row, d_col = offset[pair, slot, 0], offset[pair, slot, 1]
        order = np.lexsort((np.abs(d_row) + np.abs(d_col), pair))
        items: list[list[str]] = [[] for _ in range(count)]
        for n in order.tolist():
            row, col = site_position[pair[n], slot[n]].tolist()
            where = f"{relative(int(d_row[n]), int(d_col[n]))} (row {row}, col {col})"
            if kind[n] == L.TASK_HARD_SYNC:
                text = f"sync site {where}: {needed[n]} agents build the same building on one step"
            elif starter[n] < 0:
                text = (
                    f"handover site {where}: a build starts it, then another agent must build "
                    f"the same within {low[n]}-{high[n]} steps"
                )
            elif starter[n] == seats[pair[n]]:
                text = (
                    f"handover site {where}: you started a {L.BUILDINGS[pending[n]]}, another "
                    f"agent must {self.build_actions[pending[n]]} within {steps_left[n]} steps"
                )
            else:
                text = (
                    f"handover site {where}: agent {starter[n]} started a "
                    f"{L.BUILDINGS[pending[n]]}, {self.build_actions[pending[n]]} within "
                    f"{steps_left[n]} steps to finish it"
                )
            items[pair[n]].append(text)
        return ["Sites in view: " + "; ".join(texts) + "." if texts else "" for texts in items]

    def facing_notes(self, state: Any, episodes: np.ndarray, target: np.ndarray) -> list[str]:
        """' (an unbuilt sync site)' where the faced tile is an unbuilt site."""
        if not self.enabled:
            return [""] * len(episodes)
        sites = state.coordination.sites
        site_position = np.asarray(sites.position).astype(np.int64)[episodes]
        task = np.asarray(sites.task)[episodes]
        hit = (
            np.all(site_position == target[:, None, :], axis=-1)
            & (task > 0)
            & (np.asarray(sites.building)[episodes] < 0)
        )
        kind = np.where(hit.any(axis=1), task[np.arange(len(episodes)), hit.argmax(axis=1)], 0)
        kind = kind & ((1 << L.TASK_KIND_BITS) - 1)
        names = {
            L.TASK_HARD_SYNC: " (an unbuilt sync site)",
            L.TASK_HANDOVER: " (an unbuilt handover site)",
        }
        return [names.get(k, "") for k in kind.tolist()]
