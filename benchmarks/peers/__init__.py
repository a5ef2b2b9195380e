"""Peer timing scripts, run by `benchmarks/craft_throughput.py` inside each peer's own venv."""
