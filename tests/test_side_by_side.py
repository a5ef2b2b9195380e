"""The throughput engine's peers side by side and its ratios, with stand-in peers (nothing is
compiled or timed): which batches each peer is timed at, where its sweep stops, and which
rows each reported ratio comes from."""

import json
from pathlib import Path

import pytest

from alemlite.core.errors import ConfigError
from benchmarks.craft_throughput import CraftBenchConfig
from benchmarks.engine.side_by_side import median_round, ratios, side_by_side
from benchmarks.peers.table import Peer

# Stand-in env steps/s by batch: one peer that stops improving past 128 envs, one that
# fails (runs out of memory) at 256.
RATES = {
    "alem": {16: 100.0, 32: 200.0, 64: 400.0, 128: 500.0, 256: 505.0, 512: 900.0},
    "craftax": {16: 50.0, 32: 60.0, 64: 70.0, 128: 80.0},
}


def _alemlite_rate(num_envs: int) -> float:
    return 1000.0 * num_envs


def _alemlite_timed_at(rate):
    """A stand-in for alemlite's timing that reports `rate(num_envs)` env steps/s."""
    return lambda num_envs: {
        "num_envs": num_envs,
        "policy": "hashed",
        "env_steps_per_s": rate(num_envs),
    }


@pytest.fixture
def calls():
    """The (peer, num_envs) of every call of a stand-in peer, in order."""
    return []


@pytest.fixture
def peers(calls):
    """Stand-in peers: two modes each, at the rates of `RATES`."""

    def timer(name):
        def time(options, run):
            calls.append((name, run.num_envs))
            if run.num_envs not in RATES[name]:
                return [{"peer": name, "num_envs": run.num_envs, "error": "out of memory"}]
            rate = RATES[name][run.num_envs]
            return [
                {"peer": name, "mode": mode, "num_envs": run.num_envs, "env_steps_per_s": rate * k,
                 "agent_steps_per_s": rate * k}
                for mode, k in (("fast", 2.0), ("slow", 1.0))
            ]  # fmt: skip

        return time

    return {name: (Peer(name, timer(name), "setup"), Path(name)) for name in RATES}


def _sweep(config, peers, ours=None):
    return side_by_side(ours or _alemlite_timed_at(_alemlite_rate), None, config, peers)


def test_peers_are_swept_until_a_larger_batch_stops_helping_them(peers, calls):
    config = CraftBenchConfig(peer_envs=(16, 32, 64, 128, 256, 512), ratio_envs=64)
    rows = _sweep(config, [peers["alem"], peers["craftax"]])
    # alem gains < 5% from 128 to 256 envs: stops there; craftax fails at 256 and stops.
    # At the ratio batch (64) both are timed once per round (3 rounds by default).
    assert [n for name, n in calls if name == "alem"] == [16, 32, 64, 64, 64, 128, 256]
    assert [n for name, n in calls if name == "craftax"] == [16, 32, 64, 64, 64, 128, 256]
    # alemlite is timed at each size (each round), before the peers, until none is left.
    ours = [(row["num_envs"], row["round"]) for row in rows if row["peer"] == "alemlite"]
    assert ours == [(16, 0), (32, 0), (64, 0), (64, 1), (64, 2), (128, 0), (256, 0)]
    row = next(r for r in rows if (r["peer"], r.get("mode"), r["num_envs"]) == ("alem", "fast", 64))
    assert row["alemlite_env_steps_per_s"] == _alemlite_rate(64)
    assert row["ratio"] == pytest.approx(_alemlite_rate(64) / 800.0)


def test_a_peer_is_swept_past_the_ratio_batch_even_without_gains(peers, calls):
    # Up to ratio_envs nothing stops a peer; the ratio batch is timed even if not listed;
    # past it the first batch without the gain asked for is the last.
    config = CraftBenchConfig(peer_envs=(128, 16, 32, 256), ratio_envs=64, peer_stop_gain=100.0)
    _sweep(config, [peers["alem"]])
    assert [n for _, n in calls] == [16, 32, 64, 64, 64, 128]


def test_a_peer_of_one_environment_at_a_time_is_timed_once_beside_one(peers, calls):
    alone = Peer("engine", peers["alem"][0].time, batched=False)
    rows = _sweep(CraftBenchConfig(peer_envs=(16, 32), peer_steps=7), [(alone, None)])
    assert calls == [("alem", 1)]
    assert [(row["peer"], row["num_envs"], row["round"]) for row in rows[:2]] == [
        ("alemlite", 1, 0),
        ("alem", 1, 0),
    ]


def test_ratios_at_the_ratio_batch_and_at_each_sides_best(peers):
    config = CraftBenchConfig(peer_envs=(16, 32, 64, 128, 256, 512), ratio_envs=64)
    rows = _sweep(config, [peers["alem"]])
    sweep = [{"num_envs": 4096, "policy": "hashed", "env_steps_per_s": 3e6}]
    ours = sweep + [row for row in rows if row["peer"] == "alemlite"]
    found = ratios(ours, rows, 64)
    assert set(found) == {"alem/fast", "alem/slow"}
    slow = found["alem/slow"]
    one_round = {
        "alemlite_env_steps_per_s": _alemlite_rate(64),
        "peer_env_steps_per_s": 400.0,
        "ratio": _alemlite_rate(64) / 400.0,
    }
    assert slow["at_ratio_envs"] == {"num_envs": 64, **one_round, "rounds": [one_round] * 3}
    # The peer's best is at 256 envs (505), alemlite's at 4096 in the sweep.
    assert slow["at_best"] == {
        "alemlite_num_envs": 4096,
        "alemlite_env_steps_per_s": 3e6,
        "peer_num_envs": 256,
        "peer_env_steps_per_s": 505.0,
        "ratio": 3e6 / 505.0,
    }
    assert slow["peer_batches"] == [16, 32, 64, 128, 256]


def test_the_headline_ratio_is_the_median_of_paired_rounds(peers):
    # The host speeds up and slows down between rounds: each round's ratio pairs alemlite
    # with the peer timed just after it, and the headline is the median of those ratios.
    speed = iter([1.0, 1.0, 2.0, 2.0, 0.5, 0.5])  # alemlite, then alem, in each round
    peer_time = peers["alem"][0].time

    def slowed(options, run):
        rows = peer_time(options, run)
        factor = next(speed)
        return [{**row, "env_steps_per_s": row["env_steps_per_s"] * factor} for row in rows]

    config = CraftBenchConfig(peer_envs=(64,), ratio_envs=64, ratio_rounds=3)
    ours = _alemlite_timed_at(lambda num_envs: 60_000.0 * next(speed))
    rows = _sweep(config, [(Peer("alem", slowed, "setup"), Path("a"))], ours)
    beside = [row for row in rows if row["peer"] == "alemlite"]
    at = ratios(beside, rows, 64)["alem/slow"]["at_ratio_envs"]
    # Every round's ratio is 60,000 / 400 = 150 although the rates swing fourfold.
    assert [r["ratio"] for r in at["rounds"]] == pytest.approx([150.0] * 3)
    assert at["ratio"] == pytest.approx(150.0)
    assert [r["peer_env_steps_per_s"] for r in at["rounds"]] == [400.0, 800.0, 200.0]
    assert at["peer_env_steps_per_s"] == 400.0
    assert at["alemlite_env_steps_per_s"] == pytest.approx(60_000.0)


def test_no_peer_given_times_nothing_beside(calls):
    assert _sweep(CraftBenchConfig(), []) == []
    assert calls == []


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("compile_runs", -1, "compile_runs=-1 must be at least 0"),
        ("peer_stop_gain", 0.5, "peer_stop_gain=0.5 must be at least 1.0"),
        ("ratio_envs", 0, "ratio_envs=0 must be at least 1"),
        ("ratio_rounds", 0, "ratio_rounds=0 must be at least 1"),
        ("map_size_check", (16, 3), "map_size_check=\\(16, 3\\)"),
    ],
)
def test_bad_sweep_settings_are_refused(field, value, message):
    with pytest.raises(ConfigError, match=message):
        CraftBenchConfig(**{field: value})


def test_the_median_ratio_is_of_the_rounds_ratios_not_of_the_median_rates():
    rows = [
        {"alemlite_env_steps_per_s": ours, "env_steps_per_s": peer, "ratio": ours / peer}
        for ours, peer in ((100.0, 1.0), (400.0, 2.0), (90.0, 3.0))
    ]
    at = median_round(rows, 64)
    # Ratios 100, 200 and 30: their median is 100; the medians' ratio would be 100 / 2.
    assert at["ratio"] == 100.0
    assert (at["alemlite_env_steps_per_s"], at["peer_env_steps_per_s"]) == (100.0, 2.0)
    assert [r["ratio"] for r in at["rounds"]] == [100.0, 200.0, 30.0]


def test_a_peer_line_names_its_map_and_jax_version(capsys):
    """Each peer's report names its world's size and JAX version, the headline's per-side
    setup (a peer's step costs with its map as much as with its batch)."""
    import jax

    from benchmarks.peers.protocol import report

    timing = {"compile_s": 1.0, "median_s": 0.5, "min_s": 0.4, "max_s": 0.6, "repeats": 3}
    report("alem", "step", 4, 8, 3, timing, (48, 64))
    line = json.loads(capsys.readouterr().out)
    assert (line["map_size"], line["jax_version"]) == ([48, 64], jax.__version__)
    assert (line["env_steps_per_s"], line["agent_steps_per_s"]) == (64.0, 192.0)
