"""IPPO learns to coordinate in the penalty game (k = -10, two players, 10 rounds).

Uniform play miscoordinates two rounds in three and averages 0.22 a round; on the held-out
test episodes the untrained actors score 1.3 to 1.8 per 10 rounds. After 60 updates, over
seeds 0 to 9, every IPPO team plays one joint action every round: six find an optimum,
all-a or all-c (99.5 to 99.8), four settle on the safe all-b (20.0), with the seed fixed here
all-b. The bar of 10 (one payoff a round) lies 8 above untrained play and 10 below the
weakest trained seed, and any coordinated outcome clears it.
"""

from __future__ import annotations

import jax

import alemlite
from baselines.common.config import NetworkConfig, PPOConfig, TrainConfig
from baselines.common.evaluation import SeedEvaluator
from baselines.common.trainer import build_algorithm

ROUNDS = 10
SPEC = alemlite.spec("matrix")
OPTIONS = SPEC.options(game="penalty", penalty=-10.0, max_steps=ROUNDS)
ENV = SPEC.build(OPTIONS)
NUM_UPDATES = 60
TEST_EPISODES = 128
SEED = 0
THRESHOLD = 10.0
# As in tests/test_learning.py: the update compiles in half the time without XLA's backend
# optimisations, and 60 updates of this small batch still run in a few seconds.
QUICK_COMPILE = {"xla_backend_optimization_level": 0}


def held_out(evaluator: SeedEvaluator, actor_params) -> dict[str, float]:
    one_seed = jax.tree.map(lambda leaf: leaf[None], actor_params)
    metrics = evaluator(one_seed, TEST_EPISODES, TrainConfig().test_seed)
    return {name: float(values.mean()) for name, values in metrics.items()}


def test_ippo_coordinates_in_the_penalty_game():
    config = TrainConfig(
        algorithm="ippo",
        env="matrix",
        options=OPTIONS,
        num_envs=32,
        num_steps=ROUNDS,
        num_updates=NUM_UPDATES,
        network=NetworkConfig(hidden_size=32, num_layers=1),
        ppo=PPOConfig(num_minibatches=2),
        progress=False,
    )
    algorithm = build_algorithm(config, ENV)
    evaluator = SeedEvaluator(ENV, algorithm.actor, batch_size=TEST_EPISODES)
    runner = algorithm.init(jax.random.PRNGKey(SEED))
    untrained = held_out(evaluator, runner.params["actor"])
    update = jax.jit(algorithm.update).lower(runner).compile(compiler_options=QUICK_COMPILE)
    for _ in range(NUM_UPDATES):
        runner, _ = update(runner)
    trained = held_out(evaluator, runner.params["actor"])

    assert untrained["episode_return"] < THRESHOLD, f"untrained already scores {untrained}"
    assert untrained["miscoordination_rate"] > 0.5
    assert trained["episode_return"] > THRESHOLD, f"trained {trained}, untrained {untrained}"
    assert trained["miscoordination_rate"] < 0.1, trained
