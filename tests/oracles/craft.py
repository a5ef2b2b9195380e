"""Plain-Python Craft rules for movement, sleep and survival: the reference for the JAX world.

No JAX, no numpy: lists, loops and Crafter's own float counters (0.5 per sleeping
step), written to read like `crafter/objects.py` (Player) plus the Craft rules for
several agents: simultaneous moves where the lowest index wins a contested tile, an
agent never enters a tile occupied at the start of the step, lava kills, and health
0 downs an agent that dies after `revive_window` steps.

Actions covered: noop, the four moves and sleep (indices as in the Craft world).
"""

from __future__ import annotations

NOOP, MOVE_LEFT, MOVE_RIGHT, MOVE_UP, MOVE_DOWN, DO, SLEEP = range(7)
DIRECTIONS = [(0, -1), (0, 1), (-1, 0), (1, 0)]
GRASS, SAND, PATH, LAVA = 2, 5, 4, 7
ENTERABLE = {GRASS, SAND, PATH, LAVA}
ALIVE, DOWNED, DEAD = 0, 1, 2
MAX = 9


class Agent:
    def __init__(self, position, facing, health, food, drink, energy):
        self.position = tuple(position)
        self.facing = facing
        self.health, self.food, self.drink, self.energy = health, food, drink, energy
        self.hunger = self.thirst = self.fatigue = self.recover = 0.0
        self.sleeping = False
        self.status = ALIVE
        self.downed_timer = 0
        self.woke_up = False
        # Food and drink last `reserve` times longer (a forager, with specialisation on).
        self.reserve = 1


class CraftOracle:
    def __init__(self, world: list[list[int]], agents: list[Agent], revive_window: int = 30):
        self.world = world
        self.agents = agents
        self.revive_window = revive_window

    def material(self, position) -> int | None:
        row, col = position
        if 0 <= row < len(self.world) and 0 <= col < len(self.world[0]):
            return self.world[row][col]
        return None

    def step(self, actions: list[int]) -> None:
        health_before = [agent.health for agent in self.agents]
        actions = [
            a if agent.status == ALIVE else NOOP
            for a, agent in zip(actions, self.agents, strict=True)
        ]
        for index, agent in enumerate(self.agents):
            if agent.sleeping:
                if agent.energy < MAX:
                    actions[index] = NOOP
                else:
                    agent.sleeping = False
                    agent.woke_up = True
            if actions[index] == SLEEP and agent.energy < MAX:
                agent.sleeping = True
        self._move(actions)
        for agent in self.agents:
            if agent.status == ALIVE:
                self._life_stats(agent)
        for agent, before in zip(self.agents, health_before, strict=True):
            self._settle(agent, before)

    def _move(self, actions: list[int]) -> None:
        occupied = {a.position for a in self.agents if a.status != DEAD}
        claimed = set()
        moves = []
        for agent, action in zip(self.agents, actions, strict=True):
            if MOVE_LEFT <= action <= MOVE_DOWN:
                agent.facing = action - MOVE_LEFT
                d_row, d_col = DIRECTIONS[agent.facing]
                target = (agent.position[0] + d_row, agent.position[1] + d_col)
                enterable = self.material(target) in ENTERABLE and target not in occupied
                if enterable and target not in claimed:
                    claimed.add(target)
                    moves.append((agent, target))
        for agent, target in moves:
            agent.position = target
            if self.material(target) == LAVA:
                agent.health = 0
                agent.status = DEAD

    def _life_stats(self, agent: Agent) -> None:
        agent.hunger += 0.5 if agent.sleeping else 1
        if agent.hunger > 25 * agent.reserve:
            agent.hunger = 0
            agent.food = max(agent.food - 1, 0)
        agent.thirst += 0.5 if agent.sleeping else 1
        if agent.thirst > 20 * agent.reserve:
            agent.thirst = 0
            agent.drink = max(agent.drink - 1, 0)
        if agent.sleeping:
            agent.fatigue = min(agent.fatigue - 1, 0)
        else:
            agent.fatigue += 1
        if agent.fatigue < -10:
            agent.fatigue = 0
            agent.energy = min(agent.energy + 1, MAX)
        if agent.fatigue > 30:
            agent.fatigue = 0
            agent.energy = max(agent.energy - 1, 0)
        necessities = agent.food > 0 and agent.drink > 0 and (agent.energy > 0 or agent.sleeping)
        if necessities:
            agent.recover += 2 if agent.sleeping else 1
        else:
            agent.recover -= 0.5 if agent.sleeping else 1
        if agent.recover > 25:
            agent.recover = 0
            agent.health = min(agent.health + 1, MAX)
        if agent.recover < -15:
            agent.recover = 0
            agent.health = max(agent.health - 1, 0)

    def _settle(self, agent: Agent, health_before: int) -> None:
        if agent.health < health_before:
            agent.sleeping = False
        if agent.status == DOWNED:
            agent.downed_timer -= 1
            if agent.downed_timer < 0:
                agent.status = DEAD
                agent.downed_timer = 0
        elif agent.status == ALIVE and agent.health <= 0:
            agent.status = DOWNED
            agent.downed_timer = self.revive_window - 1
            if agent.downed_timer < 0:
                agent.status = DEAD
                agent.downed_timer = 0
        if agent.status != ALIVE:
            agent.sleeping = False
