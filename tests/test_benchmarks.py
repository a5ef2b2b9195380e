"""The benchmark scripts run end to end and write what the README quotes (no timing asserted);
`alemlite bench` serves every registered environment; published commands still parse."""

import dataclasses
import json
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import tyro

import alemlite
from alemlite.core.errors import ConfigError, require
from alemlite_app import bench
from alemlite_app.freshness import RENAMED_FLAGS
from benchmarks.dining_throughput import DiningBenchConfig, run
from benchmarks.engine.policies import policy_episodes
from benchmarks.engine.training import TrainingSpeedConfig
from benchmarks.harness import RESULTS_DIR, hash_actions
from benchmarks.peers.table import PEERS
from benchmarks.script import run_script

ROOT = Path(__file__).resolve().parents[1]
PLATFORM = jax.devices()[0].platform
# Each published benchmark module's command line: `python -m benchmarks.NAME` -> its config.
MAIN_CONFIGS = {
    "dining_throughput": "benchmarks.dining_throughput:DiningBenchConfig",
    "craft_throughput": "benchmarks.craft_throughput:CraftBenchConfig",
    "dining_reference_policies": "benchmarks.dining_reference_policies:DiningPoliciesConfig",
    "craft_reference_teams": "benchmarks.craft_reference_teams:CraftTeamsConfig",
    "prompt_throughput": "benchmarks.prompt_throughput:PromptBenchConfig",
    "training_speed": "benchmarks.training_speed:TrainingSpeedConfig",
    "marl_dining": "benchmarks.marl_dining:MarlDiningConfig",
    "dining_references": "benchmarks.dining_references:DiningReferencesConfig",
    "matrix_references": "benchmarks.matrix_references:MatrixReferencesConfig",
    "craft_references": "benchmarks.craft_references:CraftReferencesConfig",
    "craft_imitation": "benchmarks.craft_imitation:CraftImitationConfig",
    "marl_craft": "benchmarks.marl_craft:MarlCraftConfig",
    "marl_matrix": "benchmarks.marl_matrix:MarlMatrixConfig",
    "jaxmarl_training": "benchmarks.jaxmarl_training:JaxMARLTrainingConfig",
    "gpu_suite": "benchmarks.engine.gpu:GpuSuiteConfig",
    "coordination_study": "benchmarks.study.config:StudyConfig",
    "llm_backend_speed": "benchmarks.llm_backend_speed:BackendSpeedConfig",
    "llm_backend_agreement": "benchmarks.llm_backend_agreement:BackendAgreementConfig",
    "llm_harness_speed": "benchmarks.llm_harness_speed:HarnessSpeedConfig",
}


# Flags renamed to the shared vocabulary (tests/test_options.py) since a results file recorded
# its command: a script's recorded spelling -> today's. A results file keeps the command it ran.
def small(name: str):
    env_spec = alemlite.spec(name)
    return env_spec.options(**env_spec.small_options)


def test_hashed_actions_are_legal_ids_that_vary_by_step_env_and_agent():
    actions = np.asarray(hash_actions(jnp.int32(3), 64, 5, 4))
    assert actions.shape == (64, 5) and actions.min() >= 0 and actions.max() < 4
    assert len(np.unique(actions)) == 4
    assert not np.array_equal(actions, np.asarray(hash_actions(jnp.int32(4), 64, 5, 4)))


def test_dining_benchmark_writes_results_with_the_python_engine_ratio(tmp_path):
    config = DiningBenchConfig(
        num_agents=(3,), max_log2_envs=1, steps_per_call=4, repeats=1, peer_steps=50,
        out=tmp_path,
    )  # fmt: skip
    run(config)
    result = json.loads((tmp_path / f"dining_throughput_{PLATFORM}.json").read_text())
    assert result["libraries"]["jax"] == jax.__version__ and result["commit"]
    assert {row["num_envs"] for row in result["sweep"]} == {1, 2}
    assert {row["policy"] for row in result["sweep"]} == {"hashed", "uniform_random"}
    assert result["best"]["N3_hashed"]["ratio_to_python"] > 0
    assert (tmp_path / f"dining_throughput_{PLATFORM}.png").stat().st_size > 0


def test_dining_benchmark_times_the_python_engine_without_the_tests_folder(tmp_path):
    # An installed package has no tests/ beside benchmarks/: run a copy of benchmarks/ alone.
    source = ROOT / "benchmarks"
    shutil.copytree(source, tmp_path / "benchmarks", ignore=shutil.ignore_patterns("results"))
    script = (
        "import alemlite, benchmarks, benchmarks.peers.table as peers;"
        "print(benchmarks.__file__);"
        "options = alemlite.spec('dining').options(num_agents=3);"
        "print(peers.python_engine_timing(options, 20, 1).median_s > 0)"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    package_file, timed = done.stdout.split()
    assert Path(package_file).is_relative_to(tmp_path) and timed == "True"


@pytest.mark.parametrize("env", alemlite.registered_environments())
def test_bench_sweeps_any_environment_and_times_its_in_process_peers(env, tmp_path):
    config = bench.ThroughputConfig(
        env=env, options=small(env), min_log2_envs=1, max_log2_envs=1, steps_per_call=3,
        repeats=1, pool_size=2, peer_envs=(2,), peer_steps=20, out=tmp_path,
    )  # fmt: skip
    bench.throughput(config)
    result = json.loads((tmp_path / f"throughput_{env}_{PLATFORM}.json").read_text())
    points = [(row["num_envs"], row["policy"]) for row in result["sweep"]]
    assert points == [(2, "hashed"), (2, "legal_random")]
    num_agents = result["num_agents"]
    assert all(
        row["agent_steps_per_s"] == pytest.approx(row["env_steps_per_s"] * num_agents)
        for row in result["sweep"]
    )
    assert result["state_bytes_per_env"] > 0 and result["options"] == config.options.__dict__
    # Only the in-process peers run without being pointed at a virtual environment, each
    # after alemlite is timed beside it.
    in_process = [peer.name for peer in PEERS.get(env, ()) if not peer.setup]
    assert [row["peer"] for row in result["peers"]] == [
        name for peer in in_process for name in ("alemlite", peer)
    ]
    assert {key.split("/")[0] for key in result["ratios"]} == set(in_process)
    assert all(entry["at_best"]["ratio"] > 0 for entry in result["ratios"].values())
    assert (tmp_path / f"throughput_{env}_{PLATFORM}.png").stat().st_size > 0


def test_a_peer_needs_its_interpreter_and_an_environment_that_has_it():
    with pytest.raises(alemlite.core.ConfigError, match="peers='craftax'"):
        bench.ThroughputConfig(env="craft", peers=("craftax",))
    with pytest.raises(alemlite.core.ConfigError, match="those: \\(none\\)"):
        bench.ThroughputConfig(env="dining", peers=("craftax=/usr/bin/python",))
    config = bench.ThroughputConfig(env="craft", peers=("alem=/tmp/peer-alem/bin/python",))
    assert config.peer_pythons() == {"alem": Path("/tmp/peer-alem/bin/python")}


@pytest.mark.parametrize("env", alemlite.registered_environments())
def test_bench_policies_tables_scripted_policies_of_any_environment(env, tmp_path, capsys):
    env_spec = alemlite.spec(env)
    # Two policies (every one compiles its own program): the default team and another.
    chosen = (env_spec.default_policy, min(set(env_spec.policies) - {env_spec.default_policy}))
    config = bench.PoliciesConfig(
        env=env, options=small(env), policies=chosen, episodes=3, out=tmp_path
    )
    bench.policies(config)
    result = json.loads((tmp_path / f"reference_policies_{env}_{PLATFORM}.json").read_text())
    assert set(result["policies"]) == set(chosen)
    assert result["metrics"] == ["episode_return", *env_spec.metrics]
    for summary in result["policies"].values():
        assert all(summary[metric]["n"] == 3 for metric in result["metrics"])
    table = capsys.readouterr().out
    assert all(f"| {name} | " in table for name in chosen)


def test_bench_policies_plays_every_policy_unless_told(tmp_path):
    options = small("dining")
    config = bench.PoliciesConfig(env="dining", options=options, episodes=2, out=tmp_path)
    assert set(bench.policies(config)["policies"]) == set(alemlite.spec("dining").policies)


def test_bench_policies_plays_the_seed_protocol_of_alemlite_eval():
    # The same episodes as `alemlite eval --team NAME` (seed + i): the same returns.
    from alemlite.evaluation import evaluate

    options = small("dining")
    ours = policy_episodes(alemlite.spec("dining"), options, "backoff", 5, 7)
    env = alemlite.spec("dining").build(options)
    theirs = evaluate(env, alemlite.spec("dining").policy("backoff", env), env.default_params, 5, 7)
    np.testing.assert_array_equal(ours["episode_return"], theirs["episode_return"])


def test_bench_policies_refuses_a_policy_the_environment_lacks():
    with pytest.raises(alemlite.core.ConfigError, match="policies='team' is not a dining policy"):
        bench.PoliciesConfig(env="dining", policies=("team",))


@pytest.mark.parametrize(
    "env", [name for name in alemlite.registered_environments() if alemlite.spec(name).prompts]
)
def test_bench_prompts_times_any_environments_prompt_builder(env, tmp_path):
    config = bench.PromptsConfig(env=env, options=small(env), num_envs=2, repeats=1, out=tmp_path)
    bench.prompts(config)
    result = json.loads((tmp_path / f"prompt_throughput_{env}_{PLATFORM}.json").read_text())
    (row,) = result["results"]
    assert row["prompts_per_batch"] == 2 * row["agents_per_env"] and row["mean_prompt_chars"] > 0


def test_bench_training_times_an_update_against_the_environment_alone(tmp_path):
    config = TrainingSpeedConfig(
        env="dining", options=small("dining"), algorithms=("ippo",), log2_envs=(2,),
        num_steps=4, repeats=1, out=tmp_path,
    )  # fmt: skip
    bench.training(config)
    result = json.loads((tmp_path / f"training_speed_dining_{PLATFORM}.json").read_text())
    (point,) = result["points"]
    assert point["num_envs"] == 4 and point["agent_steps_per_call"] == 4 * 4 * 3
    assert point["ippo_fraction_of_env_only"] > 0


def _published_commands() -> list[str]:
    """Every `python -m benchmarks.NAME ...` the results JSON record or the docs quote."""
    commands = set()
    for path in RESULTS_DIR.glob("*.json"):
        recorded = json.loads(path.read_text())
        machine = recorded.get("machine")  # the training benchmarks' provenance block
        command = machine.get("command") if isinstance(machine, dict) else recorded.get("command")
        if isinstance(command, str) and command.startswith("python -m benchmarks."):
            commands.add(command)
    pages = (ROOT / "README.md", ROOT / "baselines" / "README.md", *(ROOT / "docs").glob("*.md"))
    for page in pages:
        for line in page.read_text().splitlines():
            for quoted in re.findall(r"`(python -m benchmarks\.[^`]*)`", line):
                commands.add(quoted)
            if line.startswith("python -m benchmarks."):
                commands.add(line.split("#")[0].strip())
    return sorted(commands)


def test_every_benchmark_script_has_its_config_listed_for_the_parse_check():
    tools = {"provenance", "readme_tables"}  # scripts that publish nothing of their own
    scripts = {
        path.stem for path in (ROOT / "benchmarks").glob("*.py")
        if '__name__ == "__main__"' in path.read_text()
    } - tools  # fmt: skip
    missing = sorted(scripts - set(MAIN_CONFIGS))
    assert not missing, f"list in MAIN_CONFIGS: {missing}"


def parse_published(command: str):
    """The config a published command builds today, its renamed flags spelled anew."""
    words = shlex.split(command.replace("PEER/bin/python", "/tmp/peer/bin/python"))
    module = words[2].removeprefix("benchmarks.")
    renamed = RENAMED_FLAGS.get(module, {})
    module_name, class_name = MAIN_CONFIGS[module].split(":")
    config_type = getattr(__import__(module_name, fromlist=[class_name]), class_name)
    return tyro.cli(config_type, args=[renamed.get(word, word) for word in words[3:]])


@pytest.mark.parametrize("command", _published_commands())
def test_every_published_benchmark_command_still_parses(command):
    assert dataclass_fields(parse_published(command))


def dataclass_fields(config) -> dict:
    return {name: getattr(config, name) for name in config.__dataclass_fields__}


def test_the_published_craft_training_speed_command_means_what_it_did():
    from benchmarks.training_speed import TrainingSpeedConfig

    recorded = json.loads((RESULTS_DIR / "training_speed_craft_cpu.json").read_text())
    config = parse_published(recorded["command"]).benchmark()
    assert config.options == alemlite.spec("craft").options(
        num_agents=3, map_size=32, max_steps=500, difficulty="medium"
    )
    dining = tyro.cli(TrainingSpeedConfig, args=[]).benchmark()
    assert dining.env == "dining" and dining.options == alemlite.spec("dining").options()


def _script_entry(path: Path) -> str | None:
    """The call in a module's `if __name__ == "__main__":` block, as source."""
    import ast

    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and "__main__" in ast.unparse(node.test):
            return ast.unparse(node.body[0])
    return None


def test_every_benchmark_script_enters_through_run_script():
    scripts = {
        path.name: entry
        for path in sorted((ROOT / "benchmarks").glob("*.py"))
        if (entry := _script_entry(path)) is not None
    }
    assert len(scripts) >= len(MAIN_CONFIGS)
    assert {name for name, entry in scripts.items() if not entry.startswith("run_script(")} == set()


@dataclasses.dataclass(frozen=True)
class _Refusing:
    episodes: int = 4

    def __post_init__(self):
        require(self.episodes > 0, f"episodes={self.episodes} must be positive; pass --episodes N")


def test_a_refused_value_ends_a_script_in_one_line_and_debug_shows_the_traceback(capsys):
    ran = []
    run_script(_Refusing, ran.append, ["--episodes", "3"])
    assert ran == [_Refusing(3)]
    with pytest.raises(SystemExit) as exit_:
        run_script(_Refusing, ran.append, ["--episodes", "0"])
    assert exit_.value.code == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.endswith("error: episodes=0 must be positive; pass --episodes N"), line

    def refuse_while_running(config):
        raise ConfigError(f"out={config.episodes} is not a folder")

    with pytest.raises(SystemExit):
        run_script(_Refusing, refuse_while_running, [])
    assert capsys.readouterr().err.strip().endswith("error: out=4 is not a folder")
    with pytest.raises(ConfigError):
        run_script(_Refusing, ran.append, ["--episodes", "0", "--debug"])
