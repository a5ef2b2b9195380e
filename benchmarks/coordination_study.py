"""The coordination study on dining: do group-relative methods learn to share forks?

On tables of N = 5, 10 and 15, under the `paper` reward (with its all-WAIT
optimum) and the `shaped` reward, trains IPPO, MAPPO, GRPO, SRPO and TeamTR
(several seeds vmapped per run) and evaluates every run's untrained start, final
and best checkpoints beside the scripted reference policies on the same held-out
test episodes. It reports return, meals, deadlock rate, fairness and the fraction
of zero-meal episodes; Welch's t-test and Hedges' g between each checkpoint and
the untrained start, between best and final, and against resource ordering; the
rliable aggregates over settings (IQM and optimality gap of normalised returns,
probability of improvement between methods, performance profiles) with stratified
bootstrap intervals over seeds; and a curriculum over 5 -> 10 -> 15 against direct
training at 15 on an equal budget.

    python -m benchmarks.coordination_study                 # the CPU budget
    python -m benchmarks.coordination_study --scale gpu     # the full-scale budget

Everything goes to the study's folder `--out` (default `runs/study/`): the run
directories under SCALE/, where every finished run keeps `study.json` and `episodes.npz`
and is reused, so an interrupted study resumes where it stopped (`--no-reuse-runs`
trains everything again), and the results JSON, the report and the plots in figures/.
With `--publish` the last three replace the published
`benchmarks/results/coordination_study_SCALE.json`, `docs/coordination_study.md` and
`docs/figures/study_*.png` (for `--scale gpu`: `coordination_study_gpu.md`,
`study_gpu_*.png`); the report's `## Conclusions` section is kept when it is rebuilt.
"""

from benchmarks.script import run_script
from benchmarks.study.config import StudyConfig
from benchmarks.study.main import run

if __name__ == "__main__":
    run_script(StudyConfig, run)
