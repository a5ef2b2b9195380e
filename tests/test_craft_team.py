"""The scripted coordinating team (`POLICIES["team"]`) over short episodes and on scenes.

One compiled program serves every check: it plays a batch of episodes, each from a fresh
world or a given start state, with its own parameters (difficulty and building shares
are dynamic), by the team or by the uniform-random team, and returns the episode
metrics, whether every action was legal, and the start states. Episodes are short and
maps small, so iron and diamonds are scarce: the "every building kind" check uses
iron-free building shares (a dynamic parameter), and revives and diamond swords are
checked on arranged scenes.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from alemlite.envs.craft import constants as C
from alemlite.envs.craft import make_craft
from alemlite.envs.craft.coordination import constants as L
from alemlite.envs.craft.policies import random_policy, team_policy
from alemlite.evaluation import episode_keys, step_keys

ENV = make_craft(map_size=24, num_agents=3, max_steps=300)
STEPS = 300
EPISODES = 6  # per difficulty
DIFFICULTIES = ("easy", "medium", "hard")
BATCH = EPISODES * len(DIFFICULTIES)
# Every building for 1 wood + 1 stone per builder: no iron needed.
IRON_FREE_SHARE = np.zeros((L.NUM_BUILDINGS, C.NUM_ITEMS), np.int32)
IRON_FREE_SHARE[:, [C.INV_WOOD, C.INV_STONE]] = 1


def _play(key, start, use_start, params, team):
    reset_key, play_key = jax.random.split(key)
    _, fresh = ENV.reset(reset_key, params)
    state = jax.tree.map(lambda given, new: jnp.where(use_start, given, new), start, fresh)
    team_acts, random_acts = team_policy(ENV), random_policy(ENV)

    def one_step(carry, step):
        state, legal = carry
        policy_key, env_key = step_keys(play_key, step)
        actions = jax.lax.cond(
            team,
            lambda: team_acts(policy_key, state, params),
            lambda: random_acts(policy_key, state, params),
        )
        mask = ENV.action_mask(state, params)
        legal &= jnp.all(jnp.take_along_axis(mask, actions[:, None], 1))
        _, state, _, _, _ = ENV.step(env_key, state, actions, params)
        return (state, legal), None

    (state, legal), _ = jax.lax.scan(one_step, (state, jnp.bool_(True)), jnp.arange(STEPS))
    return ENV.episode_metrics(state, params), legal, fresh


PLAY = jax.jit(jax.vmap(_play, in_axes=(0, 0, 0, 0, None)))


def _params(difficulty: str, share=None):
    params = ENV.default_params.replace(alpha=jnp.float32(L.DIFFICULTY_PRESETS[difficulty]))
    return params if share is None else params.replace(building_share=jnp.asarray(share))


def _stack(trees):
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *trees)


def _run(starts, use_start, params, team):
    keys = episode_keys(0, EPISODES)
    keys = jnp.concatenate([keys] * len(DIFFICULTIES))
    metrics, legal, fresh = PLAY(keys, starts, jnp.asarray(use_start), params, jnp.bool_(team))
    return jax.device_get(metrics), bool(np.all(legal)), fresh


def _placeholder_states():
    """Zero states of the batch's shape, for episodes that start from a fresh world."""
    shapes = jax.eval_shape(
        lambda key: ENV.reset(key, ENV.default_params)[1], jax.random.PRNGKey(0)
    )
    return jax.tree.map(lambda leaf: jnp.zeros((BATCH, *leaf.shape), leaf.dtype), shapes)


def _by_difficulty(metrics):
    return {
        level: {name: values[i * EPISODES : (i + 1) * EPISODES] for name, values in metrics.items()}
        for i, level in enumerate(DIFFICULTIES)
    }


def _downed_scene(state, episode):
    """Agent 1 (beside agent 0 at the start) is down and waits to be revived."""
    agents = state.agents
    return state.replace(
        agents=agents.replace(
            status=agents.status.at[episode, 1].set(C.DOWNED),
            stats=agents.stats.at[episode, 1, C.HEALTH].set(0),
            downed_timer=agents.downed_timer.at[episode, 1].set(
                ENV.default_params.revive_window - 1
            ),
        )
    )


def _forge_scene(state, episode):
    """A forge stands on the episode's first site; warrior and forager hold a diamond
    sword's share (1 wood + 1 diamond) each."""
    sites = state.coordination.sites
    slot = int(np.argmax(np.asarray(sites.task[episode]) > 0))
    row, col = (int(v) for v in sites.position[episode, slot])
    inventory = state.agents.inventory
    for smith in (0, 1):
        inventory = inventory.at[episode, smith, C.INV_WOOD].set(1)
        inventory = inventory.at[episode, smith, C.INV_DIAMOND].set(1)
    return state.replace(
        map=state.map.at[episode, row, col].set(L.FORGE),
        agents=state.agents.replace(inventory=inventory),
        coordination=state.coordination.replace(
            sites=sites.replace(building=sites.building.at[episode, slot].set(L.FORGE_KIND))
        ),
    )


@pytest.fixture(scope="module")
def runs(xla_optimised):
    """Team and random episodes at each difficulty, the team with iron-free buildings,
    and the team on arranged scenes at every difficulty (the first half a downed
    teammate, the second smiths at a forge). Compiled with XLA's optimisations: the four
    batches then run in about 4 s instead of 45 s, for 7 s more of compiling."""
    default = _stack([_params(level) for level in DIFFICULTIES for _ in range(EPISODES)])
    iron_free = _stack(
        [_params(level, IRON_FREE_SHARE) for level in DIFFICULTIES for _ in range(EPISODES)]
    )
    fresh_only = np.zeros(BATCH, bool)
    team, team_legal, starts = _run(_placeholder_states(), fresh_only, default, True)
    random, random_legal, _ = _run(starts, fresh_only, default, False)
    cheap, cheap_legal, _ = _run(starts, fresh_only, iron_free, True)

    scenes = starts
    for episode in range(BATCH):
        scenes = (_downed_scene if episode < BATCH // 2 else _forge_scene)(scenes, episode)
    # Scenes keep each start's difficulty (the state's alpha).
    arranged, scene_legal, _ = _run(scenes, np.ones(BATCH, bool), default, True)
    return {
        "team": _by_difficulty(team),
        "random": _by_difficulty(random),
        "iron_free": _by_difficulty(cheap),
        "revive_scene": {name: values[: BATCH // 2] for name, values in arranged.items()},
        "forge_scene": {name: values[BATCH // 2 :] for name, values in arranged.items()},
        "legal": team_legal and random_legal and cheap_legal and scene_legal,
    }


def test_the_team_takes_only_legal_actions(runs):
    assert runs["legal"]


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_the_team_completes_syncs_and_handovers(runs, difficulty):
    team = runs["team"][difficulty]
    assert team["coordination/syncs"].sum() >= 1
    assert team["coordination/handovers"].sum() >= 1
    assert team["coordination/task_completions"].sum() >= EPISODES


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_the_team_answers_requests_and_builds_a_shelter(runs, difficulty):
    team = runs["team"][difficulty]
    assert np.all(team["coordination/gives"] >= 1)
    assert team["construction/shelters"].sum() >= EPISODES - 1


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_the_team_builds_every_kind(runs, difficulty):
    cheap = runs["iron_free"][difficulty]
    for kind in L.BUILDINGS:
        assert cheap[f"construction/{kind}s"].sum() >= EPISODES // 3, kind


@pytest.mark.parametrize("difficulty", DIFFICULTIES)
def test_the_team_beats_random_on_coordination(runs, difficulty):
    team, random = runs["team"][difficulty], runs["random"][difficulty]
    assert team["coordination_achievement_percent"].mean() > (
        random["coordination_achievement_percent"].mean() + 20
    )
    assert (
        team["coordination/task_completions"].mean()
        > random["coordination/task_completions"].mean()
    )


def test_a_downed_teammate_is_revived(runs):
    scene = runs["revive_scene"]
    assert np.all(scene["coordination/revives"] >= 1)
    assert np.all(scene["achievement/revive_teammate"] == 1)


def test_smiths_make_diamond_swords_at_the_forge(runs):
    scene = runs["forge_scene"]
    assert np.all(scene["construction/diamond_swords"] >= L.DIAMOND_SWORD_SMITHS)
    assert np.all(scene["achievement/make_diamond_sword"] == 1)
