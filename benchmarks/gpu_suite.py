"""The accelerator suite as a module: `python -m benchmarks.gpu_suite` runs what `alemlite bench
gpu` runs (`benchmarks/engine/gpu.py`, the same flags).

    python -m benchmarks.gpu_suite --publish       # on the GPU, from a clean tree
    python -m benchmarks.gpu_suite --scale tiny    # on a CPU, well under a minute
"""

from __future__ import annotations

import tyro

from benchmarks.engine.gpu import GpuSuiteConfig, run

if __name__ == "__main__":
    run(tyro.cli(GpuSuiteConfig))
