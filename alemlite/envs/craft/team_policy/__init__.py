"""The scripted coordinating team of the Craft world (`POLICIES["team"]`).

A reference team without memory: every step each agent reads the whole state and takes
the first behaviour of a priority list that applies to it (`BEHAVIOURS`, decided for
all agents at once; jittable and vmappable). Roles follow the specialisation rules: the
miner makes the pickaxes and mines stone, coal, iron and diamonds (tunnelling through
stone), the warrior makes swords and fights, the forager drinks and hunts for the team.

1. Danger and teammates (`danger.py`): fight the zombie or skeleton faced; the nearest
   able agent walks to a downed teammate and revives it (DO); the nearest other agent
   joins one beside an elite, which takes full damage only from two hitters on one step.
2. Sleep when tired (beside the shelter when it is near; the wounded walk to it;
   `survival.py`); give a teammate what it requests when the giver can spare it
   (`sharing.py`).
3. Construction (`projects.py`): shelter, then forge, then beacon on the sites (the
   shelter on the site needing most builders, the iron buildings on those needing
   fewest; the miner clears a stone beside a site that lacks room), and once a forge
   stands, diamond swords. Builders and smiths are picked warrior, forager, then miner:
   the miner's ore reaches them by request and give from wherever it mines. Once the
   team holds a project's materials the members request what they lack, meet at the
   site while their health holds, and act on one step (sync, smiths) or one after the
   other (handover).
4. Drink and food (`survival.py`): the forager keeps its drink high as the team's supply
   and hunts (it eats cows in full); the others request drink and food and fetch their
   own only when nobody can spare any. Only the nearly spent put this before projects
   and rallies.
5. At night the team sleeps beside its shelter.
6. Task rallies (`rallies.py`): the cheapest coordination tile near the agents free of
   the above that the agents it needs (the quorum k of a sync, two for a handover) reach
   and can work with a fair chance of passing their role checks; they take its free
   sides and do DO on one step (sync), or one starts and another finishes (handover; the
   agent likelier to fail its role check starts, since it may retry until it passes).
7. Crafter progression (`workshop.py`) and gathering (`gathering.py`): pickaxes, a table
   and a furnace (placed where a furnace can join the table), swords; each agent fetches
   the nearest resource of its most pressing need (first tools, the current project, the
   iron pickaxe, later projects, some wood), leaving task tiles to rallies; the forager
   plants saplings; agents with nothing to do walk to the task tile they could work
   together, or explore.

Navigation (`navigation.py`): a distance field over the whole map per agent, relaxed
from the tiles beside its targets (a tunnel costs a DO and a step; lava, water and
teammates block); the agent steps down it, turns to the target and acts. Rallies weigh
walking distances within a window around each agent.

`team.py` reads the state once (`view.py`), asks each behaviour in turn and picks per
agent the first that applies (`goals.py`); the thresholds are in `tuning.py`.
"""

from alemlite.envs.craft.team_policy.team import BEHAVIOURS, team_actions, team_policy

__all__ = ["BEHAVIOURS", "team_actions", "team_policy"]
