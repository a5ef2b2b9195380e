"""What each agent goes for this step (`Goal`), and the choice of the first that applies."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.typing import ArrayLike

from alemlite.envs.craft import constants as C


class Goal(NamedTuple):
    """Each agent's choice: an action now, or a walk to target tiles and an action there."""

    walk: jax.Array  # (P,) bool: walk until facing a target, then act
    action: jax.Array  # (P,) int32: the action now, or once facing a target
    materials: jax.Array  # (P, M) bool: target tiles by material
    skip_tasks: jax.Array  # (P,) bool: material targets leave coordination tiles alone
    # (but for soft syncs of SOLO_MATERIALS)
    point: jax.Array  # (P, 2) int32: a target tile
    has_point: jax.Array  # (P,) bool
    mobs: jax.Array  # (P, N) bool: target mobs by slot


class Goals:
    """Builders of `Goal`s for P agents and N mob slots."""

    def __init__(self, num_agents: int, num_mobs: int) -> None:
        self.num_agents, self.num_mobs = num_agents, num_mobs

    def _make(self, walk, action, materials=None, skip_tasks=False, point=None, mobs=None):
        agents = self.num_agents
        no_materials = jnp.zeros((agents, C.MATERIAL_CODES), bool)
        return Goal(
            walk=jnp.broadcast_to(jnp.asarray(walk), (agents,)),
            action=jnp.broadcast_to(jnp.asarray(action, jnp.int32), (agents,)),
            materials=no_materials
            if materials is None
            else jnp.broadcast_to(jnp.asarray(materials), (agents, C.MATERIAL_CODES)),
            skip_tasks=jnp.broadcast_to(jnp.asarray(skip_tasks), (agents,)),
            point=jnp.zeros((agents, 2), jnp.int32)
            if point is None
            else jnp.broadcast_to(jnp.asarray(point, jnp.int32), (agents, 2)),
            has_point=jnp.full((agents,), point is not None),
            mobs=jnp.zeros((agents, self.num_mobs), bool)
            if mobs is None
            else jnp.broadcast_to(mobs, (agents, self.num_mobs)),
        )

    def act(self, action: ArrayLike) -> Goal:
        return self._make(False, action)

    def to_materials(
        self, materials: ArrayLike, action: ArrayLike, skip_tasks: bool = True
    ) -> Goal:
        return self._make(True, action, materials=materials, skip_tasks=skip_tasks)

    def to_point(self, point: ArrayLike, action: ArrayLike) -> Goal:
        return self._make(True, action, point=point)

    def to_mobs(
        self, mobs: ArrayLike, action: ArrayLike, materials: ArrayLike | None = None
    ) -> Goal:
        return self._make(True, action, materials=materials, mobs=mobs)


def first_applicable(options: list[tuple[jax.Array, Goal]]) -> tuple[Goal, jax.Array]:
    """Per agent the first option that applies (the last one always should)."""
    goal, chosen = options[-1][1], jnp.full(options[-1][0].shape, len(options) - 1)
    for index in range(len(options) - 2, -1, -1):
        applies, option = options[index]

        def pick(new, old, applies=applies):
            return jnp.where(applies.reshape(applies.shape + (1,) * (new.ndim - 1)), new, old)

        goal = jax.tree.map(pick, option, goal)
        chosen = jnp.where(applies, index, chosen)
    return goal, chosen
