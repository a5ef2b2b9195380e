"""Movement, sleep and survival counters against the plain-Python oracle."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from alemlite.envs.craft import constants as C
from alemlite.envs.craft import make_craft
from alemlite.envs.craft.coordination import constants as L
from tests.craft_helpers import blank_state, quiet_params
from tests.oracles.craft import Agent, CraftOracle

ENV = make_craft(map_size=16, num_agents=3, revive_window=4)
PARAMS = quiet_params(ENV)
STEP = jax.jit(ENV.step)
ORACLE_ACTIONS = [C.NOOP, C.MOVE_LEFT, C.MOVE_RIGHT, C.MOVE_UP, C.MOVE_DOWN, C.SLEEP]
TERRAIN = [C.GRASS] * 6 + [C.SAND, C.PATH, C.STONE, C.WATER, C.TREE, C.LAVA]
NUM_STEPS = 80


def random_start(rng: np.random.Generator):
    size = ENV.config.map_size
    world = rng.choice(TERRAIN, size=(size, size)).astype(np.uint8)
    cells = rng.choice(size * size, size=ENV.num_agents, replace=False)
    positions = np.stack([cells // size, cells % size], axis=1)
    world[positions[:, 0], positions[:, 1]] = C.GRASS
    facing = rng.integers(0, 4, ENV.num_agents)
    stats = rng.integers(0, C.STAT_MAX + 1, (ENV.num_agents, 4))
    stats[:, C.HEALTH] = rng.integers(1, 3, ENV.num_agents)  # low health: downs happen
    counters = np.stack(
        [
            rng.integers(0, C.HUNGER_LIMIT + 1, ENV.num_agents),
            rng.integers(0, C.THIRST_LIMIT + 1, ENV.num_agents),
            rng.integers(-10, C.FATIGUE_LIMIT + 1, ENV.num_agents),
            rng.integers(C.DEGEN_LIMIT + 8, C.RECOVER_LIMIT + 1, ENV.num_agents),
        ],
        axis=1,
    )
    state = blank_state(ENV, positions, facing)
    state = state.replace(
        map=jnp.asarray(world),
        agents=state.agents.replace(stats=jnp.asarray(stats), counters=jnp.asarray(counters)),
    )
    agents = []
    for index in range(ENV.num_agents):
        agent = Agent(positions[index], int(facing[index]), *(int(v) for v in stats[index]))
        agent.hunger, agent.thirst, agent.fatigue, agent.recover = (
            float(v) / C.HALF for v in counters[index]
        )
        agent.reserve = L.FORAGER_RESERVE_FACTOR if index % L.NUM_ROLES == L.FORAGER else 1
        agents.append(agent)
    return state, CraftOracle(world.tolist(), agents, revive_window=ENV.config.revive_window)


def oracle_view(oracle: CraftOracle):
    agents = oracle.agents
    return {
        "position": np.array([a.position for a in agents]),
        "facing": np.array([a.facing for a in agents]),
        "stats": np.array([[a.health, a.food, a.drink, a.energy] for a in agents]),
        "counters": np.array([[a.hunger, a.thirst, a.fatigue, a.recover] for a in agents]),
        "sleeping": np.array([a.sleeping for a in agents]),
        "status": np.array([a.status for a in agents]),
        "wake_up": np.array([a.woke_up for a in agents]),
    }


def jax_view(state):
    agents = jax.device_get(state.agents)
    return {
        "position": agents.position,
        "facing": agents.facing,
        "stats": agents.stats,
        "counters": agents.counters / C.HALF,
        "sleeping": agents.sleeping,
        "status": agents.status,
        "wake_up": agents.achievements[:, C.ACHIEVEMENT_INDEX["wake_up"]],
    }


@pytest.mark.parametrize("seed", range(8))
def test_random_action_sequences_match_the_oracle(seed):
    rng = np.random.default_rng(seed)
    state, oracle = random_start(rng)
    for step in range(NUM_STEPS):
        # Moves dominate, with some sleep so that sleeping rules are exercised.
        actions = rng.choice(
            ORACLE_ACTIONS, size=ENV.num_agents, p=[0.1, 0.18, 0.18, 0.18, 0.18, 0.18]
        )
        _, state, _, _, _ = STEP(jax.random.PRNGKey(step), state, jnp.asarray(actions), PARAMS)
        oracle.step([int(a) for a in actions])
        expected, actual = oracle_view(oracle), jax_view(state)
        for name in expected:
            np.testing.assert_array_equal(actual[name], expected[name], err_msg=f"{name} @ {step}")
