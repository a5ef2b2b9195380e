"""Observations, action masks, rendering, configuration errors and the render command."""

import imageio.v3 as iio
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from alemlite import ConfigError, make, spec
from alemlite.envs.craft import constants as C
from alemlite.envs.craft import make_craft
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.world.observation import WINDOW_CHANNELS
from alemlite.envs.craft.world.rendering import TILE, render_map, render_views, write_gif
from tests.craft_helpers import blank_state, place_mob, quiet_params, set_inventory, set_tiles

ENV = make_craft(map_size=16, num_agents=3, coordination=False)
PARAMS = quiet_params(ENV)
HEIGHT, WIDTH = ENV.config.view_height, ENV.config.view_width
OBSERVE, MASK = jax.jit(ENV.observe), jax.jit(ENV.action_mask)


@pytest.fixture(scope="module")
def scene():
    """Agent 0 at (8, 8) with a cow at (7, 10), teammates at (8, 9) (downed) and (1, 1)."""
    state = blank_state(ENV, [[8, 8], [8, 9], [1, 1]])
    state = place_mob(state, ENV.config.num_mobs - 1, [7, 10])
    state = set_tiles(state, {(9, 7): C.TREE})
    status = state.agents.status.at[1].set(C.DOWNED)
    stats = state.agents.stats.at[1, C.HEALTH].set(0)
    return state.replace(agents=state.agents.replace(status=status, stats=stats))


def window(obs_row):
    return obs_row[: HEIGHT * WIDTH * WINDOW_CHANNELS].reshape(HEIGHT, WIDTH, WINDOW_CHANNELS)


def test_flat_window_shows_materials_mobs_and_teammates(scene):
    obs = np.asarray(OBSERVE(scene, PARAMS))
    assert obs.shape == (3, *ENV.observation_shape)
    view = window(obs[0])
    centre_row, centre_col = HEIGHT // 2, WIDTH // 2
    materials = view[..., : C.NUM_MATERIALS]
    np.testing.assert_array_equal(materials.sum(-1), 1.0)
    assert materials[centre_row + 1, centre_col - 1, C.TREE] == 1
    cow_channel = C.NUM_MATERIALS + C.COW
    assert view[centre_row - 1, centre_col + 2, cow_channel] == 1
    assert view[..., cow_channel].sum() == 1
    standing = C.NUM_MATERIALS + C.NUM_MOB_KINDS
    downed = standing + 1
    assert view[centre_row, centre_col + 1, downed] == 1 and view[..., standing].sum() == 0
    # Agent 2 at (1, 1) is out of agent 0's window; agent 0 sees its own tile empty.
    corner = window(obs[2])  # agent 2 sits near the corner: tiles outside the map
    assert corner[0, 0, C.OUT_OF_BOUNDS] == 1


def test_flat_features_describe_self_and_teammates(scene):
    state = set_inventory(scene, 0, wood=9)
    obs = np.asarray(OBSERVE(state, PARAMS))
    features = obs[0, HEIGHT * WIDTH * WINDOW_CHANNELS :]
    assert features.shape == (ENV.num_features,)
    np.testing.assert_allclose(features[:4], 1.0)  # full stats
    assert features[4 + C.INV_WOOD] == 1.0
    teammates = features[-10:].reshape(2, 5)
    np.testing.assert_allclose(teammates[0], [0.0, 1 / 16, 0.0, 1.0, 0.0])  # agent 1, downed
    np.testing.assert_allclose(teammates[1], [-7 / 16, -7 / 16, 1.0, 0.0, 0.0])


def test_image_layout_has_the_same_content():
    image_env = make_craft(map_size=16, num_agents=3, observation="image", coordination=False)
    state = blank_state(image_env, [[8, 8], [8, 9], [1, 1]])
    flat = np.asarray(OBSERVE(state, PARAMS))
    image = np.asarray(jax.jit(image_env.observe)(state, PARAMS))
    assert image.shape == (3, *image_env.observation_shape)
    assert image_env.observation_shape == (
        HEIGHT,
        WIDTH,
        WINDOW_CHANNELS + ENV.num_features,
    )
    np.testing.assert_array_equal(
        image[..., :WINDOW_CHANNELS].reshape(3, -1), flat[:, : HEIGHT * WIDTH * WINDOW_CHANNELS]
    )
    np.testing.assert_array_equal(
        image[:, 3, 4, WINDOW_CHANNELS:], flat[:, HEIGHT * WIDTH * WINDOW_CHANNELS :]
    )


def test_masks_and_global_state(scene):
    mask = np.asarray(MASK(scene, PARAMS))
    assert mask.shape == (3, C.NUM_ACTIONS)
    assert mask[1].tolist() == [True] + [False] * (C.NUM_ACTIONS - 1)  # downed: noop only
    assert mask[0, C.DO] and not mask[0, C.SLEEP]  # full energy: no sleep
    assert not mask[0, C.PLACE_TABLE] and not mask[0, C.MAKE_WOOD_PICKAXE]
    with_wood = set_inventory(scene, 0, wood=1)
    assert bool(MASK(with_wood, PARAMS)[0, C.PLACE_TABLE])
    assert jax.eval_shape(ENV.global_state, scene, PARAMS).shape == ENV.global_state_shape


def test_frames_of_the_map_and_views(scene, tmp_path):
    frame = np.asarray(jax.jit(render_map, static_argnums=0)(ENV.config, scene, PARAMS))
    assert frame.shape == (16 * TILE, 16 * TILE, 3) and frame.dtype == np.uint8
    views = np.asarray(jax.jit(render_views, static_argnums=0)(ENV.config, scene, PARAMS))
    assert views.shape == (3, HEIGHT * TILE, WIDTH * TILE, 3)
    # The centre of agent 0's view shows agent 0, as the map does at its tile.
    centre = views[0, (HEIGHT // 2) * TILE + 4, (WIDTH // 2) * TILE + 4]
    np.testing.assert_array_equal(centre, frame[8 * TILE + 4, 8 * TILE + 4])
    path = write_gif(np.stack([frame, 255 - frame]), tmp_path / "two.gif")
    assert iio.imread(path).shape[0] == 2


@pytest.mark.parametrize(
    "config, named",
    [
        ({"num_agents": 9}, "num_agents=9"),
        ({"map_size": 8}, "map_size=8"),
        ({"view_width": 4}, "view_width=4"),
        ({"observation": "pixels"}, "observation='pixels'"),
        ({"arrow_slots": 0}, "arrow_slots=0"),
    ],
)
def test_invalid_config_fails_with_a_named_value(config, named):
    with pytest.raises(ConfigError, match=named.replace("(", r"\(")):
        make("craft", **config)


def test_contract_config_builds():
    env = make("craft", map_size=16, num_agents=2)
    obs, state = jax.jit(env.reset)(jax.random.PRNGKey(0), env.default_params)
    assert obs.shape == (2, *env.observation_shape)
    assert jnp.all(state.agents.status == C.ALIVE)


@pytest.mark.parametrize("num_agents", [1, 8])
def test_extreme_team_sizes_step(num_agents):
    env = make_craft(map_size=16, num_agents=num_agents)
    params = env.default_params

    def reset_and_step(key):
        _, state = env.reset(key, params)
        actions = jnp.full((num_agents,), C.MOVE_LEFT, jnp.int32)
        return env.step(key, state, actions, params)

    obs, state, reward, done, _ = jax.jit(reset_and_step)(jax.random.PRNGKey(0))
    assert obs.shape == (num_agents, *env.observation_shape)
    assert reward.shape == (num_agents,) and not bool(done)
    positions = {tuple(p) for p in np.asarray(state.agents.position)}
    assert len(positions) == num_agents


# ---- the symbolic observation (obs_encoding="symbolic", alemlite/envs/craft/symbolic.py) ----
# One compiled rollout per case: random actions, and at every step the dense and the symbolic
# observation of the state with its entities and coordination tables shuffled (mobs and arrows
# moved into agent 0's view, teammates downed or dead, elites, started handovers on task
# tiles, sites built or started), so that every id occurs within a short rollout.
ROLLOUT_STEPS, ROLLOUT_ENVS = 24, 6
# XLA's backend optimisations off: the rollout compiles in about half the time.
QUICK_COMPILE = {"xla_backend_optimization_level": 0}
SYMBOLIC_CASES = {
    "layer": {"num_agents": 3, "map_size": 16, "difficulty": "easy"},
    "plain": {"num_agents": 2, "map_size": 16, "coordination": False},
}


def shuffle_scene(env, state, key):
    """Mobs and arrows on distinct tiles of agent 0's view, random teammate status, random
    elites, three started handovers on task tiles and random site progress."""
    config = env.config
    keys = jax.random.split(key, 11)
    rows, cols = np.meshgrid(
        np.arange(config.view_height) - config.view_height // 2,
        np.arange(config.view_width) - config.view_width // 2,
        indexing="ij",
    )
    offsets = jnp.asarray(np.stack([rows.ravel(), cols.ravel()], -1))

    def scatter(table, entity_key, alive_key):
        tiles = jax.random.permutation(entity_key, offsets)[: table.alive.shape[0]]
        position = state.agents.position[0] + tiles
        return table.replace(
            position=position.astype(table.position.dtype),
            alive=jax.random.bernoulli(alive_key, 0.7, table.alive.shape),
        )

    status = jax.random.choice(
        keys[6], jnp.array([C.ALIVE, C.ALIVE, C.DOWNED, C.DEAD]), (config.num_agents,)
    )
    state = state.replace(
        mobs=scatter(state.mobs, keys[7], keys[8]),
        arrows=scatter(state.arrows, keys[9], keys[10]),
        agents=state.agents.replace(
            status=state.agents.status.at[1:].set(status[1:].astype(state.agents.status.dtype))
        ),
    )
    coordination, sites = state.coordination, state.coordination.sites
    elite = jax.random.randint(keys[0], coordination.mob_elite.shape, 0, len(L.ELITE_KINDS))
    slots = sites.task.shape[0]
    building = jax.random.randint(keys[1], (slots,), -1, L.NUM_BUILDINGS)
    handover = (sites.task.astype(jnp.int32) & 3) == L.TASK_HANDOVER
    pending = jnp.where((building < 0) & handover, jax.random.randint(keys[2], (slots,), -1, 3), -1)
    site_timer = jnp.where(pending >= 0, jax.random.randint(keys[3], (slots,), 1, 25), 0)
    # Started handovers go to distinct task tiles, never a site's tile.
    size = config.map_size
    at_site = (
        jnp.zeros((size, size), bool)
        .at[sites.position[:, 0], sites.position[:, 1]]
        .max(sites.task > 0)
    )
    score = jax.random.uniform(keys[4], (size, size)) + 2.0 * (coordination.tile_task > 0)
    score = jnp.where(at_site, -1.0, score).reshape(-1)
    chosen = jnp.argsort(-score)[:3]
    task_slots = coordination.task_starter.shape[0]
    starter = (
        jnp.full((task_slots,), -1, jnp.int8)
        .at[:3]
        .set(jax.random.randint(keys[5], (3,), 0, config.num_agents).astype(jnp.int8))
    )
    timer = (
        jnp.zeros((task_slots,), jnp.int16)
        .at[:3]
        .set(jax.random.randint(keys[5], (3,), 1, 25).astype(jnp.int16))
    )
    position = (
        jnp.zeros((task_slots, 2), jnp.int16)
        .at[:3]
        .set(jnp.stack([chosen // size, chosen % size], -1).astype(jnp.int16))
    )
    return state.replace(
        coordination=coordination.replace(
            mob_elite=elite.astype(jnp.int8) if config.has_elites else coordination.mob_elite,
            task_starter=starter if config.has_tasks else coordination.task_starter,
            task_timer=timer if config.has_tasks else coordination.task_timer,
            task_position=position if config.has_tasks else coordination.task_position,
            sites=sites.replace(
                building=building.astype(jnp.int8),
                pending=pending.astype(jnp.int8),
                timer=site_timer.astype(jnp.int16),
            )
            if config.has_construction
            else sites,
        )
    )


@pytest.fixture(scope="module", params=list(SYMBOLIC_CASES))
def symbolic_rollout(request):
    """`(env, dense, symbolic, spaces)`: both observations of the same states."""
    env = make_craft(**SYMBOLIC_CASES[request.param], obs_encoding="symbolic")
    params = env.default_params

    def episode(key):
        observation, state = env.reset(key, params)

        def one(state, key):
            action_key, step_key, shuffle_key = jax.random.split(key, 3)
            mask = env.action_mask(state, params)
            actions = jax.random.categorical(action_key, jnp.where(mask, 0.0, -1e9))
            _, state, _, _, _ = env.step(step_key, state, actions, params)
            seen = shuffle_scene(env, state, shuffle_key)
            return state, (env.dense_observation(seen, params), env.observe(seen, params))

        _, trace = jax.lax.scan(one, state, jax.random.split(key, ROLLOUT_STEPS))
        return observation, trace

    keys = jax.random.split(jax.random.PRNGKey(3), ROLLOUT_ENVS)
    rollout = jax.jit(jax.vmap(episode)).lower(keys).compile(compiler_options=QUICK_COMPILE)
    first, (dense, symbolic) = rollout(keys)
    return env, np.asarray(dense), np.asarray(symbolic), np.asarray(first)


def decode(env, symbolic: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Dense window channels `(..., H, W, C)` and features back from symbolic observations."""
    config, layout = env.config, env.symbolic
    height, width, layers = config.view_height, config.view_width, len(layout.names)
    agents = config.num_agents
    ids = symbolic[..., : height * width * layers].reshape(*symbolic.shape[:-1], height, width, -1)
    ids = ids.astype(np.int64) - layout.offsets
    features = symbolic[..., height * width * layers :]
    layer = {name: ids[..., index] for index, name in enumerate(layout.names)}

    def one_hot(values, count):
        return (values[..., None] == np.arange(count)).astype(np.float32)

    mob = layer["mob"]
    kind, elite = (mob - 1) // 3, (mob - 1) % 3
    mobs = one_hot(np.where(mob > 0, kind, -1), 3)
    sleeping = features[..., 4 + C.NUM_ITEMS, None, None]
    daylight = features[..., 4 + C.NUM_ITEMS + 1 + len(C.DIRECTIONS) + L.NUM_ROLES, None, None]
    lit = layer.get("lit", np.zeros_like(mob))
    darkness = np.where(sleeping == 1, 1.0, np.where(lit == 1, 0.0, 1.0 - daylight))
    planes = [
        one_hot(layer["material"], C.NUM_MATERIALS),
        mobs,
        (layer["arrow"] == 1)[..., None],
        one_hot(layer["teammate"] - 1, 2),
        darkness[..., None],
    ]
    site = layer.get("site", np.zeros_like(mob))
    pending_site = (site >= agents + 2) & (site < agents + 2 + L.NUM_BUILDINGS)
    left = layer.get("window", np.zeros_like(mob)) / 24.0
    if config.has_tasks:
        task = layer["task"]
        soft = (task >= 2) & (task <= agents + 1)
        hard = task >= agents + 2
        quorum = np.where(soft, task - 1, np.where(hard, task - 1 - agents, 0)) / agents
        planes += [
            np.stack([task == 1, soft, hard], -1),
            quorum[..., None],
            np.where(pending_site, 0.0, left)[..., None],
        ]
    if config.has_elites:
        planes.append(np.stack([(mob > 0) & (elite == 1), (mob > 0) & (elite == 2)], -1))
    if config.has_construction:
        sync = (site >= 1) & (site <= agents)
        built = site - (agents + 2 + L.NUM_BUILDINGS)
        planes += [
            np.stack([sync, (site == agents + 1) | pending_site], -1),
            np.where(sync, site / agents, 0.0)[..., None],
            one_hot(np.where(site >= agents + 2 + L.NUM_BUILDINGS, built, -1), L.NUM_BUILDINGS),
            one_hot(np.where(pending_site, site - agents - 2, -1), L.NUM_BUILDINGS)
            * left[..., None],
        ]
    window = np.concatenate([plane.astype(np.float32) for plane in planes], axis=-1)
    return window, features


def test_symbolic_observation_is_ids_in_their_ranges_and_the_dense_features(symbolic_rollout):
    env, dense, symbolic, first = symbolic_rollout
    config, layout = env.config, env.symbolic
    height, width = config.view_height, config.view_width
    space = env.observation_space
    assert list(space) == ["tiles", "features"]
    tiles, features = space["tiles"], space["features"]
    assert tiles.shape == (height, width, len(layout.names))
    assert jnp.issubdtype(tiles.dtype, jnp.integer) and tiles.low == 0
    assert tiles.high == layout.vocabulary - 1 and features.shape == (env.num_features,)
    assert env.observation_shape == (int(np.prod(tiles.shape)) + env.num_features,)
    assert symbolic.shape[-1] == env.observation_shape[0] and symbolic.dtype == np.float32
    assert first.shape[-1] == env.observation_shape[0]
    ids = symbolic[..., : np.prod(tiles.shape)].reshape(*symbolic.shape[:-1], *tiles.shape)
    np.testing.assert_array_equal(ids, np.round(ids))
    for index, (name, size) in enumerate(zip(layout.names, layout.sizes, strict=True)):
        own = ids[..., index] - layout.offsets[index]
        assert own.min() >= 0 and own.max() < size, name
    # Every id of the entity layers occurs, and several of every other layer, so that the
    # comparison with the dense window below is not vacuous.
    for index, (name, size) in enumerate(zip(layout.names, layout.sizes, strict=True)):
        seen = np.unique(ids[..., index] - layout.offsets[index])
        if name in ("mob", "arrow", "teammate", "lit") and (config.has_elites or name != "mob"):
            assert len(seen) == size, (name, seen)
        assert len(seen) >= min(size, 4), (name, seen)
    np.testing.assert_array_equal(
        symbolic[..., np.prod(tiles.shape) :], dense[..., height * width * env.window_channels :]
    )


def test_symbolic_tiles_decode_to_the_dense_window(symbolic_rollout):
    env, dense, symbolic, _ = symbolic_rollout
    config = env.config
    height, width = config.view_height, config.view_width
    window, _ = decode(env, symbolic)
    expected = dense[..., : height * width * env.window_channels].reshape(window.shape)
    np.testing.assert_allclose(window, expected, atol=1e-6)


def test_symbolic_is_chosen_by_option_and_the_default_stays_dense():
    assert make_craft(map_size=16).config.obs_encoding == "dense"
    options = spec("craft").options(map_size=16, obs_encoding="symbolic")
    env = spec("craft").build(options)
    assert env.config.obs_encoding == "symbolic"
    # Runs of the two encodings get their own default folders.
    assert options.label() == "3_16_medium_symbolic"
    assert spec("craft").options(map_size=16).label() == "3_16_medium"
    assert env.global_state_shape == make_craft(map_size=16).global_state_shape
    with pytest.raises(ConfigError, match="obs_encoding='ids' must be one of"):
        make("craft", obs_encoding="ids")
    with pytest.raises(ConfigError, match="pass observation='flat' with obs_encoding='symbolic'"):
        make("craft", obs_encoding="symbolic", observation="image")
