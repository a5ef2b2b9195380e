"""Danger and downed teammates: revive them, fight what is faced, hit elites two at a time."""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.team_policy.tuning import FAR, HELP_RADIUS
from alemlite.envs.craft.team_policy.view import TeamView


class Revive(NamedTuple):
    reviving: jax.Array  # (P,) bool
    point: jax.Array  # (P, 2) the downed teammate's tile


def revive(view: TeamView) -> Revive:
    """The nearest able teammate walks to each downed agent."""
    position, agent = view.position, view.agent
    gap = jnp.sum(jnp.abs(position[:, None, :] - position[None, :, :]), axis=-1)
    helper = jnp.where(view.able[:, None] & ~jnp.eye(view.num_agents, dtype=bool), gap, FAR)
    downed = view.state.agents.status == C.DOWNED
    assigned = downed[None, :] & (jnp.argmin(helper, axis=0)[None, :] == agent[:, None])
    assigned &= helper < FAR
    return Revive(reviving=jnp.any(assigned, axis=1), point=position[jnp.argmax(assigned, axis=1)])


class Fight(NamedTuple):
    facing_hostile: jax.Array  # (P,) bool: a zombie or skeleton is faced
    zombie_beside: jax.Array  # (P,) bool
    zombie_direction: jax.Array  # (P,) the direction of a zombie beside


def _hostile_and_offset(view: TeamView) -> tuple[jax.Array, jax.Array]:
    """`(N,)` bool: hostile mob slots; `(P, N, 2)`: each mob's offset from each agent."""
    kinds = view.kinds
    hostile = (kinds == C.ZOMBIE) | (kinds == C.SKELETON)
    return hostile, view.state.mobs.position[None, :, :] - view.position[:, None, :]


def fight(view: TeamView) -> Fight:
    """Hit the hostile mob faced; turn to a zombie beside."""
    mobs = view.state.mobs
    hostile, offset = _hostile_and_offset(view)
    beside = (
        (jnp.sum(jnp.abs(offset), -1) == 1)
        & mobs.alive[None, :]
        & (view.kinds == C.ZOMBIE)[None, :]
    )
    direction = jnp.argmax(
        jnp.all(offset[:, :, None, :] == jnp.asarray(C.DIRECTIONS)[None, None], -1), -1
    )
    return Fight(
        facing_hostile=jnp.any(view.facing_mobs & hostile[None, :], axis=1),
        zombie_beside=jnp.any(beside, axis=1),
        zombie_direction=jnp.take_along_axis(direction, jnp.argmax(beside, 1)[:, None], 1)[:, 0],
    )


class Help(NamedTuple):
    helping: jax.Array  # (P,) bool: walks to hit an elite beside a teammate
    target: jax.Array  # (P, N) bool: that elite


def help_against_elites(view: TeamView) -> Help:
    """An elite next to an agent takes damage only (or fully) from two hitters on one step:
    the nearest other able agent comes to hit it too."""
    mobs = view.state.mobs
    hostile, offset = _hostile_and_offset(view)
    mob_gap = jnp.sum(jnp.abs(offset), axis=-1)  # (P, N)
    pressing = hostile & (view.elite != L.ELITE_NONE) & mobs.alive & jnp.any(mob_gap <= 1, axis=0)
    helper_gap = jnp.where(view.able[:, None] & (mob_gap > 1), mob_gap, FAR)
    helps = pressing[None, :] & (jnp.argmin(helper_gap, axis=0)[None, :] == view.agent[:, None])
    helps &= helper_gap <= HELP_RADIUS
    return Help(
        helping=jnp.any(helps, axis=1),
        target=jax.nn.one_hot(jnp.argmax(helps, axis=1), view.config.num_mobs, dtype=bool),
    )
