"""Plain-Python reference engines: timed beside the JAX environments, and the tests' oracles."""
