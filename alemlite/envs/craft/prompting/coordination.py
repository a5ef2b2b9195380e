"""Craft's coordination layer in words: roles, task tiles, elites, trading and signals.

The rules and the action descriptions are written once from the config and the
action names; the per-turn lines are numpy work over every (episode, agent) pair of
one host copy of the batched state, like the rest of the Craft serialiser, and only
the final string assembly walks the pairs. A part says nothing while it is off.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import numpy as np

from alemlite.core.prompting import load_prompt
from alemlite.envs.craft import constants as C
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination import tasks

TEMPLATES = resources.files("alemlite.envs.craft.prompting") / "templates"

# Coordination actions by name prefix; the base actions are the rest.
ACTION_PREFIXES = ("request_", "give_to_", "message_", "build_", "make_diamond_sword")
MAX_TASKS_SHOWN = 4  # nearest task tiles named per turn; the rest are counted
_TASK_NAMES = {L.TASK_SOFT_SYNC: "soft sync", L.TASK_HARD_SYNC: "hard sync"}
_DO_GIVES = {C.WATER: "drink"}  # what a DO on a material gives when it is no item
# The part of the layer that makes each team achievement reachable (default: any part).
_ACHIEVEMENT_PART = {
    "complete_sync": "has_tasks",
    "complete_handover": "has_tasks",
    "defeat_elite": "has_elites",
    "eat_large_cow": "has_elites",
    "give_item": "has_trading",
    **{name: "has_construction" for name in L.BUILD_ACTIONS},
}
_ELITE_RULE = {
    L.ELITE_SOFT: "soft: half damage from a lone attacker",
    L.ELITE_HARD: "hard: only hurt when 2+ agents hit it on one step",
}


def named(name: str) -> str:
    return name.replace("_", " ")


@functools.cache  # offsets repeat across agents and steps
def relative(d_row: int, d_col: int) -> str:
    parts = []
    if d_row:
        parts.append(f"{abs(d_row)} {'up' if d_row < 0 else 'down'}")
    if d_col:
        parts.append(f"{abs(d_col)} {'left' if d_col < 0 else 'right'}")
    return ", ".join(parts) or "here"


def view_of(
    grid: np.ndarray, episodes: np.ndarray, position: np.ndarray, rows: np.ndarray,
    cols: np.ndarray, outside: int,
) -> np.ndarray:  # fmt: skip
    """`(K, H, W)` window of a per-episode map `grid` `(B, S, S)` around each pair's
    `position` (offsets `rows`, `cols`), `outside` beyond the map."""
    size = grid.shape[-1]
    row = position[:, 0, None, None] + rows[None, :, None]
    col = position[:, 1, None, None] + cols[None, None, :]
    inside = (row >= 0) & (row < size) & (col >= 0) & (col < size)
    tiles = grid[episodes[:, None, None], np.clip(row, 0, size - 1), np.clip(col, 0, size - 1)]
    return np.where(inside, tiles, outside)


def batch_param(params: Any, name: str, batch_shape: tuple[int, ...]) -> np.ndarray:
    """A dynamic parameter per episode, whether or not it carries a batch axis."""
    return np.broadcast_to(np.asarray(getattr(params, name)), batch_shape)


def quorum(byte: np.ndarray, alpha: np.ndarray, num_agents: int) -> np.ndarray:
    """Agents a sync needs: the environment's own rule (`tasks.quorum`), on host arrays."""
    byte, alpha = np.broadcast_arrays(np.asarray(byte), np.asarray(alpha, np.float32))
    needed = np.zeros(byte.shape, np.int32)
    for level in np.unique(alpha).tolist():
        chosen = alpha == level
        needed[chosen] = _quorum_table(level, num_agents)[byte[chosen]]
    return needed


def handover_window_range(alpha: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Shortest and longest window a handover started at `alpha` may get: the environment's
    own rule (`tasks.handover_window_range`), on host arrays."""
    alpha = np.asarray(alpha, np.float32)
    levels, where = np.unique(alpha, return_inverse=True)
    windows = np.array([_window_range(level) for level in levels.tolist()], np.int32)
    windows = windows.reshape(len(levels), 2)
    return windows[where, 0].reshape(alpha.shape), windows[where, 1].reshape(alpha.shape)


# The rules are evaluated once per difficulty on fixed shapes (every task byte) and looked up:
# called eagerly on arrays of each step's size, JAX compiled them anew for every new size.
@functools.lru_cache(maxsize=256)
def _quorum_table(alpha: float, num_agents: int) -> np.ndarray:
    every_byte = np.arange(256, dtype=np.uint8)
    return np.asarray(tasks.quorum(every_byte, np.float32(alpha), num_agents), np.int32)


@functools.lru_cache(maxsize=256)
def _window_range(alpha: float) -> tuple[int, int]:
    low, high = tasks.handover_window_range(np.float32(alpha))
    return int(low), int(high)


def _do_gives(material: int) -> str:
    item = C.COLLECT_ITEM[material]
    return _DO_GIVES.get(material) or (C.INVENTORY[item] if item >= 0 else "")


def role_duties(role: int) -> str:
    """What only `role` always succeeds at, and its other strengths."""
    materials = [
        named(L.MATERIALS[m]) + ("" if _do_gives(m) == L.MATERIALS[m] else f" ({_do_gives(m)})")
        for m in np.flatnonzero(np.equal(L.MATERIAL_ROLE, role)).tolist()
    ]
    duties = [f"do on {', '.join(materials)}"] if materials else []
    actions = [C.ACTIONS[a] for a in np.flatnonzero(np.equal(L.ACTION_ROLE, role)).tolist()]
    duties += [", ".join(actions)] if actions else []
    if role == L.WARRIOR:
        duties.append(f"melee damage x{L.WARRIOR_DAMAGE_FACTOR}")
    if role == L.FORAGER:
        duties.append(f"full food from cows and plants (others get {L.NON_FORAGER_FOOD_SHARE:.0%})")
        duties.append(f"food and drink last {L.FORAGER_RESERVE_FACTOR} times as long")
    return "; ".join(duties)


def action_groups(action_names: tuple[str, ...]) -> tuple[list[str], dict[str, list[str]]]:
    """The base actions, and the coordination actions by prefix (in action order)."""
    groups: dict[str, list[str]] = {prefix: [] for prefix in ACTION_PREFIXES}
    base = []
    for name in action_names:
        prefix = next((p for p in ACTION_PREFIXES if name.startswith(p)), None)
        (groups[prefix] if prefix else base).append(name)
    return base, {prefix: names for prefix, names in groups.items() if names}


class CoordinationText:
    """The coordination layer's rules and per-turn lines for one Craft config."""

    def __init__(
        self, config: Any, action_names: tuple[str, ...], formats: dict[str, Any] | None = None
    ):
        """`formats`: further values for the action descriptions (construction costs)."""
        self.config = config
        self.formats = formats or {}
        self.num_agents = config.num_agents
        self.base_actions, self.action_groups = action_groups(action_names)
        # Indices of the coordination achievements the config's parts make reachable.
        self.team_achievements = np.array(
            [
                index
                for index, name in enumerate(L.COORDINATION_ACHIEVEMENTS)
                if config.has_layer and getattr(config, _ACHIEVEMENT_PART.get(name, "has_layer"))
            ],
            dtype=np.int64,
        )
        self._rows, self._cols = (
            np.arange(-(size // 2), size // 2 + 1)
            for size in (config.view_height, config.view_width)
        )
        # Creature names by (kind, elite kind); arrows are never elite.
        self.creature_names = np.array(
            [
                [C.MOB_KINDS[kind]]
                + [
                    f"{'large' if kind == C.COW else 'elite'} {C.MOB_KINDS[kind]} "
                    f"({_ELITE_RULE[elite]})"
                    for elite in (L.ELITE_SOFT, L.ELITE_HARD)
                ]
                for kind in range(C.NUM_MOB_KINDS)
            ],
            dtype=object,
        )

    # ---- system prompt ---------------------------------------------------------------
    def roles_section(self) -> str:
        if not self.config.has_specialisation:
            return ""
        lines = "\n".join(f"- {role}: {role_duties(r)}." for r, role in enumerate(L.ROLES))
        return load_prompt(TEMPLATES, "roles.txt").format(
            num_roles=L.NUM_ROLES, role_order=", ".join(L.ROLES), role_lines=lines
        )

    def rules_sections(self) -> list[str]:
        """Full rules of the parts that are on (the `specific` and `collaborative` prompts)."""
        sections = []
        if self.config.has_tasks:
            easy, hard = (handover_window_range(np.float32(a)) for a in (0.0, 1.0))
            materials = [named(L.MATERIALS[m]) for m in np.flatnonzero(L.TASK_MATERIALS)]
            sections.append(
                load_prompt(TEMPLATES, "tasks.txt").format(
                    materials=", ".join(materials[:-1]) + " and " + materials[-1],
                    easy_window=f"{easy[0]} to {easy[1]}",
                    hard_window=f"{hard[0]} to {hard[1]}",
                    handover_yield=L.HANDOVER_YIELD,
                )
            )
        if self.config.has_elites:
            sections.append(
                load_prompt(TEMPLATES, "elites.txt").format(health_factor=L.ELITE_HEALTH_FACTOR)
            )
        return sections

    def actions_section(self) -> str:
        """Every action by exact name, the coordination ones described."""
        describe = dict(
            line.split(": ", 1) for line in load_prompt(TEMPLATES, "actions.txt").splitlines()
        )
        give_range = self.config.give_range
        lines = [", ".join(self.base_actions)]
        for prefix, names in self.action_groups.items():
            text = describe[prefix].format(
                **self.formats,
                request_steps=L.REQUEST_DURATION,
                num_agents=self.num_agents,
                give_range=f" and it must stand within {give_range} tiles" if give_range else "",
            )
            lines.append(f"- {', '.join(names)}: {text}")
        return "## Actions\n" + "\n".join(lines)

    def achievements_section(self) -> str:
        text = "## Achievements\n" + ", ".join(C.ACHIEVEMENTS)
        if self.team_achievements.size:
            text += "\nTeam achievements (credited to every agent that takes part): " + ", ".join(
                L.COORDINATION_ACHIEVEMENTS[a] for a in self.team_achievements.tolist()
            )
        return text

    # ---- per-turn lines, each a list over the K (episode, agent) pairs ----------------
    def own_lines(
        self, state: Any, params: Any, episodes: np.ndarray, seats: np.ndarray
    ) -> list[str]:
        """The difficulty and what it means for the agent's role; its own open request."""
        config, coordination = self.config, state.coordination
        count = len(seats)
        texts = [""] * count
        if config.has_specialisation or config.has_tasks:
            alpha = np.asarray(coordination.alpha)[episodes]
            if config.has_specialisation:
                hard = batch_param(params, "hard_specialisation", np.shape(state.step))[episodes]
                texts = [
                    f"Difficulty alpha {a:.2f}: your role's actions always succeed, other roles' "
                    + (
                        "always fail for you (hard specialisation)."
                        if h
                        else f"succeed for you with chance {1 - a:.2f}."
                    )
                    for a, h in zip(alpha.tolist(), hard.tolist(), strict=True)
                ]
            else:
                texts = [f"Difficulty alpha {a:.2f}." for a in alpha.tolist()]
        if config.has_trading:
            item = np.asarray(coordination.request_item)[episodes, seats]
            left = np.asarray(coordination.request_timer)[episodes, seats]
            texts = [
                text + (
                    f"\nYour open request: {L.REQUEST_RESOURCES[i]} ({t} steps left)."
                    if i >= 0 else ""
                )
                for text, i, t in zip(texts, item.tolist(), left.tolist(), strict=True)
            ]  # fmt: skip
        return [text.lstrip("\n") for text in texts]

    def task_lines(
        self, state: Any, episodes: np.ndarray, seats: np.ndarray, position: np.ndarray,
        window: np.ndarray,
    ) -> list[str]:  # fmt: skip
        """Task tiles in each view, nearest first: kind, quorum or handover progress."""
        count = len(seats)
        if not self.config.has_tasks:
            return [""] * count
        coordination = state.coordination
        task_bytes = view_of(
            np.asarray(coordination.tile_task), episodes, position, self._rows, self._cols, 0
        )
        pair, i, j = np.nonzero(task_bytes)
        if not pair.size:
            return [""] * count
        byte = task_bytes[pair, i, j].astype(np.int32)
        kind = byte & ((1 << L.TASK_KIND_BITS) - 1)
        episode = episodes[pair]
        alpha = np.asarray(coordination.alpha)[episode]
        needed = quorum(byte, alpha, self.num_agents)
        low, high = handover_window_range(alpha)
        d_row, d_col = self._rows[i], self._cols[j]
        row, col = position[pair, 0] + d_row, position[pair, 1] + d_col
        # A started handover sits in the task table.
        table_position = np.asarray(coordination.task_position)[episode]  # (n, T, 2)
        table_starter = np.asarray(coordination.task_starter)[episode]  # (n, T)
        hit = (
            (table_position[..., 0] == row[:, None])
            & (table_position[..., 1] == col[:, None])
            & (table_starter >= 0)
        )
        slot = hit.argmax(axis=1)
        started = hit.any(axis=1)
        starter = table_starter[np.arange(len(slot)), slot]
        steps_left = np.asarray(coordination.task_timer)[episode, slot]
        # Nearest first within each pair; at most MAX_TASKS_SHOWN named.
        order = np.lexsort((np.abs(d_row) + np.abs(d_col), pair))
        first = np.searchsorted(pair[order], np.arange(count))
        rank = np.arange(len(order)) - first[pair[order]]
        shown = order[rank < MAX_TASKS_SHOWN]
        seat_of = seats[pair]
        items: list[list[str]] = [[] for _ in range(count)]
        material = window[pair, i, j]
        for n in shown.tolist():
            where = (
                f"on {named(L.MATERIALS[material[n]])} {relative(d_row[n], d_col[n])} "
                f"(row {row[n]}, col {col[n]})"
            )
            if kind[n] != L.TASK_HANDOVER:
                text = f"{_TASK_NAMES[kind[n]]} {where}: {needed[n]} agents do it on one step"
                if kind[n] == L.TASK_SOFT_SYNC:
                    text += f" (alone: chance {1 - alpha[n]:.2f})"
            elif not started[n]:
                text = (
                    f"handover {where}: a do starts it, then another agent must do it "
                    f"within {low[n]}-{high[n]} steps"
                )
            elif starter[n] == seat_of[n]:
                text = (
                    f"handover {where}: started by you, another agent must do it "
                    f"within {steps_left[n]} steps"
                )
            else:
                text = (
                    f"handover {where}: started by agent {starter[n]}, do it "
                    f"within {steps_left[n]} steps to finish it"
                )
            items[pair[n]].append(text)
        total = np.bincount(pair, minlength=count)
        return [
            "Tasks in view: " + "; ".join(named_items)
            + (f"; {extra} more further away" if (extra := n - len(named_items)) else "") + "."
            if n else ""
            for named_items, n in zip(items, total.tolist(), strict=True)
        ]  # fmt: skip

    def creature_elites(self, state: Any, episodes: np.ndarray, num_arrows: int) -> np.ndarray:
        """Elite kind of every creature slot (mobs, then arrows) per pair, `(K, N + A)`."""
        elite = (
            np.asarray(state.coordination.mob_elite)[episodes]
            if self.config.has_elites
            else np.zeros((len(episodes), self.config.num_mobs), np.int8)
        )
        return np.concatenate([elite, np.zeros((len(episodes), num_arrows), np.int8)], axis=1)

    def teammate_notes(
        self, state: Any, params: Any, episodes: np.ndarray, offset: int, mates: np.ndarray,
        distance: np.ndarray,
    ) -> list[str]:  # fmt: skip
        """Open request (and the give that fills it) and last signal of each pair's teammate
        at `offset` (`mates` `(K,)`, `distance` L1 `(K,)`)."""
        coordination = state.coordination
        notes = [""] * len(mates)
        if self.config.has_trading:
            give = self.action_groups["give_to_"][offset - 1]
            item = np.asarray(coordination.request_item)[episodes, mates]
            left = np.asarray(coordination.request_timer)[episodes, mates]
            give_range = batch_param(params, "give_range", np.shape(state.step))[episodes]
            notes = [
                f"; requests {L.REQUEST_RESOURCES[i]} ({t} steps left; {give}"
                + (f" reaches {r} tiles, it is {d} away" if r > 0 else "") + ")"
                if i >= 0 else ""
                for i, t, r, d in zip(
                    item.tolist(), left.tolist(), give_range.tolist(), distance.tolist(),
                    strict=True,
                )
            ]  # fmt: skip
        if self.config.message_tokens:
            tokens = self.action_groups["message_"]
            signal = np.asarray(coordination.last_message)[episodes, mates]
            notes = [
                note + (f"; last signal {tokens[s]}" if s >= 0 else "")
                for note, s in zip(notes, signal.tolist(), strict=True)
            ]
        return notes

    def give_cues(self, state: Any, episodes: np.ndarray, seats: np.ndarray) -> list[list[str]]:
        """Teammates' open requests the agent can fill now, per pair."""
        cues: list[list[str]] = [[] for _ in seats]
        if not self.config.has_trading or self.num_agents == 1:
            return cues
        agents, coordination = state.agents, state.coordination
        holdings = np.where(
            L.REQUEST_STAT >= 0,
            np.asarray(agents.stats)[episodes, seats][:, np.maximum(L.REQUEST_STAT, 0)],
            np.asarray(agents.inventory)[episodes, seats][:, np.maximum(L.REQUEST_ITEM, 0)],
        )  # (K, 8)
        pairs = np.arange(len(seats))
        for offset in range(1, self.num_agents):
            mates = (seats + offset) % self.num_agents
            wanted = np.asarray(coordination.request_item)[episodes, mates].astype(np.int64)
            have = holdings[pairs, np.maximum(wanted, 0)]
            standing = np.asarray(agents.status)[episodes, mates] == C.ALIVE
            give = self.action_groups["give_to_"][offset - 1]
            for pair in np.flatnonzero((wanted >= 0) & (have > 0) & standing).tolist():
                cues[pair].append(
                    f"agent {mates[pair]} requests {L.REQUEST_RESOURCES[wanted[pair]]} and you "
                    f"have {have[pair]}: {give}"
                )
        return cues
