"""The numbers the scripted team is tuned by, and the tables its behaviours read."""

from __future__ import annotations

import numpy as np

from alemlite.envs.craft import constants as C
from alemlite.envs.craft.coordination import constants as L

# Rallies look at the (2 * RALLY_RADIUS + 1)^2 tiles around each agent; a shelter twice
# this far (Chebyshev) is still worth walking to for sleep.
RALLY_RADIUS = 8
FAR = 1 << 20  # distance of an unreachable tile
TUNNEL_COST = 2  # mine the tile, then step into it
EXPLORE_PERIOD = 16  # steps an exploring agent keeps its direction
DETOUR_PROBABILITY = 0.05  # a random step now and then breaks standoffs between agents

# Survival thresholds on the 0..9 stats. The forager keeps its drink high as the team's
# supply; the others ask teammates for drink and food first and fetch for themselves
# only when low (the miner, whose work is far from water and cows, when lower still).
ASK_DRINK = 4
THIRSTY = 3
FORAGER_THIRSTY = 7
ASK_FOOD = 4
HUNGRY = 4
MINER_HUNGRY = 2
SLEEPY = 2
# At or below this, food or drink comes before projects and rallies (the forager's drink
# below FORAGER_URGENT, its stock for the team).
URGENT = 1
FORAGER_URGENT = 6
NIGHT = 0.35  # daylight below which the team sleeps beside its shelter
WOUNDED = 3  # health at which an agent rests beside the shelter
HOLDS = 5  # health above which a member stays at a meeting though hungry or thirsty
HELP_RADIUS = 12  # an agent this close (L1) comes to hit an elite next to a teammate
KEEP_STAT = 6  # a giver keeps this much food or drink (more than any asker has)
# A cow feeds the forager in full and anyone else by half: the forager is the team's
# hunter, eats while below FORAGER_HUNTS and shares all but FORAGER_KEEPS_FOOD.
FORAGER_HUNTS = 6
FORAGER_KEEPS_FOOD = 3
WELL_ENOUGH = 0.5  # an agent whose role check passes this often does the work itself

# Task rallies: the participants' walking distances to a free side of the tile, plus a
# penalty for each one that may fail its role check; a sync is tried only when all of
# its participants pass their role checks together at least this often.
ROLE_PENALTY = 6
MIN_SYNC_SUCCESS = 0.3
# Builders and smiths: warrior, forager, then miner, who gives its ore from afar (gives
# reach any distance) rather than walk back from the mines.
ROLE_PREFERENCE = np.array([0, 1, 2])  # rank of warrior, forager, miner
TABLE_REACH = 10  # walk to a table this close (L1) rather than place a new one
BASE_WOOD = 3  # wood every agent keeps at hand once nothing else is needed

# Gathered resources: inventory item and the material that yields it.
GATHER_ITEMS = np.array([C.INV_WOOD, C.INV_STONE, C.INV_COAL, C.INV_IRON, C.INV_DIAMOND])
GATHER_MATERIALS = np.array([C.TREE, C.STONE, C.COAL, C.IRON, C.DIAMOND])
MINED = C.material_set(C.STONE, C.COAL, C.IRON, C.DIAMOND)
# Diamonds are too rare to leave a soft-sync tile to the team: the miner works one alone
# (a solo DO collects with probability 1 - alpha).
SOLO_MATERIALS = C.material_set(C.DIAMOND)
# Request index of each inventory item (-1: not requestable).
ITEM_REQUEST = np.full(C.NUM_ITEMS, -1, dtype=np.int32)
for _request, _item in enumerate(L.REQUEST_ITEM):
    if _item >= 0:
        ITEM_REQUEST[_item] = _request
FOOD_REQUEST, DRINK_REQUEST = L.REQUEST_RESOURCES.index("food"), L.REQUEST_RESOURCES.index("drink")
