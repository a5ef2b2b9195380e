"""Observations, action masks, rendering, configuration errors and the render command."""

import imageio.v3 as iio
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from alemlite import ConfigError, make
from alemlite.envs.craft import constants as C
from alemlite.envs.craft import make_craft
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
    materials = view[..., : C.NUM_BASE_MATERIALS]
    np.testing.assert_array_equal(materials.sum(-1), 1.0)
    assert materials[centre_row + 1, centre_col - 1, C.TREE] == 1
    cow_channel = C.NUM_BASE_MATERIALS + C.COW
    assert view[centre_row - 1, centre_col + 2, cow_channel] == 1
    assert view[..., cow_channel].sum() == 1
    standing = C.NUM_BASE_MATERIALS + C.NUM_MOB_KINDS
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
