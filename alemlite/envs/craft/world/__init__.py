"""The base world: a multi-agent Crafter on one floor, which knows nothing of the layer."""
