"""`alemlite bench`: the benchmarks of any registered environment (`--env`), read from its spec."""
