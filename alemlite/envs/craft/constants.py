"""Materials, items, actions, achievements and colours of the Craft world.

Numbers follow Crafter (Hafner, 2021: `crafter/data.yaml` and `crafter/objects.py`)
unless a comment says otherwise; the Craft spec overrides Crafter where it speaks.
Coordinates are `(row, col)`; "up" is row - 1.
"""

from __future__ import annotations

import numpy as np

# ---- materials (uint8 codes of the map) -----------------------------------------
# Code 0 never appears in a map: it marks tiles outside the map in an agent's view.
MATERIALS = (
    "out_of_bounds",
    "water",
    "grass",
    "stone",
    "path",
    "sand",
    "tree",
    "lava",
    "coal",
    "iron",
    "diamond",
    "table",
    "furnace",
    "sapling",  # a young plant (Crafter's Plant object, not ripe)
    "ripe_plant",  # Crafter's Plant object once grown > ripen_steps
)
(
    OUT_OF_BOUNDS,
    WATER,
    GRASS,
    STONE,
    PATH,
    SAND,
    TREE,
    LAVA,
    COAL,
    IRON,
    DIAMOND,
    TABLE,
    FURNACE,
    SAPLING,
    RIPE_PLANT,
) = range(len(MATERIALS))
NUM_MATERIALS = len(MATERIALS)
# Codes from NUM_MATERIALS up to MATERIAL_CODES are left to a layer above the world, for
# the blocks it lays: to the world they are solid tiles that nothing collects, places on
# or walks into, and every lookup table over material codes spans them.
MATERIAL_CODES = 32


def material_set(*codes: int) -> np.ndarray:
    """Boolean lookup table over material codes (index it with a map value)."""
    table = np.zeros(MATERIAL_CODES, dtype=bool)
    table[list(codes)] = True
    return table


# Crafter: agents and mobs walk on grass, sand, path; agents may also step into lava
# (and die). Arrows fly over water and lava too.
WALKABLE = material_set(GRASS, SAND, PATH)
AGENT_ENTERABLE = material_set(GRASS, SAND, PATH, LAVA)
ARROW_FLIES_OVER = material_set(GRASS, SAND, PATH, WATER, LAVA)
COW_WALKABLE = material_set(GRASS, SAND, PATH)
ZOMBIE_WALKABLE = material_set(GRASS, SAND, PATH)
SKELETON_WALKABLE = material_set(PATH)  # skeletons stay in tunnels and caves
# Arrows break tables and furnaces into path (crafter/objects.py, Arrow.update).
ARROW_BREAKS = material_set(TABLE, FURNACE)

# ---- agent stats and inventory ----------------------------------------------------
STATS = ("health", "food", "drink", "energy")
HEALTH, FOOD, DRINK, ENERGY = range(len(STATS))
STAT_MAX = 9  # Crafter: every stat starts at 9 and is capped at 9
INVENTORY = (
    "sapling",
    "wood",
    "stone",
    "coal",
    "iron",
    "diamond",
    "wood_pickaxe",
    "stone_pickaxe",
    "iron_pickaxe",
    "wood_sword",
    "stone_sword",
    "iron_sword",
)
(
    INV_SAPLING,
    INV_WOOD,
    INV_STONE,
    INV_COAL,
    INV_IRON,
    INV_DIAMOND,
    INV_WOOD_PICKAXE,
    INV_STONE_PICKAXE,
    INV_IRON_PICKAXE,
    INV_WOOD_SWORD,
    INV_STONE_SWORD,
    INV_IRON_SWORD,
) = range(len(INVENTORY))
NUM_ITEMS = len(INVENTORY)
INVENTORY_MAX = 9

# Survival counters (crafter/objects.py, Player._update_life_stats and
# _degen_or_regen_health) are kept in half units so that sleeping's 0.5 steps stay
# integers: every threshold below is twice Crafter's.
COUNTERS = ("hunger", "thirst", "fatigue", "recover")
HUNGER, THIRST, FATIGUE, RECOVER = range(len(COUNTERS))
HALF = 2  # counter units per Crafter unit
HUNGER_LIMIT = 25 * HALF  # food - 1 when hunger > 25
THIRST_LIMIT = 20 * HALF  # drink - 1 when thirst > 20
FATIGUE_LIMIT = 30 * HALF  # energy - 1 when fatigue > 30
REST_LIMIT = -10 * HALF  # energy + 1 when fatigue < -10 (while sleeping)
RECOVER_LIMIT = 25 * HALF  # health + 1 when recover > 25
DEGEN_LIMIT = -15 * HALF  # health - 1 when recover < -15

# ---- agent status -----------------------------------------------------------------
ALIVE, DOWNED, DEAD = 0, 1, 2

# ---- actions ----------------------------------------------------------------------
# Crafter's 17 actions in Crafter's order; the coordination layer appends its own.
ACTIONS = (
    "noop",
    "move_left",
    "move_right",
    "move_up",
    "move_down",
    "do",
    "sleep",
    "place_stone",
    "place_table",
    "place_furnace",
    "place_plant",
    "make_wood_pickaxe",
    "make_stone_pickaxe",
    "make_iron_pickaxe",
    "make_wood_sword",
    "make_stone_sword",
    "make_iron_sword",
)
(
    NOOP,
    MOVE_LEFT,
    MOVE_RIGHT,
    MOVE_UP,
    MOVE_DOWN,
    DO,
    SLEEP,
    PLACE_STONE,
    PLACE_TABLE,
    PLACE_FURNACE,
    PLACE_PLANT,
    MAKE_WOOD_PICKAXE,
    MAKE_STONE_PICKAXE,
    MAKE_IRON_PICKAXE,
    MAKE_WOOD_SWORD,
    MAKE_STONE_SWORD,
    MAKE_IRON_SWORD,
) = range(len(ACTIONS))
NUM_ACTIONS = len(ACTIONS)

# Facing index = move action - MOVE_LEFT: left, right, up, down as (d_row, d_col).
DIRECTIONS = np.array([[0, -1], [0, 1], [-1, 0], [1, 0]], dtype=np.int32)

# ---- collecting with DO (crafter/data.yaml, `collect:`) ---------------------------
# Per material: the tool needed (-1: none), the item received (-1: none), and what the
# tile becomes. Trees stay trees (Crafter >= 1.7), water gives drink (a stat, handled
# apart), grass gives a sapling with probability SAPLING_PROBABILITY.
COLLECT_TOOL = np.full(MATERIAL_CODES, -1, dtype=np.int32)
COLLECT_ITEM = np.full(MATERIAL_CODES, -1, dtype=np.int32)
COLLECT_LEAVES = np.arange(MATERIAL_CODES, dtype=np.int32)
for _material, _tool, _item, _leaves in (
    (TREE, -1, INV_WOOD, TREE),
    (STONE, INV_WOOD_PICKAXE, INV_STONE, PATH),
    (COAL, INV_WOOD_PICKAXE, INV_COAL, PATH),
    (IRON, INV_STONE_PICKAXE, INV_IRON, PATH),
    (DIAMOND, INV_IRON_PICKAXE, INV_DIAMOND, PATH),
    (GRASS, -1, INV_SAPLING, GRASS),
):
    COLLECT_TOOL[_material] = _tool
    COLLECT_ITEM[_material] = _item
    COLLECT_LEAVES[_material] = _leaves
SAPLING_PROBABILITY = 0.1
DRINK_PER_SIP = 1  # DO on water: drink + 1, thirst reset
FOOD_PER_COW = 6  # killing a cow: food + 6, hunger reset
FOOD_PER_PLANT = 4  # eating a ripe plant: food + 4 (Crafter's Plant)
RIPEN_STEPS = 300  # a plant is ripe once grown > 300 steps
COW_HEALTH, ZOMBIE_HEALTH, SKELETON_HEALTH = 3, 5, 3
# Melee damage with no / wood / stone / iron sword (the best sword counts).
SWORD_DAMAGE = np.array([1, 2, 3, 5], dtype=np.int32)

# ---- placing (crafter/data.yaml, `place:`) ------------------------------------------
# Crafter's final data.yaml: stone costs 1 stone, table 1 wood, furnace 1 stone with a
# table nearby, plant 1 sapling; the spec requires the furnace to stand near a table.
PLACE_ACTIONS = (PLACE_STONE, PLACE_TABLE, PLACE_FURNACE, PLACE_PLANT)
PLACE_ITEM = np.array([INV_STONE, INV_WOOD, INV_STONE, INV_SAPLING], dtype=np.int32)
PLACE_COST = np.array([1, 1, 1, 1], dtype=np.int32)
PLACE_RESULT = np.array([STONE, TABLE, FURNACE, SAPLING], dtype=np.int32)
PLACE_NEEDS_TABLE = np.array([False, False, True, False])
PLACE_WHERE = np.stack(
    [
        material_set(GRASS, SAND, PATH, WATER, LAVA),
        material_set(GRASS, SAND, PATH),
        material_set(GRASS, SAND, PATH),
        material_set(GRASS),
    ]
)

# ---- making (crafter/data.yaml, `make:`): costs over (wood, stone, coal, iron) -------
MAKE_ACTIONS = (
    MAKE_WOOD_PICKAXE,
    MAKE_STONE_PICKAXE,
    MAKE_IRON_PICKAXE,
    MAKE_WOOD_SWORD,
    MAKE_STONE_SWORD,
    MAKE_IRON_SWORD,
)
MAKE_ITEM = np.array(
    [
        INV_WOOD_PICKAXE,
        INV_STONE_PICKAXE,
        INV_IRON_PICKAXE,
        INV_WOOD_SWORD,
        INV_STONE_SWORD,
        INV_IRON_SWORD,
    ],
    dtype=np.int32,
)
MAKE_COST = np.zeros((len(MAKE_ACTIONS), NUM_ITEMS), dtype=np.int32)
for _row, _costs in enumerate(
    (
        {INV_WOOD: 1},
        {INV_WOOD: 1, INV_STONE: 1},
        {INV_WOOD: 1, INV_COAL: 1, INV_IRON: 1},
        {INV_WOOD: 1},
        {INV_WOOD: 1, INV_STONE: 1},
        {INV_WOOD: 1, INV_COAL: 1, INV_IRON: 1},
    )
):
    for _item, _amount in _costs.items():
        MAKE_COST[_row, _item] = _amount
MAKE_NEEDS_FURNACE = np.array([False, False, True, False, False, True])
# Tables and furnaces count as "nearby" within this Chebyshev radius of the agent.
NEARBY_RADIUS = 1

# ---- achievements (crafter/data.yaml, `achievements:`) -------------------------------
ACHIEVEMENTS = (
    "collect_coal",
    "collect_diamond",
    "collect_drink",
    "collect_iron",
    "collect_sapling",
    "collect_stone",
    "collect_wood",
    "defeat_skeleton",
    "defeat_zombie",
    "eat_cow",
    "eat_plant",
    "make_iron_pickaxe",
    "make_iron_sword",
    "make_stone_pickaxe",
    "make_stone_sword",
    "make_wood_pickaxe",
    "make_wood_sword",
    "place_furnace",
    "place_plant",
    "place_stone",
    "place_table",
    "wake_up",
)
ACHIEVEMENT_INDEX = {name: index for index, name in enumerate(ACHIEVEMENTS)}
NUM_ACHIEVEMENTS = len(ACHIEVEMENTS)
# Achievement unlocked by collecting each material (-1: none).
COLLECT_ACHIEVEMENT = np.full(MATERIAL_CODES, -1, dtype=np.int32)
for _material, _name in (
    (TREE, "collect_wood"),
    (STONE, "collect_stone"),
    (COAL, "collect_coal"),
    (IRON, "collect_iron"),
    (DIAMOND, "collect_diamond"),
    (GRASS, "collect_sapling"),
    (WATER, "collect_drink"),
):
    COLLECT_ACHIEVEMENT[_material] = ACHIEVEMENT_INDEX[_name]
PLACE_ACHIEVEMENT = np.array(
    [ACHIEVEMENT_INDEX[f"place_{name}"] for name in ("stone", "table", "furnace", "plant")],
    dtype=np.int32,
)
MAKE_ACHIEVEMENT = np.array(
    [ACHIEVEMENT_INDEX[ACTIONS[action]] for action in MAKE_ACTIONS], dtype=np.int32
)

# ---- mobs ---------------------------------------------------------------------------
MOB_KINDS = ("zombie", "skeleton", "cow", "arrow")
ZOMBIE, SKELETON, COW, ARROW = range(len(MOB_KINDS))
NUM_MOB_KINDS = len(MOB_KINDS)
ZOMBIE_DAMAGE = 2
ZOMBIE_SLEEP_DAMAGE = 7
ZOMBIE_COOLDOWN = 5
ZOMBIE_CHASE_DISTANCE = 8  # chases within 8 tiles (L1, as crafter's Object.distance)
ZOMBIE_CHASE_PROBABILITY = 0.9
ZOMBIE_LONG_AXIS_PROBABILITY = 0.8
COW_MOVE_PROBABILITY = 0.5
SKELETON_RETREAT_DISTANCE = 3
SKELETON_SHOOT_DISTANCE = 5
SKELETON_SHOOT_PROBABILITY = 0.5
SKELETON_APPROACH_DISTANCE = 8
SKELETON_APPROACH_PROBABILITY = 0.3
SKELETON_WANDER_PROBABILITY = 0.2
SKELETON_RELOAD = 4
ARROW_DAMAGE = 2

# ---- colours (RGB) for rendering, by material and entity ----------------------------
MATERIAL_COLOURS = np.array(
    [
        (0, 0, 0),  # out of bounds
        (66, 114, 194),  # water
        (106, 168, 79),  # grass
        (125, 125, 125),  # stone
        (160, 140, 110),  # path
        (219, 206, 140),  # sand
        (38, 102, 38),  # tree
        (226, 88, 34),  # lava
        (45, 45, 45),  # coal
        (196, 148, 112),  # iron
        (120, 230, 230),  # diamond
        (140, 90, 40),  # table
        (90, 60, 60),  # furnace
        (150, 200, 90),  # sapling
        (220, 180, 60),  # ripe plant
    ],
    dtype=np.uint8,
)
MOB_COLOURS = np.array(
    [(40, 150, 60), (230, 230, 230), (120, 80, 50), (250, 250, 120)], dtype=np.uint8
)
AGENT_COLOURS = np.array(
    [
        (230, 50, 50),
        (50, 90, 230),
        (240, 200, 30),
        (200, 60, 200),
        (30, 200, 200),
        (250, 140, 30),
        (255, 255, 255),
        (120, 60, 200),
    ],
    dtype=np.uint8,
)
