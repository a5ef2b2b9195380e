"""What every algorithm shares: networks, rollout, advantages, losses, loop, checkpoints."""
