"""Craft world -> one system prompt per variant and one observation text per agent.

Each agent sees only its own view: the step and time of day, its position, role, stats
and inventory, the difficulty and what it means for its role, the tiles, task tiles,
construction sites and creatures (elites marked) inside its view window (with relative
and absolute coordinates, nearest first), what it faces, its teammates (role, position,
health, status, open request, last signal and message) and the actions legal now (beside a
picture of the view, the tiles and creatures are left to the picture). The
`collaborative` variant adds cues each turn: team progress and who needs help. The
coordination layer's words live in `coordination.py` and `construction.py` beside it.

The whole batch is read from one host copy of the state: window tiles, nearest
objects and distances are numpy array work over every (episode, agent) pair at once;
only the final string assembly walks the pairs.
"""

from __future__ import annotations

import functools
from importlib import resources
from typing import Any

import numpy as np

from alemlite.core.prompting import PromptOptions, load_prompt, output_format
from alemlite.envs.craft import constants as C
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.prompting.construction import ConstructionText
from alemlite.envs.craft.prompting.coordination import CoordinationText, named, relative, view_of

TEMPLATES = resources.files("alemlite.envs.craft.prompting") / "templates"
MESSAGE_CHARS = 400  # the longest message an agent may send

CRAFT_VARIANTS = ("general", "specific", "collaborative")
# Tiles worth naming: everything but the open ground (grass, sand, path) between them.
# Unbuilt construction sites are named apart, with what finishing them takes.
_LANDMARKS = tuple(m for m in range(1, len(L.MATERIALS)) if not C.WALKABLE[m] and m != L.SITE)
_FAR = 10_000
_STATUS = {C.ALIVE: "alive", C.DOWNED: "DOWNED", C.DEAD: "dead"}
_FACING = ("left", "right", "up", "down")


class CraftRenderer:
    env_name = "craft"
    variants = CRAFT_VARIANTS
    message_chars = MESSAGE_CHARS

    def __init__(self, env: Any):
        self.config = env.config
        self.action_names = tuple(env.action_names)
        self.construction = ConstructionText(self.config, env.default_params)
        self.coordination = CoordinationText(
            self.config, self.action_names, self.construction.formats()
        )
        self._rows, self._cols = (
            np.arange(-(size // 2), size // 2 + 1)
            for size in (self.config.view_height, self.config.view_width)
        )
        self._mob_kinds = np.asarray(self.config.mob_kinds())
        self._roles = self.config.has_specialisation

    def _who(self, agent: int) -> str:
        role = f" ({L.ROLES[agent % L.NUM_ROLES]})" if self._roles else ""
        return f"agent {agent}{role}"

    def system_prompt(self, options: PromptOptions, constrained: bool = False) -> str:
        general = options.variant == "general"
        sections = [load_prompt(TEMPLATES, "general.txt" if general else "rules.txt")]
        sections.append(self.coordination.roles_section())
        if not general:
            sections += self.coordination.rules_sections()
            sections.append(self.construction.section())
        if options.variant == "collaborative":
            sections.append(load_prompt(TEMPLATES, "collaborative.txt"))
        sections.append(self.coordination.actions_section())
        sections.append(self.coordination.achievements_section())
        sections.append(output_format(options, self.message_chars, "teammates", constrained))
        return "\n\n".join(section for section in sections if section)

    def observations(
        self,
        state: Any,
        params: Any,
        episodes: np.ndarray,
        seats: np.ndarray,
        messages: np.ndarray,
        action_mask: np.ndarray,
        options: PromptOptions,
        picture: bool = False,
    ) -> list[str]:
        episodes = np.asarray(episodes, np.int64)
        seats = np.asarray(seats, np.int64)
        agents = state.agents
        position = np.asarray(agents.position)[episodes, seats]  # (K, 2)
        step = np.asarray(state.step)[episodes]
        day_length = np.broadcast_to(params.day_length, np.shape(state.step))[episodes]
        light = 1.0 - np.abs(np.cos(np.pi * (np.mod(step / day_length, 1.0) + 0.3))) ** 3
        window = view_of(
            np.asarray(state.map), episodes, position, self._rows, self._cols, C.OUT_OF_BOUNDS
        )

        header = [
            f"Step {s + 1}. {'Day' if d >= 0.5 else 'Night'} (daylight {d:.2f}).\n"
            f"You are {self._who(seat)} at (row {r}, col {c}), facing {facing}."
            for s, d, seat, (r, c), facing in zip(
                step.tolist(), light.tolist(), seats.tolist(), position.tolist(),
                self._facing_text(state, episodes, seats, position), strict=True,
            )
        ]  # fmt: skip
        coordination = self.coordination
        parts = [
            header,
            self._self_text(agents, episodes, seats),
            coordination.own_lines(state, params, episodes, seats),
            self.construction.own_lines(state, episodes, seats),
            # A picture of the view shows its tiles and creatures; not their task progress.
            [""] * len(seats) if picture else self._landmarks_text(window, position),
            coordination.task_lines(state, episodes, seats, position, window),
            self.construction.site_lines(state, episodes, seats, position),
            [""] * len(seats) if picture else self._creatures_text(state, episodes, position),
            self._teammates_text(state, params, episodes, seats, messages),
            self._legal_text(np.asarray(action_mask)[episodes, seats]),
        ]
        if options.variant == "collaborative":
            parts.append(self._cues_text(state, episodes, seats))
        return ["\n".join(line for line in lines if line) for lines in zip(*parts, strict=True)]

    # ---- pieces, each a list over the K pairs -----------------------------------------
    def _legal_text(self, mask: np.ndarray) -> list[str]:
        """The legal actions by name; agents share few distinct masks, each written once."""
        names = np.asarray(self.action_names)
        first, row_of = _distinct_rows(mask)
        texts = ["Legal actions now: " + ", ".join(names[row].tolist()) for row in mask[first]]
        return [texts[index] for index in row_of]

    def _facing_text(self, state, episodes, seats, position) -> list[str]:
        """Direction, the tile faced, its task or site (if any) and a teammate standing there."""
        facing = np.asarray(state.agents.facing)[episodes, seats]
        target = position + C.DIRECTIONS[facing]
        world = np.asarray(state.map)
        size = world.shape[-1]
        inside = np.all((target >= 0) & (target < size), axis=1)
        row, col = np.clip(target, 0, size - 1).T
        material = np.where(inside, world[episodes, row, col], C.OUT_OF_BOUNDS)
        texts = [
            f"{_FACING[f]}, at {named(L.MATERIALS[m])}{site}"
            for f, m, site in zip(
                facing.tolist(),
                material.tolist(),
                self.construction.facing_notes(state, episodes, target),
                strict=True,
            )
        ]
        if self.config.has_tasks:
            byte = np.where(inside, np.asarray(state.coordination.tile_task)[episodes, row, col], 0)
            kind = byte & ((1 << L.TASK_KIND_BITS) - 1)
            texts = [
                text + (f" (a {named(L.TASK_KINDS[k])} task)" if k else "")
                for text, k in zip(texts, kind.tolist(), strict=True)
            ]
        there = np.all(np.asarray(state.agents.position)[episodes] == target[:, None, :], axis=-1)
        status = np.asarray(state.agents.status)[episodes]
        for pair, mate in zip(*np.nonzero(there & (status != C.DEAD)), strict=True):
            texts[pair] += f" where agent {mate} stands ({_STATUS[status[pair, mate]]})"
        return texts

    def _self_text(self, agents, episodes, seats) -> list[str]:
        stats = np.asarray(agents.stats)[episodes, seats]
        inventory = np.asarray(agents.inventory)[episodes, seats]
        status = np.asarray(agents.status)[episodes, seats]
        sleeping = np.asarray(agents.sleeping)[episodes, seats]
        timer = np.asarray(agents.downed_timer)[episodes, seats]
        return [
            f"Stats: {_stats_text(tuple(stat_row))}.{_condition(state, asleep, left)}\n"
            f"Inventory: {_inventory_text(tuple(items))}."
            for stat_row, items, state, asleep, left in zip(
                stats.tolist(), inventory.tolist(), status.tolist(), sleeping.tolist(),
                timer.tolist(), strict=True,
            )
        ]  # fmt: skip

    def _landmarks_text(self, window: np.ndarray, position: np.ndarray) -> list[str]:
        distance = np.abs(self._rows)[:, None] + np.abs(self._cols)[None, :]  # (H, W)
        width = window.shape[2]
        columns = []
        for material in _LANDMARKS:
            present = window == material
            count = present.sum(axis=(1, 2))
            if not count.any():
                continue
            nearest = np.where(present, distance, _FAR).reshape(len(window), -1).argmin(axis=1)
            d_row, d_col = self._rows[nearest // width], self._cols[nearest % width]
            name = named(L.MATERIALS[material])
            columns.append(
                [
                    f"{name} x{n} (nearest {relative(dr, dc)}, at (row {r + dr}, col {c + dc}))"
                    if n
                    else ""
                    for n, dr, dc, (r, c) in zip(
                        count.tolist(),
                        d_row.tolist(),
                        d_col.tolist(),
                        position.tolist(),
                        strict=True,
                    )
                ]
            )
        if not columns:
            return ["In view: open ground only."] * len(window)
        return [
            "In view: " + ("; ".join(item for item in items if item) or "open ground only") + "."
            for items in zip(*columns, strict=True)
        ]

    def _creatures_text(self, state, episodes, position) -> list[str]:
        """Creatures in view, nearest first; elites named with how to beat them."""
        mob_position = np.concatenate(
            [np.asarray(state.mobs.position), np.asarray(state.arrows.position)], axis=1
        )[episodes]
        alive = np.concatenate(
            [np.asarray(state.mobs.alive), np.asarray(state.arrows.alive)], axis=1
        )[episodes]
        num_arrows = state.arrows.alive.shape[-1]
        kinds = np.concatenate([self._mob_kinds, np.full(num_arrows, C.ARROW)])
        elite = self.coordination.creature_elites(state, episodes, num_arrows)
        names = self.coordination.creature_names
        offset = mob_position - position[:, None, :]
        visible = (
            alive
            & (np.abs(offset[..., 0]) <= self._rows[-1])
            & (np.abs(offset[..., 1]) <= self._cols[-1])
        )
        seen: list[list[str]] = [[] for _ in range(len(position))]
        order = np.argsort(np.abs(offset).sum(-1), axis=1, kind="stable")
        for pair, slot in zip(*np.nonzero(np.take_along_axis(visible, order, axis=1)), strict=True):
            mob = order[pair, slot]
            d_row, d_col = offset[pair, mob].tolist()
            row, col = mob_position[pair, mob].tolist()
            seen[pair].append(
                f"{names[kinds[mob], elite[pair, mob]]} {relative(d_row, d_col)} "
                f"(row {row}, col {col})"
            )
        return ["Creatures: " + "; ".join(items) + "." if items else "" for items in seen]

    def _teammates_text(self, state, params, episodes, seats, messages) -> list[str]:
        """Teammates in order you+1, you+2, ... (the order of give_to_1, give_to_2, ...)."""
        num_agents = self.config.num_agents
        if num_agents == 1:
            return [""] * len(seats)
        agents = state.agents
        position = np.asarray(agents.position)[episodes]  # (K, P, 2)
        health = np.asarray(agents.stats)[episodes, :, C.HEALTH]
        status = np.asarray(agents.status)[episodes]
        timer = np.asarray(agents.downed_timer)[episodes]
        pairs = np.arange(len(seats))
        me = position[pairs, seats]
        columns = []
        for offset in range(1, num_agents):
            mates = (seats + offset) % num_agents
            where = position[pairs, mates]
            gap = where - me
            notes = self.coordination.teammate_notes(
                state, params, episodes, offset, mates, np.abs(gap).sum(axis=1)
            )
            rows = zip(
                mates.tolist(),
                status[pairs, mates].tolist(),
                timer[pairs, mates].tolist(),
                health[pairs, mates].tolist(),
                where.tolist(),
                gap.tolist(),
                notes,
                messages[episodes, mates].tolist(),
                strict=True,
            )
            columns.append(
                [
                    f"- {self._who(mate)}: "
                    + (
                        f"DOWNED (face it and do within {left} steps to revive it)"
                        if mood == C.DOWNED
                        else _STATUS[mood]
                    )
                    + f", health {hp}/9, at (row {r}, col {c}), {relative(dr, dc)}{note}"
                    + (f'; says: "{said}"' if said else "")
                    for mate, mood, left, hp, (r, c), (dr, dc), note, said in rows
                ]
            )
        return ["Teammates:\n" + "\n".join(entries) for entries in zip(*columns, strict=True)]

    def _cues_text(self, state, episodes, seats) -> list[str]:
        """Team progress, what is still open, and who needs help (collaborative variant)."""
        agents = state.agents
        team = self.coordination.team_achievements
        unlocked = np.concatenate(
            [
                np.asarray(agents.achievements)[episodes].any(axis=1),  # (K, 22)
                np.asarray(state.coordination.achievements)[episodes][..., team].any(axis=1),
            ],
            axis=1,
        )
        names = np.asarray(C.ACHIEVEMENTS + tuple(L.COORDINATION_ACHIEVEMENTS[a] for a in team))
        # Teams share few progress patterns: each distinct one is written once.
        first, pattern_of = _distinct_rows(unlocked)
        progress = []
        for pattern in unlocked[first]:
            text = f"{int(pattern[: C.NUM_ACHIEVEMENTS].sum())}/{C.NUM_ACHIEVEMENTS} achievements"
            if team.size:
                text += (
                    f", {int(pattern[C.NUM_ACHIEVEMENTS :].sum())}/{team.size} team achievements"
                )
            open_ones = ", ".join(names[~pattern].tolist()) or "none"
            progress.append(f"Team progress: {text}. Still open: {open_ones}.")
        needs = self.coordination.give_cues(state, episodes, seats)
        health = np.asarray(agents.stats)[episodes, :, C.HEALTH]
        status = np.asarray(agents.status)[episodes]
        pairs = np.arange(len(seats))
        helpless: list[list[str]] = [[] for _ in seats]
        for offset in range(1, self.config.num_agents):
            mates = (seats + offset) % self.config.num_agents
            mate_status, mate_health = status[pairs, mates], health[pairs, mates]
            weak = (mate_status == C.DOWNED) | ((mate_status == C.ALIVE) & (mate_health <= 3))
            for pair in np.flatnonzero(weak).tolist():
                mate = mates[pair]
                helpless[pair].append(
                    f"agent {mate} is DOWNED: revive it"
                    if mate_status[pair] == C.DOWNED
                    else f"agent {mate} has low health ({mate_health[pair]}/9)"
                )
        return [
            progress[pattern]
            + (f"\nHelp needed: {'; '.join(down + gives)}." if down + gives else "")
            for pattern, down, gives in zip(pattern_of, helpless, needs, strict=True)
        ]


@functools.cache  # stats and inventories repeat across agents and steps
def _stats_text(stats: tuple[int, ...]) -> str:
    return ", ".join(
        f"{name} {value}/{C.STAT_MAX}" for name, value in zip(C.STATS, stats, strict=True)
    )


@functools.cache
def _inventory_text(items: tuple[int, ...]) -> str:
    held = ", ".join(f"{named(n)} {v}" for n, v in zip(C.INVENTORY, items, strict=True) if v)
    return held or "empty"


def _condition(status: int, asleep: bool, downed_left: int) -> str:
    if status == C.DOWNED:
        return f" You are DOWNED: a teammate must revive you within {downed_left} steps."
    return " You are asleep." if asleep else ""


def _distinct_rows(flags: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """For a `(K, N)` bool matrix: the index of one row per distinct row, and each row's
    distinct-row number (rows packed to bytes, so the comparison is one sort)."""
    packed = np.ascontiguousarray(np.packbits(flags, axis=1))
    keys = packed.view(np.dtype((np.void, packed.shape[1]))).reshape(-1)
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return first, inverse.reshape(-1).tolist()
