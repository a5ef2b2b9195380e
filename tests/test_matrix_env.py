"""Matrix games: the classic matrices, mixed-game batches, the scripted teams, the options
and the spec's text rendering."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import alemlite
from alemlite.core import ConfigError, TimeLimit, VecEnv
from alemlite.evaluation import evaluate

CLIMBING = [[11, -30, 0], [-30, 7, 6], [0, 0, 5]]
GAMES = ("climbing", "penalty", "stag_hunt", "prisoners_dilemma")
SPEC = alemlite.spec("matrix")


def two_player_tables(params) -> np.ndarray:
    """`(3, 3, 2)`: both players' payoffs by (player 0's move, player 1's move)."""
    return np.asarray(params.payoffs).reshape(3, 3, 2)


@pytest.mark.parametrize(
    ("game", "row", "common"),
    [
        ("climbing", CLIMBING, True),
        ("penalty", [[10, 0, -10], [0, 2, 0], [-10, 0, 10]], True),
        ("stag_hunt", [[4, 0], [3, 3]], False),
        ("prisoners_dilemma", [[3, 0], [5, 1]], False),
    ],
)
def test_two_players_play_the_classic_matrix(game, row, common):
    env = alemlite.make("matrix", game=game)
    tables = two_player_tables(env.default_params)
    size = len(row)
    np.testing.assert_array_equal(tables[:size, :size, 0], row)
    column = row if common else np.transpose(row)  # player 1 is the column player
    np.testing.assert_array_equal(tables[:size, :size, 1], column)
    assert int(env.default_params.num_moves) == size


def test_penalty_k_is_a_parameter():
    env = alemlite.make("matrix", game="penalty")
    tables = two_player_tables(env.make_params(game="penalty", penalty=-100.0))
    np.testing.assert_array_equal(tables[:, :, 0], [[10, 0, -100], [0, 2, 0], [-100, 0, 10]])


def test_three_players_keep_each_games_character():
    tables = {
        game: np.asarray(alemlite.make("matrix", num_agents=3, game=game).default_params.payoffs)
        for game in GAMES
    }
    index = {joint: 9 * joint[0] + 3 * joint[1] + joint[2] for joint in np.ndindex(3, 3, 3)}
    # Climbing: all-a pays the top entry, one player off it costs two -30 pairs of three.
    assert tables["climbing"][index[(0, 0, 0)]].tolist() == [11] * 3
    assert tables["climbing"][index[(0, 0, 1)]][0] == pytest.approx((11 - 30 - 30) / 3)
    # Prisoner's dilemma: defection pays more whatever the others do; all-C beats all-D.
    pd = tables["prisoners_dilemma"]
    for others in np.ndindex(2, 2):
        assert pd[index[(1, *others)]][0] > pd[index[(0, *others)]][0]
    assert pd[index[(0, 0, 0)]][0] > pd[index[(1, 1, 1)]][0]
    # Stag hunt: the stag needs everyone; the hare pays 3 alone.
    stag = tables["stag_hunt"]
    assert stag[index[(0, 0, 0)]].tolist() == [4, 4, 4]
    assert stag[index[(0, 0, 1)]].tolist() == [0, 0, 3]


def test_one_batch_mixes_games():
    env = alemlite.make("matrix", num_agents=2, max_steps=4)
    games = [env.make_params(game=game) for game in GAMES]
    params = jax.tree.map(lambda *leaves: jnp.stack(leaves), *games)
    vec = VecEnv(env, num_envs=len(GAMES))
    _, state = vec.reset(jax.random.PRNGKey(0), params)
    mask = np.asarray(vec.action_mask(state, params))
    assert mask[:2].all() and mask[2:, :, :2].all() and not mask[2:, :, 2].any()
    # Player 0 plays PLAY_A, player 1 PLAY_B, in every game.
    actions = jnp.tile(jnp.array([0, 1], jnp.int32), (len(GAMES), 1))
    _, _, reward, _, _ = vec.step(jax.random.PRNGKey(1), state, actions, params)
    np.testing.assert_array_equal(reward, [[-30, -30], [0, 0], [0, 3], [0, 5]])


def test_time_limit_is_the_task_and_nothing_is_random():
    env = alemlite.make("matrix")
    assert env.time_limit is TimeLimit.TASK
    assert not env.needs_step_key and not env.needs_reset_key
    assert env.num_actions == 3 and env.num_agents == 2


def test_message_tokens_ride_on_the_action_id():
    env = alemlite.make("matrix", num_message_tokens=2)
    assert env.action_names[:4] == ("PLAY_A", "PLAY_B", "PLAY_C", "PLAY_A+MSG_1")
    assert env.num_actions == 9
    params = env.default_params
    _, state = env.reset(jax.random.PRNGKey(0), params)
    _, state, reward, _, _ = env.step(None, state, jnp.array([0 + 3 * 2, 0 + 3 * 1]), params)
    assert state.last_tokens.tolist() == [2, 1] and reward.tolist() == [11, 11]


def _evaluate(policy: str, **options) -> dict[str, np.ndarray]:
    env = SPEC.build(SPEC.options(max_steps=6, **options))
    return evaluate(env, SPEC.policy(policy, env), env.default_params, num_episodes=8)


@pytest.mark.parametrize("policy", ["optimal", "tit_for_tat"])
@pytest.mark.parametrize("num_agents", [2, 3])
def test_optimal_and_tit_for_tat_reach_the_climbing_optimum(policy, num_agents):
    metrics = _evaluate(policy, num_agents=num_agents)
    np.testing.assert_array_equal(metrics["optimal_joint_action_rate"], 1.0)
    np.testing.assert_array_equal(metrics["mean_payoff"], 11.0)
    np.testing.assert_array_equal(metrics["miscoordination_rate"], 0.0)
    np.testing.assert_array_equal(metrics["episode_return"], 66.0)


def test_uniform_play_misses_the_optimum():
    metrics = _evaluate("uniform", num_agents=3)
    assert metrics["optimal_joint_action_rate"].mean() < 0.2
    assert metrics["miscoordination_rate"].mean() > 0.5
    assert metrics["play_c_rate"].mean() > 0.2
    np.testing.assert_array_equal(metrics["valid_action_rate"], 1.0)


def test_always_cooperate_in_the_prisoners_dilemma():
    metrics = _evaluate("always_cooperate", game="prisoners_dilemma")
    np.testing.assert_array_equal(metrics["cooperation_rate"], 1.0)
    np.testing.assert_array_equal(metrics["mean_payoff"], 3.0)
    np.testing.assert_array_equal(metrics["suboptimal_equilibrium_rate"], 0.0)


@pytest.mark.parametrize(
    ("game", "safe"), [("climbing", 2), ("penalty", 1), ("stag_hunt", 1), ("prisoners_dilemma", 1)]
)
def test_tit_for_tat_answers_a_defection_with_the_safe_move(game, safe):
    env = alemlite.make("matrix", num_agents=3, game=game)
    params = env.default_params
    tit_for_tat = SPEC.policy("tit_for_tat", env)
    _, state = env.reset(jax.random.PRNGKey(0), params)
    assert tit_for_tat(None, state, params).tolist() == [0, 0, 0]  # round 1: cooperate
    _, state, *_ = env.step(None, state, jnp.array([0, 0, 0]), params)
    assert tit_for_tat(None, state, params).tolist() == [0, 0, 0]
    _, state, *_ = env.step(None, state, jnp.array([0, 1, 0]), params)
    assert tit_for_tat(None, state, params).tolist() == [safe] * 3


def test_all_defect_is_the_suboptimal_equilibrium():
    env = alemlite.make("matrix", game="prisoners_dilemma", max_steps=3)
    params = env.default_params
    _, state = env.reset(jax.random.PRNGKey(0), params)
    for actions in ([1, 1], [1, 1], [0, 1]):
        _, state, *_ = env.step(None, state, jnp.array(actions), params)
    metrics = env.episode_metrics(state, params)
    assert float(metrics["suboptimal_equilibrium_rate"]) == pytest.approx(2 / 3)
    assert float(metrics["miscoordination_rate"]) == pytest.approx(1 / 3)
    assert float(metrics["cooperation_rate"]) == pytest.approx(1 / 6)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"num_agents": 1}, "num_agents=1 must lie in 2..8"),
        ({"num_agents": 9}, "num_agents=9 must lie in 2..8"),
        ({"max_steps": 0}, "max_steps=0 must be at least 1"),
        ({"penalty": 5.0}, "penalty=5.0 must be a finite number <= 0"),
        ({"penalty": float("nan")}, "penalty=nan must be a finite number <= 0"),
        ({"num_message_tokens": -1}, "num_message_tokens=-1 must be 0"),
        ({"game": "chicken"}, "unknown game 'chicken'"),
        ({"reward": "shaped"}, "unknown reward 'shaped'"),
    ],
)
def test_options_refuse_bad_values_in_one_line(options, message):
    with pytest.raises(ConfigError, match=message) as error:
        SPEC.options(**options)
    assert "\n" not in str(error.value)


def test_make_params_refuses_unknown_names():
    env = alemlite.make("matrix")
    with pytest.raises(ConfigError, match=r"unknown matrix param\(s\) \['k'\]"):
        env.make_params(k=-5.0)
    with pytest.raises(ConfigError, match="unknown matrix option"):
        alemlite.make("matrix", players=3)


def test_spec_names_defaults_and_labels():
    assert "matrix" in alemlite.registered_environments()
    options = SPEC.options()
    assert (options.num_agents, options.max_steps, options.game) == (2, 25, "climbing")
    assert SPEC.default_policy == "optimal"
    assert set(SPEC.policies) == {"uniform", "always_cooperate", "tit_for_tat", "optimal"}
    assert SPEC.curriculum is None
    assert SPEC.options(game="penalty", penalty=-50.0).label() == "penalty_k-50_2"
    assert "stag_hunt, N=3" in SPEC.options(game="stag_hunt", num_agents=3).describe()


def test_render_text_shows_the_table_and_the_last_joint_action():
    env = SPEC.build(SPEC.options())
    params = env.default_params
    _, state = env.reset(jax.random.PRNGKey(0), params)
    assert "no round played yet" in SPEC.render_text(env, state, params)
    _, state, *_ = env.step(None, state, jnp.array([1, 2]), params)
    text = SPEC.render_text(env, state, params)
    assert "-30" in text and "11" in text
    assert "last round: PLAY_B PLAY_C (payoffs 6, 6)" in text
