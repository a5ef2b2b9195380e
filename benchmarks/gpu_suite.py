"""The accelerator suite as a module: `python -m benchmarks.gpu_suite` runs what `alemlite bench
gpu` runs (`benchmarks/engine/gpu.py`, the same flags).

    python -m benchmarks.gpu_suite --publish       # on the GPU, from a clean tree
    python -m benchmarks.gpu_suite --scale tiny    # on a CPU, well under a minute
"""

from __future__ import annotations

from benchmarks.engine.gpu import GpuSuiteConfig, run
from benchmarks.script import run_script

if __name__ == "__main__":
    run_script(GpuSuiteConfig, run)
