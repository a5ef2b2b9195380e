"""The shape of the Craft package: a base world that knows nothing of the coordination
layer, and a layer made of parts, each with its own switch."""

import ast
from pathlib import Path

import jax
import jax.numpy as jnp
import pytest

from alemlite.envs.craft import constants as C
from alemlite.envs.craft import make_craft
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.coordination.construction import first_build
from alemlite.envs.craft.coordination.layer import PARTS
from alemlite.envs.craft.coordination.signals import first_message
from alemlite.envs.craft.coordination.trading import first_give, first_request

CRAFT = Path(__file__).resolve().parents[1] / "alemlite" / "envs" / "craft"
# What the base world may import of the package: itself (its config included) and the
# world's constants; not the composed config, which holds the layer's options.
WORLD_MAY_IMPORT = ("alemlite.envs.craft.world",)
SWITCHES = {
    "Roles": {"specialisation": False},
    "Tasks": {"tasks": False},
    "Elites": {"elites": False},
    "Trading": {"trading": False},
    "Signals": {"num_message_tokens": 0},
    "Construction": {"construction": False},
}


def imports_of(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            found += [f"{node.module}.{alias.name}" for alias in node.names]
    return found


def test_the_world_imports_nothing_of_the_layer():
    modules = sorted((CRAFT / "world").glob("*.py"))
    assert len(modules) >= 12
    outside = [
        f"{path.name} imports {module}"
        for path in modules
        for module in imports_of(path)
        if module.startswith("alemlite.envs.craft")
        and not module.startswith(WORLD_MAY_IMPORT)
        and module != "alemlite.envs.craft.constants"
    ]
    assert outside == []
    # and no switch of the layer is read in the world or in the environment's step
    for path in [*modules, CRAFT / "env.py"]:
        assert "has_" not in path.read_text().replace("has_tool", ""), path.name


def test_the_parts_own_their_data():
    # The world knows its own materials, no blocks of the layer and no roles; the layer's
    # blocks take the codes after the world's, whichever parts are on.
    assert "site" not in C.MATERIALS and not hasattr(C, "ROLES")
    assert L.MATERIALS[: C.NUM_MATERIALS] == C.MATERIALS and L.MATERIALS[L.SITE] == "site"
    assert len(L.MATERIALS) <= C.MATERIAL_CODES == len(C.WALKABLE)
    # Roles write the role one-hot, with the layer off too; construction draws its blocks.
    plain = make_craft(map_size=16, coordination=False)
    assert plain.layer.parts == () and plain.layer.own_features == L.NUM_ROLES
    assert not plain.layer.material_sprites()[L.SITE].any()
    assert make_craft(map_size=16).layer.material_sprites()[L.SITE].any()


def test_the_config_chooses_the_parts_in_a_fixed_order():
    names = [kind.__name__ for kind in PARTS]
    assert names == list(SWITCHES)
    assert [type(part).__name__ for part in make_craft(map_size=16).layer.parts] == names
    assert make_craft(map_size=16, coordination=False).layer.parts == ()
    for name, switch in SWITCHES.items():
        parts = make_craft(map_size=16, **switch).layer.parts
        assert [type(part).__name__ for part in parts] == [n for n in names if n != name]


@pytest.mark.parametrize("switch", [{}, *SWITCHES.values()])
@pytest.mark.parametrize("num_agents", [1, 3])
def test_action_ids_follow_the_parts_order(switch, num_agents):
    env = make_craft(map_size=16, num_agents=num_agents, **switch)
    names, config = env.action_names, env.config
    assert names[: C.NUM_ACTIONS] == C.ACTIONS
    if config.has_trading:
        assert names[first_request(config)] == "request_food"
        if num_agents > 1:
            assert names[first_give(config)] == "give_to_1"
    if config.message_tokens:
        assert names[first_message(config)] == "message_0"
    if config.has_construction:
        assert names[first_build(config) :] == L.BUILD_ACTIONS
    assert jax.eval_shape(env.action_mask, *_shapes(env)).shape[-1] == len(names)


def _shapes(env):
    """The shapes of a state and the params, traced only (nothing compiles)."""
    state = jax.eval_shape(env.generate, jax.random.PRNGKey(0), env.default_params)
    return state, env.default_params


@pytest.mark.parametrize("name", list(SWITCHES))
def test_each_part_alone_traces_a_step(name):
    # Every part off but one (elites alone once failed to trace: its draws were the layer's).
    off = {
        key: value
        for other, switch in SWITCHES.items()
        if other != name
        for key, value in switch.items()
    }
    env = make_craft(map_size=16, **off)
    assert [type(part).__name__ for part in env.layer.parts] == [name]
    state, params = _shapes(env)
    actions = jnp.zeros((env.num_agents,), jnp.int32)
    obs, *_ = jax.eval_shape(env.step, jax.random.PRNGKey(0), state, actions, params)
    assert obs.shape == (env.num_agents, *env.observation_shape)
    assert jax.eval_shape(env.global_state, state, params).shape == env.global_state_shape
    metrics = jax.eval_shape(env.episode_metrics, state, params)
    assert "coordination_achievement_percent" in metrics
