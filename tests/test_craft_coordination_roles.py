"""Difficulty, roles, trading, messages, switches and state size of the coordination layer."""

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import alemlite
from alemlite.core import ConfigError
from alemlite.envs.craft import constants as C
from alemlite.envs.craft import make_craft
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination.signals import first_message
from alemlite.envs.craft.coordination.trading import first_give, first_request
from alemlite.envs.craft.world.observation import OWN_FEATURES, TEAMMATE_FEATURES
from alemlite.envs.craft.world.state import state_nbytes
from tests.craft_coordination_helpers import (
    ENV,
    MANY_STEPS,
    MASK,
    OBSERVE,
    PARAMS,
    RESET,
    STEP,
    quiet_scene,
)
from tests.craft_helpers import place_mob, set_inventory, set_tiles

LEFT, RIGHT, UP, DOWN = range(4)
WARRIOR, FORAGER, MINER = 0, 1, 2


def scene(alpha=0.9):
    """Agents in a row at (5, 5), (8, 5), (11, 5), each facing right; no tasks."""
    return quiet_scene([[5, 5], [8, 5], [11, 5]], facing=[RIGHT] * 3, alpha=alpha)


def act(state, actions, params=PARAMS, key=0):
    _, state, reward, _, _ = STEP(jax.random.PRNGKey(key), state, jnp.array(actions), params)
    return state, np.asarray(reward)


def test_difficulty_presets_and_errors():
    for name, alpha in L.DIFFICULTY_PRESETS.items():
        env = alemlite.make("craft", map_size=16, difficulty=name)
        assert float(env.default_params.alpha) == pytest.approx(alpha)
    assert float(make_craft(map_size=16, difficulty=0.45).default_params.alpha) == pytest.approx(
        0.45
    )
    with pytest.raises(ConfigError, match="difficulty='brutal'"):
        make_craft(difficulty="brutal")


def test_sampled_alpha_is_drawn_per_episode_within_its_range():
    assert bool(make_craft(map_size=16, difficulty="sampled").default_params.sample_alpha)
    sampled = PARAMS.replace(sample_alpha=jnp.bool_(True))
    alpha = np.array(
        [float(RESET(jax.random.PRNGKey(i), sampled)[1].coordination.alpha) for i in range(40)]
    )
    assert alpha.min() >= 0.2 and alpha.max() <= 0.85 and alpha.std() > 0.1
    assert float(RESET(jax.random.PRNGKey(0), PARAMS)[1].coordination.alpha) == pytest.approx(0.9)


def test_a_non_specialist_succeeds_about_one_minus_alpha_of_the_time():
    state = set_tiles(scene(), {(5, 6): C.STONE, (11, 6): C.STONE})
    state = set_inventory(set_inventory(state, WARRIOR, wood_pickaxe=1), MINER, wood_pickaxe=1)
    keys = jax.random.split(jax.random.PRNGKey(3), 1000)
    actions = jnp.array([C.DO, C.NOOP, C.DO])
    after = MANY_STEPS(keys, state, actions, PARAMS)[1]
    stone = np.asarray(after.agents.inventory[:, :, C.INV_STONE])
    assert 0.07 < stone[:, WARRIOR].mean() < 0.13  # 1 - 0.9; sd 0.0095 over 1000 draws
    assert np.all(stone[:, MINER] == 1)  # a specialist always succeeds
    hard = MANY_STEPS(keys, state, actions, PARAMS.replace(hard_specialisation=jnp.bool_(True)))[1]
    assert not np.asarray(hard.agents.inventory[:, WARRIOR, C.INV_STONE]).any()


def test_hard_specialisation_masks_gated_making():
    state = set_tiles(scene(), {(4, 5): C.TABLE, (7, 5): C.TABLE, (10, 5): C.TABLE})
    for agent in range(3):
        state = set_inventory(state, agent, wood=2)
    mask = np.asarray(MASK(state, PARAMS.replace(hard_specialisation=jnp.bool_(True))))
    assert mask[:, C.MAKE_WOOD_PICKAXE].tolist() == [False, False, True]
    assert mask[:, C.MAKE_WOOD_SWORD].tolist() == [True, False, False]
    assert np.asarray(MASK(state, PARAMS))[:, C.MAKE_WOOD_PICKAXE].all()


def test_warriors_hit_twice_as_hard_and_non_foragers_eat_half():
    state = place_mob(scene(), 0, [5, 6], health=5)  # a zombie in front of the warrior
    after, _ = act(state, [C.DO, C.NOOP, C.NOOP])
    assert int(after.mobs.health[0]) == 5 - 2
    cow = ENV.config.zombie_slots + ENV.config.skeleton_slots
    state = place_mob(place_mob(scene(), cow, [5, 6], health=1), cow + 1, [8, 6], health=1)
    state = state.replace(
        agents=state.agents.replace(stats=state.agents.stats.at[:, C.FOOD].set(1))
    )
    after, _ = act(state, [C.DO, C.DO, C.NOOP])
    assert np.asarray(after.agents.stats[:, C.FOOD]).tolist() == [1 + 3, 1 + 6, 1]


def test_a_give_without_an_open_request_does_nothing():
    state = set_inventory(scene(), WARRIOR, wood=2)
    give_to_next = first_give(ENV.config)  # agent 0's first teammate is agent 1
    assert not bool(MASK(state, PARAMS)[WARRIOR, give_to_next])
    after, _ = act(state, [give_to_next, C.NOOP, C.NOOP])
    assert np.asarray(after.agents.inventory[:, C.INV_WOOD]).tolist() == [2, 0, 0]
    assert int(after.coordination.gives) == 0


def test_a_request_is_served_by_a_give_and_then_closes():
    request_wood = first_request(ENV.config) + L.REQUEST_RESOURCES.index("wood")
    state, _ = act(set_inventory(scene(), WARRIOR, wood=2), [C.NOOP, request_wood, C.NOOP])
    assert int(state.coordination.request_item[FORAGER]) == L.REQUEST_RESOURCES.index("wood")
    give_to_next = first_give(ENV.config)
    assert bool(MASK(state, PARAMS)[WARRIOR, give_to_next])
    state, reward = act(state, [give_to_next, C.NOOP, C.NOOP])
    assert np.asarray(state.agents.inventory[:, C.INV_WOOD]).tolist() == [1, 1, 0]
    assert int(state.coordination.gives) == 1 and int(state.coordination.request_item[1]) == -1
    np.testing.assert_allclose(reward, [2.0, 2.0, 0.0])  # give_item for both
    far = PARAMS.replace(give_range=jnp.int32(2))  # agents stand 3 apart
    state, _ = act(set_inventory(scene(), WARRIOR, wood=2), [C.NOOP, request_wood, C.NOOP])
    assert not bool(MASK(state, far)[WARRIOR, give_to_next])


def test_requests_expire():
    request_food = first_request(ENV.config)
    state, _ = act(scene(), [request_food, C.NOOP, C.NOOP])
    for _ in range(L.REQUEST_DURATION - 1):
        state, _ = act(state, [C.NOOP] * 3)
    assert int(state.coordination.request_item[0]) == 0
    state, _ = act(state, [C.NOOP] * 3)
    assert int(state.coordination.request_item[0]) == -1


def test_teammates_see_the_last_message_token():
    message = first_message(ENV.config) + 2
    state, _ = act(scene(), [message, C.NOOP, C.NOOP])
    assert np.asarray(state.coordination.last_message).tolist() == [2, -1, -1]
    features = np.asarray(OBSERVE(state, PARAMS))[:, -ENV.num_features :]
    own = OWN_FEATURES + L.NUM_ROLES + 2  # + role, alpha, diamond sword
    per_mate = TEAMMATE_FEATURES + L.NUM_REQUEST_RESOURCES + ENV.config.num_message_tokens
    # Agent 2's first teammate is agent 0; its message one-hot closes that block.
    block = features[2, own : own + per_mate]
    assert block[-ENV.config.num_message_tokens :].tolist() == [0, 0, 1, 0]


def test_a_batch_mixing_alphas_equals_separate_environments():
    alphas = (0.3, 0.9)
    params = [PARAMS.replace(alpha=jnp.float32(alpha)) for alpha in alphas]
    keys = jax.random.split(jax.random.PRNGKey(5), 2)
    separate = [RESET(key, one)[1] for key, one in zip(keys, params, strict=True)]
    # Stacked and indexed on the host: eagerly, each leaf's stack or index compiles alone.
    stack = lambda trees: jax.tree.map(lambda *leaves: np.stack(leaves), *jax.device_get(trees))  # noqa: E731
    batched, states = stack(params), stack(separate)
    step = jax.jit(jax.vmap(ENV.step))
    actions = jax.random.randint(jax.random.PRNGKey(6), (12, 2, 3), 0, ENV.num_actions)
    for t in range(12):
        step_keys = jax.random.split(jax.random.PRNGKey(100 + t), 2)
        _, states, reward, _, _ = step(step_keys, states, actions[t], batched)
        for i in range(2):
            _, separate[i], alone, _, _ = STEP(step_keys[i], separate[i], actions[t, i], params[i])
            np.testing.assert_array_equal(np.asarray(alone), np.asarray(reward[i]))
    for i in range(2):
        jax.tree.map(
            np.testing.assert_array_equal,
            separate[i],
            jax.tree.map(lambda leaf, i=i: leaf[i], jax.device_get(states)),
        )
    assert np.asarray(states.coordination.alpha).tolist() == pytest.approx(list(alphas))


def test_every_part_off_is_the_base_world():
    base = make_craft(map_size=16, num_agents=2, coordination=False)
    parts_off = make_craft(
        map_size=16, num_agents=2, specialisation=False, tasks=False, elites=False, trading=False,
        construction=False, num_message_tokens=0,
    )  # fmt: skip
    assert base.action_names == parts_off.action_names == C.ACTIONS
    assert base.observation_shape == parts_off.observation_shape

    def rollout(env, key, steps=40):
        """Random legal actions; one compiled step per environment, no scan to compile."""
        params, step, mask = env.default_params, jax.jit(env.step), jax.jit(env.action_mask)
        _, state = jax.jit(env.reset)(key, params)
        trace = []
        for step_key in jax.random.split(key, steps):
            action_key, env_key = jax.random.split(step_key)
            logits = jnp.where(mask(state, params), 0.0, -jnp.inf)
            actions = jax.random.categorical(action_key, logits)
            obs, state, reward, done, _ = step(env_key, state, actions, params)
            trace.append(jax.device_get((obs, reward, done, state.agents, state.map, state.mobs)))
        return trace

    first = rollout(base, jax.random.PRNGKey(2))
    second = rollout(parts_off, jax.random.PRNGKey(2))
    chex.assert_trees_all_equal(first, second)
    assert not np.array_equal(first[0][3].position, first[-1][3].position)  # it moved


def test_state_with_the_whole_layer_fits_in_16_kib():
    env = make_craft(num_agents=3, map_size=48)
    shapes = jax.eval_shape(env.reset, jax.random.PRNGKey(0), env.default_params)[1]
    nbytes = sum(np.prod(leaf.shape) * leaf.dtype.itemsize for leaf in jax.tree.leaves(shapes))
    assert nbytes <= 16 * 1024
    assert state_nbytes(RESET(jax.random.PRNGKey(0), PARAMS)[1]) <= 16 * 1024


def elite_scene(kind: int, health: int = 10):
    """An elite zombie of `kind` at (5, 6): agent 0 left of it, agent 2 right of it."""
    state = quiet_scene([[5, 5], [8, 5], [5, 7]], facing=[RIGHT, RIGHT, LEFT])
    state = place_mob(set_tiles(state, {(4, 6): C.STONE, (6, 6): C.STONE}), 0, [5, 6], health)
    elite = state.coordination.mob_elite.at[0].set(kind)
    return state.replace(coordination=state.coordination.replace(mob_elite=elite))


def test_a_hard_elite_takes_no_damage_from_one_attacker_and_double_from_two():
    state = elite_scene(L.ELITE_HARD)
    alone, _ = act(state, [C.DO, C.NOOP, C.NOOP])  # the warrior alone: 2 -> 0
    assert int(alone.mobs.health[0]) == 10
    together, _ = act(state, [C.DO, C.NOOP, C.DO])  # (2 + 1) doubled
    assert int(together.mobs.health[0]) == 10 - 6


def test_a_soft_elite_takes_half_damage_alone_and_its_killers_are_credited():
    state = elite_scene(L.ELITE_SOFT)
    alone, _ = act(state, [C.DO, C.NOOP, C.NOOP])
    assert int(alone.mobs.health[0]) == 10 - 1
    state = elite_scene(L.ELITE_SOFT, health=6)
    killed, reward = act(state, [C.DO, C.NOOP, C.DO])
    assert not bool(killed.mobs.alive[0])
    unlocked = np.asarray(killed.coordination.achievements[:, L.COORDINATION_INDEX["defeat_elite"]])
    assert unlocked.tolist() == [True, False, True]
    np.testing.assert_allclose(reward, [1.0 + 2.0, 0.0, 1.0 + 2.0])  # defeat_zombie + elite


def test_mobs_get_an_elite_kind_and_elite_health_at_generation():
    states = [RESET(jax.random.PRNGKey(i), PARAMS)[1] for i in range(120)]
    cows = ENV.config.mob_kinds() == C.COW
    elite = np.concatenate([np.asarray(s.coordination.mob_elite)[cows] for s in states])
    alive = np.concatenate([np.asarray(s.mobs.alive)[cows] for s in states])
    health = np.concatenate([np.asarray(s.mobs.health)[cows] for s in states])
    large = (elite != L.ELITE_NONE)[alive]
    assert alive.sum() > 200 and 0.12 < large.mean() < 0.28  # large cows: probability 0.2
    assert np.all(health[alive][large] == 2 * C.COW_HEALTH)
    assert np.all(health[alive][~large] == C.COW_HEALTH)
