"""The Craft world: a fast multi-agent Crafter-like survival world in pure JAX.

config.py        CraftConfig: the world's options and each part's, one flat keyword
                 each; CraftParams (vmappable): the world's, then the layer's
constants.py     the world's materials, items, actions, achievements, mobs, colours
env.py           CraftEnv: the world's phases and the enabled parts, in step order
spec.py          CraftOptions and SPEC (found through the registry)
policies.py      reference policies (random, noop, scripted, team)
team_policy/     the scripted coordinating team, one module per concern
world/           the base world, which knows nothing of the layer:
    config.py    WorldConfig (shapes) and WorldParams, all the world reads
    state.py tiles.py randomness.py worldgen.py gathering.py movement.py
    survival.py mobs.py achievements.py observation.py rendering.py, and
    rules.py     what a layer may change in the world's rules for one step
coordination/    the coordination layer, a list of parts on top of the world:
    part.py      the hooks a part fills in (generation, step, actions, observation,
                 rendering, metrics), each a no-op by default
    layer.py     the enabled parts in order, and what they share (alpha, revives,
                 the coordination reward and metrics)
    roles.py tasks.py elites.py trading.py signals.py construction.py  (one part
                 each, with its own switch), state.py (the layer's tables)
    config.py    the layer's options, one class per part (switch, sizes, checks)
    constants.py the layer's numbers, one section per part: roles, the blocks that
                 construction lays (codes after the world's materials), colours
prompting/       the LLM prompt builder (CraftRenderer) and its templates
"""

from alemlite.envs.craft.config import CraftConfig, CraftParams
from alemlite.envs.craft.coordination.config import parse_difficulty
from alemlite.envs.craft.env import CraftEnv
from alemlite.envs.craft.spec import SPEC, CraftOptions, make_craft
from alemlite.envs.craft.world.state import CraftState

__all__ = [
    "SPEC",
    "CraftConfig",
    "CraftEnv",
    "CraftOptions",
    "CraftParams",
    "CraftState",
    "make_craft",
    "parse_difficulty",
]
