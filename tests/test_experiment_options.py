"""Whether a rerun repeats the published experiment: the options that moved between them."""

from alemlite_app.experiment_options import moved_options, script_options
from alemlite_app.freshness import module_file


def test_the_options_that_moved_are_named_with_renames_followed_and_bookkeeping_left_out():
    published = {"config": {"ppo": {"lr": 0.1}, "sizes": [5], "publish": False, "out": "a"}}
    rerun = {"config": {"ppo": {"lr": 0.1, "rewards": "team"}, "num_agents": [5], "out": "b"}}
    assert moved_options(published, published) == []
    assert moved_options(published, rerun, {"sizes": "num_agents"}) == [
        "ppo.rewards: absent -> team"
    ]
    assert moved_options(published, rerun) == [
        "num_agents: absent -> [5]",
        "ppo.rewards: absent -> team",
        "sizes: [5] -> absent",
    ]
    assert moved_options({"config": {"a": [1, 2]}}, {"config": {"a": [1, 3]}}) == [
        "a: [1, 2] -> [1, 3]"
    ]
    assert moved_options({"value": 1.0}, rerun) == []  # an older layout records no options


def test_a_scripts_options_are_read_from_its_flags_without_running_it():
    path = module_file("benchmarks.marl_dining")
    options = script_options("benchmarks.marl_dining", path, ["--num-agents", "5", "10"])
    assert options["num_agents"] == [5, 10] and options["ppo"]["rewards"] == "team"
    assert options["runs_dir"] == "runs/marl_dining"  # paths as their JSON records them
    assert script_options("benchmarks.harness", module_file("benchmarks.harness"), []) is None
