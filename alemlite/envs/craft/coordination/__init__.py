"""The coordination layer: parts on top of the base world, each with its own switch."""
