"""TeamTR: a sequential trust region, one seat at a time, with group-relative advantages.

Each update visits the seats in a fresh random order. Before each seat's stage,
grouped episodes are drawn from the team as it stands (earlier seats already
updated), so every stage is on-policy. A stage runs GRPO's epochs on that seat's
samples only; after every epoch the seat's KL(before || after) is measured (k3,
on the seat's own states) and the epochs stop once it exceeds `kl_budget`. The
step from the stage's start is then halved until it fits the budget (or undone);
a stage whose step was scaled back also restores the optimizer state it began with.
Each stage logs its surrogate gain, mean over the seat's samples of
`(ratio - 1) * advantage`: the first-order improvement its update promises.

The actor is shared by every seat, as in all these baselines, so one seat's
update also moves the others' policies; the next stage's fresh rollouts see that.
An update plays `num_agents` rollouts of `num_steps` steps.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from baselines.common.algorithm import Runner
from baselines.common.group import env_major, k3_kl
from baselines.common.ppo import minibatch_epochs, weighted_mean
from baselines.grpo import GRPO


def seat_weights(weights: jax.Array, seat: jax.Array) -> jax.Array:
    """Keep only `seat`'s entries of loss weights `(..., N)`."""
    return weights & (jnp.arange(weights.shape[-1]) == seat)


def largest_step_within_budget(kls: jax.Array, scales: jax.Array, budget: float) -> jax.Array:
    """The first of the decreasing `scales` whose KL fits the budget; 0 when none does."""
    within = kls <= budget
    return jnp.where(within.any(), scales[jnp.argmax(within)], 0.0)


def surrogate_gain(log_ratio: jax.Array, advantages: jax.Array, weights: jax.Array) -> jax.Array:
    """Surrogate improvement `mean((ratio - 1) * A)` over the weighted samples."""
    return weighted_mean(jnp.expm1(log_ratio) * advantages, weights)


def interpolate(start, end, scale: jax.Array):
    """Parameters `start + scale * (end - start)`."""
    return jax.tree.map(lambda a, b: a + scale * (b - a), start, end)


class TeamTR(GRPO):
    @property
    def rollouts_per_update(self) -> int:
        return self.env.num_agents

    def update(self, runner: Runner) -> tuple[Runner, dict[str, jax.Array]]:
        key, order_key, stages_key = jax.random.split(runner.key, 3)
        num_agents = self.env.num_agents
        order = jax.random.permutation(order_key, num_agents)
        reference = runner.params.get("reference")

        def stage(carry, inputs):
            actor_params, opt_state, rollout = carry
            seat, stage_key = inputs
            rollout_key, epoch_key = jax.random.split(stage_key)
            rollout, batch, statistics = self.group_rollout(
                actor_params, rollout, rollout_key, runner.env_params
            )
            batch = {**batch, "weights": seat_weights(batch["weights"], seat)}
            actor_params, opt_state, metrics = self.seat_update(
                actor_params, opt_state, batch, epoch_key, reference
            )
            metrics = {**metrics, "teamtr/seat": seat.astype(jnp.float32)}
            return (actor_params, opt_state, rollout), {**metrics, **statistics}

        (actor_params, opt_state, rollout), per_stage = jax.lax.scan(
            stage,
            (runner.params["actor"], runner.opt_state, runner.rollout),
            (order, jax.random.split(stages_key, num_agents)),
        )
        metrics = {
            name: jnp.nanmean(values) for name, values in per_stage.items() if name != "teamtr/seat"
        }
        metrics["teamtr/gain_total"] = per_stage["teamtr/gain"].sum()
        metrics["agent_steps"] = per_stage["agent_steps"].sum()  # every stage plays a rollout
        for name in ("seat", "gain", "kl", "step_scale", "epochs"):
            for index in range(num_agents):  # unpacks the stacked stages into scalar records
                metrics[f"teamtr/stage_{index}/{name}"] = per_stage[f"teamtr/{name}"][index]
        runner = Runner(
            params={**runner.params, "actor": actor_params},
            opt_state=opt_state,
            rollout=rollout,
            key=key,
            update_step=runner.update_step + 1,
            env_params=runner.env_params,
        )
        return runner, metrics

    def seat_update(self, start_params, start_opt_state, batch, key, reference):
        """GRPO epochs on one seat's samples, stopped and scaled back into the KL budget."""
        ppo, budget = self.config.ppo, self.group.kl_budget
        weights = env_major(batch["weights"])
        old_log_prob = env_major(batch["transitions"].log_prob)
        has_samples = weights.any()

        def seat_log_ratio(actor_params):
            return self.log_probs(actor_params, batch)[0] - old_log_prob

        def seat_kl(actor_params):
            return weighted_mean(k3_kl(seat_log_ratio(actor_params)), weights)

        def one_epoch(carry, epoch_key):
            actor_params, opt_state, stopped, epochs = carry
            new_params, new_opt_state, diagnostics = minibatch_epochs(
                epoch_key,
                actor_params,
                opt_state,
                self.optimizer,
                batch,
                lambda params, minibatch: self.loss(params, minibatch, reference),
                1,
                ppo.num_minibatches,
            )
            skip = stopped | ~has_samples
            keep_old = lambda old, new: jnp.where(skip, old, new)  # noqa: E731
            actor_params = jax.tree.map(keep_old, actor_params, new_params)
            opt_state = jax.tree.map(keep_old, opt_state, new_opt_state)
            stopped = stopped | (seat_kl(actor_params) > budget)
            return (actor_params, opt_state, stopped, epochs + ~skip), diagnostics

        (end_params, end_opt_state, _, epochs), diagnostics = jax.lax.scan(
            one_epoch,
            (start_params, start_opt_state, jnp.zeros((), bool), jnp.zeros((), jnp.int32)),
            jax.random.split(key, ppo.num_epochs),
        )
        scales = 0.5 ** jnp.arange(self.group.backtrack_steps, dtype=jnp.float32)
        kls = jax.vmap(lambda scale: seat_kl(interpolate(start_params, end_params, scale)))(scales)
        scale = largest_step_within_budget(kls, scales, budget)
        actor_params = interpolate(start_params, end_params, scale)
        # The optimizer's moments and count describe the unscaled steps; after a scale-back
        # they would steer later stages with steps that were never taken, so they go too.
        opt_state = jax.tree.map(
            lambda start, end: jnp.where(scale == 1.0, end, start), start_opt_state, end_opt_state
        )
        log_ratio = seat_log_ratio(actor_params)
        metrics = {
            **jax.tree.map(jnp.mean, diagnostics),
            "teamtr/gain": surrogate_gain(log_ratio, batch["advantages"][None], weights),
            "teamtr/kl": weighted_mean(k3_kl(log_ratio), weights),
            "teamtr/step_scale": scale,
            "teamtr/epochs": epochs.astype(jnp.float32),
        }
        return actor_params, opt_state, metrics
