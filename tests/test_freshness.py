"""The freshness audit of published results, on a small git repository the test builds."""

import json
import socket
import subprocess
import sys

import pytest

from alemlite_app import experiment_options, freshness


def git(repo, *args):
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


def commit_all(repo, message):
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", message)
    return subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout.strip()


@pytest.fixture
def repo(tmp_path):
    """benchmarks.speed imports alemlite.env at the top; alemlite.env imports alemlite.rules
    inside a function; alemlite.unused is imported by nobody."""
    files = {
        "alemlite/__init__.py": "",
        "alemlite/env.py": "def step():\n    from alemlite import rules\n    return rules.N\n",
        "alemlite/rules.py": "N = 1\n",
        "alemlite/unused.py": "M = 1\n",
        "benchmarks/__init__.py": "",
        "benchmarks/speed.py": "from alemlite.env import step\n",
    }
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    git(tmp_path, "init", "-q")
    return tmp_path


def record(commit, dirty=False, command="python -m benchmarks.speed --publish"):
    return {"value": 1.0, "provenance": {"commit": commit, "dirty": dirty, "command": command}}


def test_the_closure_follows_imports_inside_functions_and_skips_unimported_modules(repo):
    files = {
        path.relative_to(repo).as_posix() for path in freshness.closure("benchmarks.speed", repo)
    }
    assert files == {
        "benchmarks/__init__.py", "benchmarks/speed.py", "alemlite/__init__.py",
        "alemlite/env.py", "alemlite/rules.py",
    }  # fmt: skip


def test_a_result_goes_stale_when_code_it_runs_changes_and_only_then(repo):
    commit = commit_all(repo, "first")
    path = repo / "result.json"
    assert freshness.judge(path, record(commit), repo).fresh
    (repo / "alemlite" / "unused.py").write_text("M = 2\n")
    commit_all(repo, "a module the benchmark never imports")
    assert freshness.judge(path, record(commit), repo).fresh
    (repo / "alemlite" / "rules.py").write_text('"""The rules."""\n\nN = (\n    1  # one\n)\n')
    commit_all(repo, "a docstring, a comment and a new layout: the same program")
    assert freshness.judge(path, record(commit), repo).fresh
    (repo / "alemlite" / "rules.py").write_text("N = 2\n")
    commit_all(repo, "a rule the benchmark runs")
    verdict = freshness.judge(path, record(commit), repo)
    assert verdict.reasons == ["code changed since: alemlite/rules.py"]


def test_registry_entries_count_where_their_name_is_written_and_named_packages_bring_data(repo):
    files = {
        "alemlite/registry.py": (
            'ENVS = {"toy": "alemlite.toy.spec:SPEC", "other": "alemlite.other:SPEC"}\n'
        ),
        "alemlite/other.py": "SPEC = 2\n",
        "alemlite/toy/__init__.py": "",
        "alemlite/toy/spec.py": 'TEMPLATES = "alemlite.toy.prompts"\nSPEC = 1\n',
        "alemlite/toy/prompts/__init__.py": "",
        "alemlite/toy/prompts/turn.txt": "Choose an action.\n",
        "alemlite/toy/prompts/icon.png": "\x89PNG",
        "benchmarks/speed.py": 'from alemlite.registry import ENVS\n\nENV = "toy"\n',
        "benchmarks/paths.py": 'RESULTS = ("benchmarks", "results")\n',  # a folder, no module
    }
    for name, text in files.items():
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(text)
    toy = {
        "benchmarks/__init__.py", "benchmarks/speed.py", "alemlite/__init__.py",
        "alemlite/registry.py", "alemlite/toy/__init__.py", "alemlite/toy/spec.py",
        "alemlite/toy/prompts/__init__.py", "alemlite/toy/prompts/turn.txt",
        "alemlite/toy/prompts/icon.png",
    }  # fmt: skip

    def closure(command=""):
        found = freshness.closure("benchmarks.speed", repo, command)
        return {path.relative_to(repo).as_posix() for path in found}

    assert closure() == toy  # "other" is never named: its module never loads
    assert closure("python -m benchmarks.speed --env other") == toy | {"alemlite/other.py"}

    commit = commit_all(repo, "first")
    (repo / "alemlite/other.py").write_text("SPEC = 3\n")
    commit_all(repo, "an environment the benchmark never loads")
    assert freshness.judge(repo / "result.json", record(commit), repo).fresh
    (repo / "alemlite/toy/prompts/turn.txt").write_text("Choose one action.\n")
    commit_all(repo, "a prompt template the environment reads")
    verdict = freshness.judge(repo / "result.json", record(commit), repo)
    assert verdict.reasons == ["code changed since: alemlite/toy/prompts/turn.txt"]


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        ({"dirty": True}, "dirty tree"),
        ({"dirty": None}, "tree state not recorded"),
        ({"command": None}, "no command recorded"),
        ({"commit": "0" * 40}, f"commit {'0' * 40} not in this history"),
        ({"command": "python -m benchmarks.absent"}, "command runs no repository module"),
    ],
)
def test_a_result_without_a_full_provenance_block_is_stale(repo, changes, reason):
    commit = commit_all(repo, "first")
    block = {**record(commit)["provenance"], **changes}
    verdict = freshness.judge(repo / "r.json", {"provenance": block}, repo)
    assert any(found.startswith(reason) for found in verdict.reasons), verdict.reasons


def test_a_run_folder_is_judged_by_the_file_that_carries_its_provenance(repo):
    commit = commit_all(repo, "first")
    results = repo / "results"
    (results / "run" / "reports").mkdir(parents=True)
    (results / "run" / "summary.json").write_text(json.dumps(record(commit)))
    (results / "run" / "reports" / "best.json").write_text(json.dumps({"mean": 0.3}))
    (results / "loose.json").write_text(json.dumps({"mean": 0.3}))
    older = {"commit": commit, "dirty": "False", "command": "python -m benchmarks.speed"}
    (results / "older.json").write_text(json.dumps({"machine": older}))  # the training layout
    found = {
        v.path.relative_to(results).as_posix(): v.reasons for v in freshness.verdicts(results, repo)
    }
    assert found == {"run/summary.json": [], "loose.json": ["no provenance"], "older.json": []}


def test_a_recorded_command_is_rerun_as_spelled_today_and_published():
    words = freshness.republish_command("python -m benchmarks.training_speed --agents 3")
    assert words == [
        sys.executable,
        "-m",
        "benchmarks.training_speed",
        "--num-agents",
        "3",
        "--publish",
    ]
    words = freshness.republish_command("alemlite gap --env dining --publish")
    assert words == [
        sys.executable,
        "-m",
        "alemlite_app.cli",
        "gap",
        "--env",
        "dining",
        "--publish",
    ]


def test_cli_commands_are_traced_from_the_module_that_runs_them():
    assert (
        freshness.entry_module("python -m alemlite_app.cli finetune grpo --env dining")
        == "alemlite_app.finetune"
    )
    assert freshness.entry_module("alemlite bench gpu") == "benchmarks.engine.gpu"
    assert freshness.entry_module("python -m benchmarks.marl_craft") == "benchmarks.marl_craft"


SHIPPING_BENCHMARK = """
import sys
from pathlib import Path

Path("benchmarks/results").mkdir(parents=True, exist_ok=True)
Path("benchmarks/results/speed.json").write_text('{"value": 2.0}')
Path("benchmarks/results/old.json").unlink(missing_ok=True)
Path("baselines/pretrained/p").mkdir(parents=True)
Path("baselines/pretrained/p/weights.txt").write_text(" ".join(sys.argv[1:]))
sys.exit(Path("FAIL").exists())
"""


def test_each_command_is_republished_in_a_worktree_of_the_head_and_its_outputs_come_back(repo):
    (repo / "benchmarks/ship.py").write_text(SHIPPING_BENCHMARK)
    (repo / "benchmarks/results").mkdir(parents=True)
    (repo / "benchmarks/results/old.json").write_text("{}")
    commit_all(repo, "first")

    # twice: the first run ships a checkpoint, which would leave a shared tree dirty
    for _ in range(2):
        assert freshness.republish_in_worktree("python -m benchmarks.ship", repo)
    assert (repo / "benchmarks/results/speed.json").read_text() == '{"value": 2.0}'
    assert not (repo / "benchmarks/results/old.json").exists()
    assert (repo / "baselines/pretrained/p/weights.txt").read_text() == "--publish"
    worktrees = subprocess.run(
        ["git", "worktree", "list"], cwd=repo, capture_output=True, text=True, check=True
    ).stdout
    assert len(worktrees.splitlines()) == 1  # the scratch trees are gone

    (repo / "FAIL").write_text("")  # committed: the command fails, nothing comes back
    (repo / "benchmarks/results/speed.json").unlink()
    commit_all(repo, "failing")
    assert not freshness.republish_in_worktree("python -m benchmarks.ship", repo)
    assert not (repo / "benchmarks/results/speed.json").exists()


def test_a_rerun_that_records_other_options_is_refused_and_names_them(repo, capsys):
    """A default changed since the publish: the same command is now another experiment."""
    rerun = {"value": 7.1, "config": {"ppo": {"lr": 0.1, "rewards": "team"}}}
    write = f"Path('benchmarks/results/speed.json').write_text({json.dumps(rerun)!r})"
    (repo / "benchmarks/ship.py").write_text(f"from pathlib import Path\n{write}\n")
    published = {"value": 3.8, "config": {"ppo": {"lr": 0.1}}}
    (repo / "benchmarks/results").mkdir(parents=True)
    (repo / "benchmarks/results/speed.json").write_text(json.dumps(published))
    commit_all(repo, "first")

    assert not freshness.republish_in_worktree("python -m benchmarks.ship", repo)
    assert json.loads((repo / "benchmarks/results/speed.json").read_text()) == published
    assert "ppo.rewards: absent -> team" in capsys.readouterr().err
    assert freshness.republish_in_worktree("python -m benchmarks.ship", repo, True)
    assert json.loads((repo / "benchmarks/results/speed.json").read_text()) == rerun


def test_a_scripts_options_are_read_before_it_runs_and_a_moved_one_stops_the_rerun(
    tmp_path, capsys
):
    """The per-seat dining runs were recorded before the team reward became the default."""
    command = "python -m benchmarks.marl_dining --sizes 5 --num-updates 200"
    options = experiment_options.script_options(
        "benchmarks.marl_dining",
        freshness.module_file("benchmarks.marl_dining"),
        ["--num-agents", "5", "--num-updates", "200"],
    )
    options["sizes"] = options.pop("num_agents")  # as recorded before the rename
    published = tmp_path / "marl_dining_5.json"
    published.write_text(json.dumps({"config": options}))
    assert not freshness.options_moved_before(command, [published])

    del options["ppo"]["rewards"]  # recorded before the option existed
    published.write_text(json.dumps({"config": options}))
    assert freshness.options_moved_before(command, [published])
    assert "(ppo.rewards: absent -> team); not rerun" in capsys.readouterr().err
    assert not freshness.options_moved_before("python -m alemlite_app.cli gap", [published])


def test_a_command_that_asks_the_stand_in_model_gets_one_on_its_port():
    command = (
        "python -m alemlite_app.cli gap --env craft --base-url http://127.0.0.1:8732/v1 "
        "--model stand-in --publish"
    )
    assert freshness.stand_in_address(command) == ("craft", 8732)
    assert freshness.stand_in_address(command.replace("stand-in", "smollm2-135m")) is None
    assert freshness.stand_in_address(command.replace("127.0.0.1", "10.0.0.2")) is None
    assert freshness.stand_in_address("python -m benchmarks.training_speed --publish") is None

    with socket.socket() as probe:  # a free port
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with freshness._stand_in_for(command.replace("8732", str(port))):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
