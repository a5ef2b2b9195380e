"""Craft world -> one system prompt per variant and one observation text per agent.

Each agent sees only its own view: the step and time of day, its position, role, stats
and inventory, the tiles and creatures inside its view window (with relative and
absolute coordinates, nearest first), what it faces, its teammates (role, position,
health, last message) and the actions legal now. The `collaborative` variant adds
coordination cues each turn: team progress and teammates who need help.

The whole batch is read from one host copy of the state: window tiles, nearest
objects and distances are numpy array work over every (episode, agent) pair at once;
only the final string assembly walks the pairs.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from alemlite.envs.craft import constants as C
from llm_bridge.render.base import PromptOptions, load_prompt, output_format
from llm_bridge.sanitize import CRAFT_MESSAGE_CHARS

CRAFT_VARIANTS = ("general", "specific", "collaborative")
# Tiles worth naming; grass, sand and path are the open ground between them.
_LANDMARKS = (
    C.WATER, C.TREE, C.STONE, C.COAL, C.IRON, C.DIAMOND, C.LAVA,
    C.TABLE, C.FURNACE, C.SAPLING, C.RIPE_PLANT,
)  # fmt: skip
_FAR = 10_000
_STATUS = {C.ALIVE: "alive", C.DOWNED: "DOWNED", C.DEAD: "dead"}


def _relative(d_row: int, d_col: int) -> str:
    parts = []
    if d_row:
        parts.append(f"{abs(d_row)} {'up' if d_row < 0 else 'down'}")
    if d_col:
        parts.append(f"{abs(d_col)} {'left' if d_col < 0 else 'right'}")
    return ", ".join(parts) or "here"


def _named(name: str) -> str:
    return name.replace("_", " ")


class CraftRenderer:
    env_name = "craft"
    variants = CRAFT_VARIANTS
    message_chars = CRAFT_MESSAGE_CHARS

    def __init__(self, env: Any):
        self.config = env.config
        self.action_names = tuple(env.action_names)
        self._rows, self._cols = (
            np.arange(-(size // 2), size // 2 + 1)
            for size in (self.config.view_height, self.config.view_width)
        )
        self._mob_kinds = np.asarray(self.config.mob_kinds())

    def system_prompt(self, options: PromptOptions) -> str:
        rules = "general.txt" if options.variant == "general" else "rules.txt"
        sections = [load_prompt("craft", rules)]
        if options.variant == "collaborative":
            sections.append(load_prompt("craft", "collaborative.txt"))
        sections.append("## Actions\n" + ", ".join(self.action_names))
        sections.append("## Achievements\n" + ", ".join(C.ACHIEVEMENTS))
        sections.append(output_format(options, self.message_chars, "teammates"))
        return "\n\n".join(sections)

    def observations(
        self,
        state: Any,
        params: Any,
        episodes: np.ndarray,
        seats: np.ndarray,
        messages: np.ndarray,
        action_mask: np.ndarray,
        options: PromptOptions,
    ) -> list[str]:
        episodes = np.asarray(episodes, np.int64)
        seats = np.asarray(seats, np.int64)
        agents = state.agents
        position = np.asarray(agents.position)[episodes, seats]  # (K, 2)
        step = np.asarray(state.step)[episodes]
        day_length = np.broadcast_to(params.day_length, np.shape(state.step))[episodes]
        light = 1.0 - np.abs(np.cos(np.pi * (np.mod(step / day_length, 1.0) + 0.3))) ** 3

        header = [
            f"Step {s + 1}. {'Day' if d >= 0.5 else 'Night'} (daylight {d:.2f}).\n"
            f"You are agent {seat} ({C.ROLES[seat % C.NUM_ROLES]}) at (row {r}, col {c}), "
            f"facing {facing}."
            for s, d, seat, (r, c), facing in zip(
                step.tolist(), light.tolist(), seats.tolist(), position.tolist(),
                self._facing_text(state, episodes, seats, position), strict=True,
            )
        ]  # fmt: skip
        parts = [
            header,
            self._self_text(agents, episodes, seats),
            self._landmarks_text(state, episodes, position),
            self._creatures_text(state, episodes, position),
            self._teammates_text(agents, episodes, seats, messages),
            [
                "Legal actions now: " + ", ".join(np.asarray(self.action_names)[row].tolist())
                for row in np.asarray(action_mask)[episodes, seats]
            ],
        ]
        if options.variant == "collaborative":
            parts.append(self._cues_text(agents, episodes, seats))
        return ["\n".join(line for line in lines if line) for lines in zip(*parts, strict=True)]

    # ---- pieces, each a list over the K pairs -----------------------------------------
    def _window(self, state: Any, episodes: np.ndarray, position: np.ndarray) -> np.ndarray:
        world = np.asarray(state.map)
        size = world.shape[-1]
        rows = position[:, 0, None, None] + self._rows[None, :, None]
        cols = position[:, 1, None, None] + self._cols[None, None, :]
        inside = (rows >= 0) & (rows < size) & (cols >= 0) & (cols < size)
        tiles = world[
            episodes[:, None, None], np.clip(rows, 0, size - 1), np.clip(cols, 0, size - 1)
        ]
        return np.where(inside, tiles, C.OUT_OF_BOUNDS)  # (K, H, W)

    def _facing_text(self, state, episodes, seats, position) -> list[str]:
        facing = np.asarray(state.agents.facing)[episodes, seats]
        direction = C.DIRECTIONS[facing]
        target = position + direction
        world = np.asarray(state.map)
        size = world.shape[-1]
        inside = np.all((target >= 0) & (target < size), axis=1)
        clipped = np.clip(target, 0, size - 1)
        material = np.where(inside, world[episodes, clipped[:, 0], clipped[:, 1]], C.OUT_OF_BOUNDS)
        names = ("left", "right", "up", "down")
        return [
            f"{names[f]}, at {_named(C.MATERIALS[m])}"
            for f, m in zip(facing.tolist(), material.tolist(), strict=True)
        ]

    def _self_text(self, agents, episodes, seats) -> list[str]:
        stats = np.asarray(agents.stats)[episodes, seats]
        inventory = np.asarray(agents.inventory)[episodes, seats]
        status = np.asarray(agents.status)[episodes, seats]
        sleeping = np.asarray(agents.sleeping)[episodes, seats]
        timer = np.asarray(agents.downed_timer)[episodes, seats]
        lines = []
        for stat_row, items, state, asleep, left in zip(
            stats.tolist(), inventory.tolist(), status.tolist(), sleeping.tolist(), timer.tolist(),
            strict=True,
        ):  # fmt: skip
            stats_text = ", ".join(f"{n} {v}/9" for n, v in zip(C.STATS, stat_row, strict=True))
            held = ", ".join(
                f"{_named(n)} {v}" for n, v in zip(C.INVENTORY, items, strict=True) if v
            )
            condition = " You are asleep." if asleep else ""
            if state == C.DOWNED:
                condition = f" You are DOWNED: a teammate must revive you within {left} steps."
            lines.append(f"Stats: {stats_text}.{condition}\nInventory: {held or 'empty'}.")
        return lines

    def _landmarks_text(self, state, episodes, position) -> list[str]:
        window = self._window(state, episodes, position)
        distance = np.abs(self._rows)[:, None] + np.abs(self._cols)[None, :]  # (H, W)
        width = window.shape[2]
        columns = []
        for material in _LANDMARKS:
            present = window == material
            count = present.sum(axis=(1, 2))
            nearest = np.where(present, distance, _FAR).reshape(len(window), -1).argmin(axis=1)
            d_row, d_col = self._rows[nearest // width], self._cols[nearest % width]
            name = _named(C.MATERIALS[material])
            columns.append(
                [
                    f"{name} x{n} (nearest {_relative(dr, dc)}, at (row {r + dr}, col {c + dc}))"
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
        return [
            "In view: " + ("; ".join(item for item in items if item) or "open ground only") + "."
            for items in zip(*columns, strict=True)
        ]

    def _creatures_text(self, state, episodes, position) -> list[str]:
        mob_position = np.concatenate(
            [np.asarray(state.mobs.position), np.asarray(state.arrows.position)], axis=1
        )[episodes]
        alive = np.concatenate(
            [np.asarray(state.mobs.alive), np.asarray(state.arrows.alive)], axis=1
        )[episodes]
        kinds = np.concatenate([self._mob_kinds, np.full(state.arrows.alive.shape[-1], C.ARROW)])
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
                f"{C.MOB_KINDS[kinds[mob]]} {_relative(d_row, d_col)} (row {row}, col {col})"
            )
        return ["Creatures: " + "; ".join(items) + "." if items else "" for items in seen]

    def _teammates_text(self, agents, episodes, seats, messages) -> list[str]:
        num_agents = self.config.num_agents
        if num_agents == 1:
            return [""] * len(seats)
        positions = np.asarray(agents.position)[episodes]  # (K, P, 2)
        health = np.asarray(agents.stats)[episodes, :, C.HEALTH]
        status = np.asarray(agents.status)[episodes]
        lines = []
        for pair, (episode, seat) in enumerate(zip(episodes.tolist(), seats.tolist(), strict=True)):
            me = positions[pair, seat]
            entries = []
            for mate in range(num_agents):
                if mate == seat:
                    continue
                row, col = positions[pair, mate].tolist()
                d_row, d_col = row - me[0], col - me[1]
                said = messages[episode, mate]
                role = C.ROLES[mate % C.NUM_ROLES]
                entries.append(
                    f"- agent {mate} ({role}): {_STATUS[status[pair, mate]]}, "
                    f"health {health[pair, mate]}/9, at (row {row}, col {col}), "
                    f"{_relative(d_row, d_col)}" + (f', says: "{said}"' if said else "")
                )
            lines.append("Teammates:\n" + "\n".join(entries))
        return lines

    def _cues_text(self, agents, episodes, seats) -> list[str]:
        unlocked = np.asarray(agents.achievements)[episodes].any(axis=1)  # (K, 22)
        health = np.asarray(agents.stats)[episodes, :, C.HEALTH]
        status = np.asarray(agents.status)[episodes]
        names = np.asarray(C.ACHIEVEMENTS)
        cues = []
        for pair, seat in enumerate(seats.tolist()):
            open_ones = names[~unlocked[pair]].tolist()
            needs = [
                f"agent {mate} is DOWNED: revive it"
                if status[pair, mate] == C.DOWNED
                else f"agent {mate} has low health ({health[pair, mate]}/9)"
                for mate in range(self.config.num_agents)
                if mate != seat
                and (
                    status[pair, mate] == C.DOWNED
                    or (status[pair, mate] == C.ALIVE and health[pair, mate] <= 3)
                )
            ]
            cues.append(
                f"Team progress: {int(unlocked[pair].sum())}/{len(names)} achievements. "
                f"Still open: {', '.join(open_ones) or 'none'}."
                + (f"\nHelp needed: {'; '.join(needs)}." if needs else "")
            )
        return cues
