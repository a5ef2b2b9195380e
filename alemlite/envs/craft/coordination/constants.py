"""Numbers of the coordination layer, one section per part (in the layer's order).

The base world's numbers are in `alemlite.envs.craft.constants` (imported as `C`), which
knows nothing of these; this module (imported as `L`, the layer's) builds on them.
Numbers follow the Craft spec.
"""

from __future__ import annotations

import numpy as np

from alemlite.envs.craft import constants as C

# ---- the layer: difficulty and coordination achievements ------------------------------
# Difficulty presets of alpha; "sampled" draws alpha ~ U[SAMPLED_ALPHA] per episode.
DIFFICULTY_PRESETS = {"easy": 0.3, "medium": 0.6, "hard": 0.9}
SAMPLED_ALPHA = (0.2, 0.85)
COORDINATION_ACHIEVEMENTS = (
    "complete_sync",
    "complete_handover",
    "defeat_elite",
    "eat_large_cow",
    "give_item",
    "revive_teammate",
    "build_shelter",
    "build_forge",
    "build_beacon",
    "make_diamond_sword",
)
COORDINATION_INDEX = {name: index for index, name in enumerate(COORDINATION_ACHIEVEMENTS)}
NUM_COORDINATION_ACHIEVEMENTS = len(COORDINATION_ACHIEVEMENTS)
COORDINATION_WEIGHT = 2.0

# ---- roles (roles.py) -------------------------------------------------------------------
# Roles by agent index mod 3; each agent sees its own (one-hot) even with roles off.
ROLES = ("warrior", "forager", "miner")
NUM_ROLES = len(ROLES)
# Role of each gated activity (index into ROLES); a specialist always succeeds.
WARRIOR, FORAGER, MINER = range(NUM_ROLES)
# DO on these materials needs the role (mining stone / iron / diamond, drinking, saplings).
MATERIAL_ROLE = np.full(C.MATERIAL_CODES, -1, dtype=np.int32)
for _material, _role in (
    (C.STONE, MINER),
    (C.IRON, MINER),
    (C.DIAMOND, MINER),
    (C.WATER, FORAGER),
    (C.GRASS, FORAGER),
):
    MATERIAL_ROLE[_material] = _role
# Base actions gated by a role (making pickaxes / placing stone: miner; swords: warrior).
ACTION_ROLE = np.full(C.NUM_ACTIONS, -1, dtype=np.int32)
for _action, _role in (
    (C.PLACE_STONE, MINER),
    (C.MAKE_WOOD_PICKAXE, MINER),
    (C.MAKE_STONE_PICKAXE, MINER),
    (C.MAKE_IRON_PICKAXE, MINER),
    (C.MAKE_WOOD_SWORD, WARRIOR),
    (C.MAKE_STONE_SWORD, WARRIOR),
    (C.MAKE_IRON_SWORD, WARRIOR),
):
    ACTION_ROLE[_action] = _role
WARRIOR_DAMAGE_FACTOR = 2
# Eating a cow or a plant: a forager gets the full food, anyone else half of it.
NON_FORAGER_FOOD_SHARE = 0.5
# Forager: each unit of food and drink lasts twice as long (see roles.py).
FORAGER_RESERVE_FACTOR = 2

# ---- tasks (tasks.py) -------------------------------------------------------------------
# One byte per tile, kind in the low 2 bits, a quorum roll in the high 6 bits (k = P where
# roll < 64 * alpha, else 2, capped at P; alpha is read at the step, so one generated
# world serves every difficulty).
TASK_KINDS = ("none", "handover", "soft_sync", "hard_sync")
TASK_NONE, TASK_HANDOVER, TASK_SOFT_SYNC, TASK_HARD_SYNC = range(len(TASK_KINDS))
TASK_KIND_BITS = 2
QUORUM_LEVELS = 64
TASK_MATERIALS = C.material_set(C.TREE, C.STONE, C.COAL, C.IRON, C.DIAMOND)
HANDOVER_SHARE = 0.25  # of all tasks; the rest are syncs, half of them soft
HANDOVER_YIELD = 3  # starter and finisher each receive k(k+1)/2 with k = 2
# Corner flags on task tiles and unbuilt sites in rendered frames, by task kind.
TASK_FLAG_COLOURS = np.array([(0, 0, 0), (70, 150, 255), (255, 220, 0), (230, 40, 40)], np.uint8)

# ---- elites (elites.py) -----------------------------------------------------------------
# A zombie or skeleton is elite with probability 0.15, a cow large with 0.2; half of them
# are hard (no damage unless >= 2 agents hit on one step), the rest soft (half damage from
# a lone attacker); coordinated hits do double damage. Elites have ELITE_HEALTH_FACTOR
# times the health; a large cow gives twice the food.
ELITE_KINDS = ("normal", "soft", "hard")
ELITE_NONE, ELITE_SOFT, ELITE_HARD = range(len(ELITE_KINDS))
ELITE_PROBABILITY = np.array([0.15, 0.15, 0.2])  # zombie, skeleton, cow
ELITE_HARD_SHARE = 0.5
ELITE_HEALTH_FACTOR = 2
# Frames round elite mobs in rendered frames, by elite kind.
ELITE_FRAME_COLOURS = np.array([(0, 0, 0), (255, 200, 0), (230, 30, 30)], np.uint8)

# ---- trading (trading.py) ---------------------------------------------------------------
# Resources a request may name, and where each lives (a stat or an item).
REQUEST_RESOURCES = ("food", "drink", "wood", "stone", "coal", "iron", "diamond", "sapling")
NUM_REQUEST_RESOURCES = len(REQUEST_RESOURCES)
REQUEST_STAT = np.array([C.FOOD, C.DRINK, -1, -1, -1, -1, -1, -1], dtype=np.int32)
REQUEST_ITEM = np.array(
    [-1, -1, C.INV_WOOD, C.INV_STONE, C.INV_COAL, C.INV_IRON, C.INV_DIAMOND, C.INV_SAPLING],
    dtype=np.int32,
)
REQUEST_DURATION = 10

# ---- construction (construction.py) -----------------------------------------------------
# A fixed number of solid SITE tiles laid near the start at generation. Each is a hard
# sync (one byte like a task tile: kind and quorum roll) or, with two or more agents, a
# handover (share SITE_HANDOVER_SHARE). Every participant of a build pays one share of
# the building's cost (BUILDING_SHARE, a dynamic parameter); a sync needs k builders with
# their share on one step, a handover a starter (who pays at once) and a different
# finisher of the same building within the window.
# The blocks it lays take the codes after the world's materials (which the world leaves
# to a layer, see C.MATERIAL_CODES): an unbuilt site, then what stands on it.
BLOCKS = ("site", "shelter", "forge", "beacon")
SITE, SHELTER, FORGE, BEACON = range(C.NUM_MATERIALS, C.NUM_MATERIALS + len(BLOCKS))
BLOCK_COLOURS = np.array(
    [(185, 160, 120), (150, 100, 60), (80, 80, 95), (250, 240, 150)], dtype=np.uint8
)
BUILDINGS = ("shelter", "forge", "beacon")
NUM_BUILDINGS = len(BUILDINGS)
SHELTER_KIND, FORGE_KIND, BEACON_KIND = range(NUM_BUILDINGS)
BUILDING_MATERIAL = np.array([SHELTER, FORGE, BEACON], dtype=np.int32)
BUILD_ACTIONS = ("build_shelter", "build_forge", "build_beacon", "make_diamond_sword")
SITE_HANDOVER_SHARE = 0.5
BUILDING_SHARE = np.zeros((NUM_BUILDINGS, C.NUM_ITEMS), dtype=np.int32)
for _row, _costs in enumerate(
    (
        {C.INV_WOOD: 1, C.INV_STONE: 1},  # shelter
        {C.INV_STONE: 1, C.INV_IRON: 1, C.INV_COAL: 1},  # forge
        {C.INV_COAL: 1, C.INV_IRON: 1},  # beacon
    )
):
    for _item, _amount in _costs.items():
        BUILDING_SHARE[_row, _item] = _amount
# A training curriculum's lever (`CraftConfig.building_cost`): a builder pays the k items of
# its share that come first in the inventory order (wood, stone, coal, iron: the order the
# tech tree reaches them), 0 making buildings free; the largest share has this many items.
FULL_BUILDING_COST = int(np.max(np.sum(BUILDING_SHARE > 0, axis=1)))


def building_share(cost) -> np.ndarray:
    """`BUILDING_SHARE` with each building's share cut to its first `cost` items (a whole
    number, or an array of them: the shares gain its shape in front)."""
    cost = np.asarray(cost, np.int32)[..., None, None]
    rank = np.cumsum(BUILDING_SHARE > 0, axis=1) - 1  # each item's place in its share
    return np.where(rank < cost, BUILDING_SHARE, 0).astype(np.int32)


# Diamond sword: two agents next to one forge act on one step; each pays this, each gets one.
DIAMOND_SWORD_SHARE = np.zeros(C.NUM_ITEMS, dtype=np.int32)
DIAMOND_SWORD_SHARE[[C.INV_WOOD, C.INV_DIAMOND]] = 1
DIAMOND_SWORD_DAMAGE = 8  # Craftax's diamond sword
DIAMOND_SWORD_SMITHS = 2
# Shelter: a sleeper within Chebyshev distance 1 recovers twice as fast (health
# recovery and rest) and zombies cannot hurt it.
SHELTER_RECOVERY_FACTOR = 2
# Beacon: tiles within Chebyshev BEACON_RADIUS (9x9) are lit and zombies do not spawn there.
BEACON_RADIUS = 4

# ---- every material a map may hold -------------------------------------------------------
# Names by code: the world's materials, then the blocks of the parts (whether each part is
# on or not, so that codes never depend on the switches).
MATERIALS = C.MATERIALS + BLOCKS
assert len(MATERIALS) <= C.MATERIAL_CODES
