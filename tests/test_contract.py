"""The contract every registered environment keeps (an "env is not a smoke" test).

Each environment runs once through reset, a short random rollout under jit and
vmap, every wrapper, and the checks below; then its spec is checked: options, scripted
policies, metrics, prompts and renderers. Every environment in the registry is tested
from its spec alone (its `small_options`, with a 6-step time limit), so a new
environment is covered without a line here.
"""

import dataclasses
import functools
import re
from collections.abc import Callable
from typing import Any

import chex
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import alemlite
from alemlite.core import ConfigError, JaxMARLAdapter, LogWrapper, VecEnv
from alemlite.core.prompting import PromptOptions

NUM_ENVS, NUM_STEPS, MAX_STEPS = 4, 8, 6
ENVIRONMENTS = alemlite.registered_environments()


def small_options(name: str):
    """The spec's small instance, with a time limit inside the rollout (auto-reset runs)."""
    spec = alemlite.spec(name)
    options = spec.options(**spec.small_options)
    return dataclasses.replace(options, max_steps=MAX_STEPS)


@dataclasses.dataclass(frozen=True)
class ContractProgram:
    """An environment's contract rollout as a reset and a step, left unjitted so that a
    test can run them with and without jit. They are built once per environment: jitting
    the same function again reuses its compiled program instead of compiling anew."""

    env: LogWrapper
    reset: Callable[[jax.Array], tuple[Any, Any]]
    step: Callable[[tuple[Any, Any], jax.Array], tuple[tuple[Any, Any], dict[str, Any]]]


@functools.cache
def contract_program(name: str) -> ContractProgram:
    """Random legal actions over NUM_ENVS vmapped copies of the small instance."""
    env = LogWrapper(alemlite.spec(name).build(small_options(name)))
    vec = VecEnv(env, num_envs=NUM_ENVS)
    params = env.default_params

    def reset(key: jax.Array) -> tuple[Any, Any]:
        return vec.reset(key, params)

    def step(carry: tuple[Any, Any], step_key: jax.Array):
        obs, state = carry
        action_key, env_key = jax.random.split(step_key)
        mask = vec.action_mask(state, params)
        actions = jax.random.categorical(action_key, jnp.where(mask, 0.0, -jnp.inf))
        obs, state, reward, done, info = vec.step(env_key, state, actions, params)
        record = {
            "obs": obs,
            "mask": mask,
            "actions": actions,
            "reward": reward,
            "done": done,
            "terminated": info["terminated"],
            "truncated": info["truncated"],
            "global_state": vec.global_state(state, params),
            "metrics": info["episode_metrics"],
        }
        return (obs, state), record

    return ContractProgram(env, reset, step)


@functools.cache
def first_state(name: str) -> Any:
    """The small instance's state after a reset from key 0, under jit: run eagerly, each
    operation of a reset compiles on its own (a Craft reset: over a hundred programs)."""
    env = contract_program(name).env.inner
    return jax.jit(env.reset)(jax.random.PRNGKey(0), env.default_params)[1]


def play(reset: Callable, step: Callable, seed: int) -> tuple[np.ndarray, dict[str, Any]]:
    """The observation after reset and the records of NUM_STEPS steps, stacked."""
    key = jax.random.PRNGKey(seed)
    carry = reset(key)
    obs, records = carry[0], []
    for step_key in jax.random.split(key, NUM_STEPS):
        carry, record = step(carry, step_key)
        records.append(record)
    return jax.device_get((obs, jax.tree.map(lambda *steps: np.stack(steps), *records)))


@pytest.fixture(scope="module", params=ENVIRONMENTS)
def rollout(request):
    """A jitted, vmapped rollout with random legal actions, run twice from one key."""
    program = contract_program(request.param)
    reset, step = jax.jit(program.reset), jax.jit(program.step)
    return program.env, play(reset, step, 0), play(reset, step, 0), play(reset, step, 1)


def test_shapes_and_dtypes(rollout):
    env, (obs, records), _, _ = rollout
    agents = env.num_agents
    assert obs.shape == (NUM_ENVS, agents, *env.observation_shape) and obs.dtype == np.float32
    assert records["reward"].shape == (NUM_STEPS, NUM_ENVS, agents)
    assert records["reward"].dtype == np.float32
    assert records["mask"].shape == (NUM_STEPS, NUM_ENVS, agents, env.num_actions)
    assert records["mask"].dtype == bool
    assert records["global_state"].shape == (NUM_STEPS, NUM_ENVS, *env.global_state_shape)
    for flag in ("done", "terminated", "truncated"):
        assert records[flag].shape == (NUM_STEPS, NUM_ENVS) and records[flag].dtype == bool
    assert len(env.action_names) == env.num_actions == len(set(env.action_names))


def test_masks_allow_an_action_and_sampled_actions_are_legal(rollout):
    _, (_, records), _, _ = rollout
    assert records["mask"].any(axis=-1).all()
    chosen = np.take_along_axis(records["mask"], records["actions"][..., None], axis=-1)
    assert chosen.all()


def test_done_is_terminated_or_truncated_never_both(rollout):
    _, (_, records), _, _ = rollout
    np.testing.assert_array_equal(records["done"], records["terminated"] | records["truncated"])
    assert not (records["terminated"] & records["truncated"]).any()
    # The small configs truncate within the rollout, so auto-reset is exercised.
    assert records["done"].any()


def test_values_are_finite(rollout):
    _, (obs, records), _, _ = rollout
    for name in ("obs", "reward", "global_state"):
        assert np.isfinite(records[name]).all(), name
    assert np.isfinite(obs).all()
    for name, values in records["metrics"].items():
        assert np.isfinite(np.asarray(values, dtype=np.float64)).all(), name


def test_deterministic_from_the_key(rollout):
    _, first, again, other = rollout
    chex.assert_trees_all_equal(first, again)
    leaves_first = jax.tree.leaves(first)
    leaves_other = jax.tree.leaves(other)
    assert any(not np.array_equal(a, b) for a, b in zip(leaves_first, leaves_other, strict=True))


# Without jit every operation compiles on its own and control flow (cond, scan) retraces
# on every call: Craft's rollout then takes minutes on two cores, the others seconds.
TOO_SLOW_WITHOUT_JIT = {"craft"}


class TestJitAndEager(chex.TestCase):
    """Stepped without jit, an environment's rollout equals the jitted one. The jitted
    variant jits the functions the fixture jitted, so it reuses their compiled programs."""

    @chex.variants(with_jit=True, without_jit=True)
    def test_the_rollout_is_the_same_with_and_without_jit(self):
        for name in sorted(set(ENVIRONMENTS) - TOO_SLOW_WITHOUT_JIT):
            program = contract_program(name)
            jitted = play(jax.jit(program.reset), jax.jit(program.step), 0)
            variant = play(self.variant(program.reset), self.variant(program.step), 0)
            # Fused and unfused float operations may round a last bit apart.
            chex.assert_trees_all_close(variant, jitted, rtol=1e-6, atol=1e-7)


def test_jaxmarl_adapter_round_trip(rollout):
    env = rollout[0].inner
    adapter = JaxMARLAdapter(env)
    obs, state = jax.jit(adapter.reset)(jax.random.PRNGKey(0))
    actions = {agent: jnp.int32(0) for agent in adapter.agents}
    obs, state, reward, dones, _ = jax.jit(adapter.step)(jax.random.PRNGKey(1), state, actions)
    assert set(obs) == set(reward) == set(adapter.agents)
    assert "__all__" in dones


# ---- the spec ------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ENVIRONMENTS)
def test_the_spec_describes_its_environment(name):
    spec = alemlite.spec(name)
    assert spec.name == name
    defaults = spec.options()
    fields = {field.name for field in dataclasses.fields(defaults)}
    assert {"num_agents", "max_steps"} <= fields  # every environment has seats and a limit
    assert spec.build(defaults).num_agents == defaults.num_agents
    assert re.fullmatch(r"[\w.-]+", small_options(name).label()), "labels name files"
    assert spec.default_policy in spec.policies
    assert set(spec.reference_policies) <= set(spec.policies)
    with pytest.raises(ConfigError, match="num_agents=0"):
        spec.options(num_agents=0)


def test_the_spec_metrics_are_episode_metrics(rollout):
    env, (_, records), _, _ = rollout
    spec = alemlite.spec(env.name)
    assert spec.metrics and set(spec.metrics) <= set(records["metrics"])


def test_every_scripted_policy_plays_action_ids(rollout):
    # Legality is not required: a policy may try a move the mask forbids (dining's
    # uniform_random does, and the env counts it as invalid), but never an unknown id.
    env = rollout[0].inner
    spec = alemlite.spec(env.name)
    params = env.default_params
    policies = [spec.policy(name, env) for name in spec.policies]
    key = jax.random.PRNGKey(3)
    _, state = jax.eval_shape(env.reset, key, params)
    for name, policy in zip(spec.policies, policies, strict=True):
        shown = jax.eval_shape(policy, key, state, params)  # traced, not compiled
        assert shown.shape == (env.num_agents,), name
        assert np.issubdtype(shown.dtype, np.integer), name

    # Every policy in one program (`lax.switch` on its index), so the environment's step
    # compiles once, not once per policy; the branches share one dtype, so ids become int32.
    def play(index, key):
        _, state = env.reset(key, params)

        def one_step(state, step_key):
            policy_key, env_key = jax.random.split(step_key)
            branches = [
                lambda k, s, p, policy=policy: policy(k, s, p).astype(jnp.int32)
                for policy in policies
            ]
            actions = jax.lax.switch(index, branches, policy_key, state, params)
            return env.step(env_key, state, actions, params)[1], actions

        return jax.lax.scan(one_step, state, jax.random.split(key, MAX_STEPS - 1))[1]

    played = jax.jit(play)
    for index, name in enumerate(spec.policies):
        actions = np.asarray(played(index, key))
        assert actions.shape == (MAX_STEPS - 1, env.num_agents), name
        assert ((actions >= 0) & (actions < env.num_actions)).all(), f"{env.name} policy {name}"


def test_the_prompt_builder_speaks_for_every_seat(rollout):
    env = rollout[0].inner
    spec = alemlite.spec(env.name)
    # Every world serves both MARL agents and language models.
    assert spec.prompts is not None, f"{env.name} declares no prompt builder"
    builder = spec.prompts(env)
    options = spec.prompt_defaults
    assert options.variant in builder.variants
    for variant in builder.variants:
        assert builder.system_prompt(dataclasses.replace(options, variant=variant)).strip()
    params = env.default_params
    state = first_state(env.name)
    batch = jax.tree.map(lambda leaf: leaf[None], jax.device_get(state))
    seats = np.arange(env.num_agents)
    texts = builder.observations(
        batch,
        params,
        np.zeros_like(seats),
        seats,
        np.full((1, env.num_agents), "", dtype=object),
        np.asarray(jax.jit(env.action_mask)(state, params))[None],
        PromptOptions(variant=options.variant),
    )
    assert len(texts) == env.num_agents and all(text.strip() for text in texts)


def test_the_renderers_draw_a_state(rollout):
    env = rollout[0].inner
    spec = alemlite.spec(env.name)
    assert spec.render_rgb is not None or spec.render_text is not None
    params = env.default_params
    state = first_state(env.name)
    if spec.render_rgb is not None:
        frame = np.asarray(jax.jit(lambda s: spec.render_rgb(env, s, params))(state))
        assert frame.ndim == 3 and frame.shape[-1] == 3 and frame.dtype == np.uint8
    if spec.render_text is not None:
        assert spec.render_text(env, jax.device_get(state), params).strip()
