"""The accelerator suite (`alemlite bench gpu`) at its tiny scale on the CPU, and the rules that
end its sweeps (time budget, device memory) and judge its targets."""

from __future__ import annotations

import json
import math
from pathlib import Path

import jax
import pytest

import alemlite
from alemlite.core.errors import ConfigError
from alemlite_app.cli import main
from benchmarks.engine import gpu
from benchmarks.harness import RESULTS_DIR

TINY = gpu.SCALES["tiny"]


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    """The tiny suite run through the command line: its JSON and the folder it wrote."""
    out = tmp_path_factory.mktemp("gpu_suite")
    main(["bench", "gpu", "--scale", "tiny", "--out", str(out)])
    device = gpu.device_slug(jax.devices()[0].device_kind)
    return json.loads((out / f"gpu_suite_{device}.json").read_text()), out


def numbers(value, path=""):
    """Every number in a JSON value, with where it is."""
    if isinstance(value, dict):
        for key, item in value.items():
            yield from numbers(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from numbers(item, f"{path}[{index}]")
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield path, value


def test_the_suite_writes_one_json_and_a_plot_naming_the_device(suite):
    results, out = suite
    device = jax.devices()[0]
    assert results["benchmark"] == "gpu_suite"
    assert results["device"] == {
        "kind": device.device_kind,
        "platform": device.platform,
        "count": jax.device_count(),
    }
    assert results["device_kind"] == device.device_kind  # the provenance block's
    plot = out / f"gpu_suite_{gpu.device_slug(device.device_kind)}.png"
    assert plot.stat().st_size > 0
    assert sorted(path.name for path in out.iterdir()) == sorted(
        [plot.name, plot.with_suffix(".json").name]
    )
    assert results["envs"] == list(TINY.envs)
    assert sorted(results["sections"]) == sorted(
        f"{kind}/{env}" for kind in ("env", "train") for env in TINY.envs
    )
    # Nothing ended early (the tiny scale's budget is ten minutes), and the JSON says so.
    assert results["ended_early"] == []
    assert results["time_budget_s"] == TINY.time_budget_s


def test_every_figure_is_a_finite_number_and_the_rows_are_measured(suite):
    results, _ = suite
    for path, value in numbers(results):
        assert math.isfinite(value), path
    for env in TINY.envs:
        section = results["sections"][f"env/{env}"]
        sizes = [2**k for k in gpu.planned(TINY.env_log2, env)]
        assert [row["num_envs"] for row in section["sweep"]] == sizes
        assert section["end"] == {"reason": "largest_batch", "num_envs": sizes[-1]}
        num_agents = section["num_agents"]
        assert num_agents == alemlite.spec(env).small_options["num_agents"]
        for row in section["sweep"]:
            timing = row["timing"]
            assert 0 < timing["min_s"] <= timing["median_s"] <= timing["max_s"]
            assert timing["repeats"] == TINY.repeats
            assert row["compile_s"] == timing["compile_s"] > 0
            assert row["wall_s"] >= row["compile_s"]
            assert row["steps_per_call"] == gpu.steps_per_call(TINY, row["num_envs"])
            # The speeds are the timed calls' own: steps over the median time.
            steps = row["num_envs"] * row["steps_per_call"]
            assert row["env_steps_per_s"] == pytest.approx(steps / timing["median_s"])
            assert row["agent_steps_per_s"] == pytest.approx(row["env_steps_per_s"] * num_agents)
            # The CPU keeps no memory counters: the state's own size stands in.
            assert row["memory_source"] == "state_size"
            assert row["bytes_per_env"] == section["state_bytes_per_env"] > 0
        top = max(section["sweep"], key=lambda row: row["agent_steps_per_s"])
        assert section["best"]["agent_steps_per_s"] == top["agent_steps_per_s"]


def test_training_speed_and_the_projection_come_from_the_timed_updates(suite):
    results, _ = suite
    for env in TINY.envs:
        section = results["sections"][f"train/{env}"]
        sizes = [2**k for k in gpu.planned(TINY.train_log2, env)]
        assert [row["num_envs"] for row in section["sweep"]] == sizes
        for row in section["sweep"]:
            timing = row["ippo_timing"]
            assert 0 < timing["min_s"] <= timing["median_s"] <= timing["max_s"]
            assert row["ippo_agent_steps_per_s"] == pytest.approx(
                row["agent_steps_per_update"] / timing["median_s"]
            )
            assert row["env_only_agent_steps_per_s"] > 0
            assert row["compile_s"] == pytest.approx(
                timing["compile_s"] + row["env_only_timing"]["compile_s"]
            )
        best = max(section["sweep"], key=lambda row: row["ippo_agent_steps_per_s"])
        projection = section["projected_1b_agent_steps"]
        expected = 1e9 / best["ippo_agent_steps_per_s"] + best["ippo_timing"]["compile_s"]
        assert projection["num_envs"] == best["num_envs"]
        assert projection["seconds"] == pytest.approx(expected)
        assert projection["minutes"] == pytest.approx(expected / 60)


def test_targets_off_the_target_device_are_unmeasured(suite):
    results, _ = suite
    targets = {row["target"]: row for row in results["targets"]}
    assert {row["status"] for row in targets.values()} == {"unmeasured"}
    assert {row["device"] for row in targets.values()} == {"NVIDIA H200"}
    dining = targets["1B IPPO agent steps on dining, seconds"]
    assert (
        dining["measured_here"]
        == results["sections"]["train/dining"]["projected_1b_agent_steps"]["seconds"]
    )
    assert targets["craft env-only agent steps/s"]["measured_here"] is None  # not run


# ---- the rules, without running anything -------------------------------------------------
class Clock:
    """A clock that moves only when a fake measurement says it took time."""

    def __init__(self):
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def fake_measure(clock: Clock, compile_s: float, per_env_s: float, fail_at: dict | None = None):
    def measure(num_envs: int) -> dict:
        if fail_at and num_envs in fail_at:
            raise fail_at[num_envs]
        clock.now += compile_s + per_env_s * num_envs
        return {"num_envs": num_envs, "compile_s": compile_s}

    return measure


def test_a_sweep_stops_before_a_point_that_would_overrun_its_budget():
    clock = Clock()
    # Points cost 10 s of compile plus 1 s per environment: 11, 12, 14, 18, 26 s.
    rows, end = gpu.sweep([1, 2, 4, 8, 16], fake_measure(clock, 10, 1), float, 40.0, clock)
    assert [row["num_envs"] for row in rows] == [1, 2, 4]  # 37 s; 8 envs would end at 55 s
    assert [row["wall_s"] for row in rows] == [11, 12, 14]
    assert end["reason"] == "time_budget"
    assert end["next_num_envs"] == 8
    assert end["predicted_s"] == pytest.approx(10 + 4 * 8 / 4)  # compile, then work doubled
    assert end["left_s"] == pytest.approx(3)
    # The first point always runs, even with no time left.
    rows, end = gpu.sweep([1, 2], fake_measure(Clock(), 10, 1), float, -1.0, Clock())
    assert [row["num_envs"] for row in rows] == [1]
    assert end["reason"] == "time_budget"


def test_a_sweep_stops_cleanly_at_the_first_batch_out_of_device_memory():
    clock = Clock()
    oom = jax.errors.JaxRuntimeError(
        "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 81604378624 bytes.\nmore"
    )
    measure = fake_measure(clock, 1, 0, fail_at={8: oom})
    rows, end = gpu.sweep([2, 4, 8, 16], measure, float, 1e9, clock)
    assert [row["num_envs"] for row in rows] == [2, 4]
    assert end == {
        "reason": "out_of_memory",
        "num_envs": 8,
        "largest_that_fit": 4,
        "error": "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 81604378624 bytes.",
    }
    # Any other runtime error is not the device's memory: it propagates.
    other = jax.errors.JaxRuntimeError("INTERNAL: something else")
    with pytest.raises(jax.errors.JaxRuntimeError, match="INTERNAL"):
        gpu.sweep([2, 4], fake_measure(Clock(), 1, 0, fail_at={4: other}), float, 1e9, Clock())
    rows, end = gpu.sweep([2, 4], fake_measure(Clock(), 1, 0), float, 1e9, Clock())
    assert end == {"reason": "largest_batch", "num_envs": 4}


def test_memory_per_environment_reads_the_device_peak_where_it_is_kept():
    assert gpu.memory_per_env(None, None, 64, 5490) == {
        "memory_source": "state_size",
        "bytes_per_env": 5490,
    }
    raised = gpu.memory_per_env(
        {"peak_bytes_in_use": 1000}, {"peak_bytes_in_use": 6400, "bytes_limit": 10**9}, 64, 1
    )
    assert raised["memory_source"] == "device_peak_bytes_in_use"
    assert raised["bytes_per_env"] == 100
    # An earlier, larger point set the peak: this point's own is unknown, not made up.
    below = gpu.memory_per_env({"peak_bytes_in_use": 6400}, {"peak_bytes_in_use": 6400}, 8, 1)
    assert (below["memory_source"], below["bytes_per_env"]) == ("below_earlier_peak", None)


def test_targets_are_met_or_missed_on_the_target_device_only():
    sections = {
        "env/craft": {"best": {"agent_steps_per_s": 12e6}},
        "train/dining": {"best": {}, "projected_1b_agent_steps": {"seconds": 700.0}},
        "train/craft": {"best": {}, "projected_1b_agent_steps": {"seconds": 1800.0}},
    }
    on_h200 = {row["target"]: row["status"] for row in gpu.targets(sections, "NVIDIA H200")}
    assert on_h200 == {
        "craft env-only agent steps/s": "met",
        "1B IPPO agent steps on dining, seconds": "missed",
        "1B IPPO agent steps on Craft, seconds": "met",
    }
    elsewhere = gpu.targets(sections, "NVIDIA A100-SXM4-80GB")
    assert {row["status"] for row in elsewhere} == {"unmeasured"}
    assert [row["measured_here"] for row in elsewhere] == [12e6, 700.0, 1800.0]
    assert gpu.device_slug("NVIDIA H200") == "nvidia_h200"
    assert gpu.device_slug("cpu") == "cpu"


def test_bad_settings_are_refused_and_results_publish_only_with_publish(tmp_path):
    with pytest.raises(ConfigError, match=r"time_budget_s=0\.0 must be positive"):
        gpu.GpuSuiteConfig(time_budget_s=0.0)
    with pytest.raises(ConfigError, match="envs='chess' is not registered"):
        gpu.GpuSuiteConfig(envs=("chess",))
    with pytest.raises(ConfigError, match="must name each environment once"):
        gpu.GpuSuiteConfig(envs=("dining", "dining"))
    with pytest.raises(ConfigError, match="pass --publish"):
        gpu.GpuSuiteConfig(out=RESULTS_DIR).begin("gpu_suite")
    out, _ = gpu.GpuSuiteConfig(out=Path(tmp_path)).begin("gpu_suite")
    assert out == tmp_path
