"""Results name the code that made them: a dirty tree is refused or marked, never hidden."""

import subprocess
from pathlib import Path

import pytest

from alemlite.core.errors import ConfigError
from benchmarks import provenance
from benchmarks.harness import output_path, refuse_earlier_runs


@pytest.fixture()
def repo(tmp_path, monkeypatch):
    """A git checkout with a published results folder, standing in for the project's."""

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q")
    git("config", "user.email", "test@example.com")
    git("config", "user.name", "test")
    (tmp_path / "code.py").write_text("x = 1\n")
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "old.json").write_text("{}\n")
    git("add", ".")
    git("commit", "-q", "-m", "start")
    monkeypatch.setattr(provenance, "REPO", tmp_path)
    monkeypatch.setattr(provenance, "PUBLISHED_DIRS", (tmp_path / "results",))
    return tmp_path


def test_a_clean_tree_writes_and_names_its_commit(repo):
    run = provenance.begin_run([repo / "results"], publish=True)
    (repo / "results" / "old.json").write_text('{"new": 1}\n')  # the run's own output
    record = run.describe()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True)
    assert record["commit"] == head.stdout.strip()
    assert record["dirty"] is False and record["diff_sha256"] is None
    assert record["wall_time_s"] >= 0 and "jax" in record["libraries"]
    assert record["command"]


def test_earlier_uncommitted_results_are_data_not_a_dirty_tree(repo):
    (repo / "results" / "other.json").write_text("{}\n")
    run = provenance.begin_run([repo / "results" / "new.json"], publish=True)
    assert run.describe()["dirty"] is False


def test_a_dirty_tree_is_refused_for_published_results(repo):
    (repo / "code.py").write_text("x = 2\n")
    with pytest.raises(ConfigError, match="--allow-dirty"):
        provenance.begin_run([repo / "results"], publish=True)
    provenance.begin_run([repo / "elsewhere"])  # unpublished outputs may come from any tree


def test_published_results_are_replaced_only_when_asked(repo):
    with pytest.raises(ConfigError, match=r"old.json holds published results; pass --publish"):
        provenance.begin_run([repo / "elsewhere", repo / "results" / "old.json"])
    with pytest.raises(ConfigError, match="nothing is written into benchmarks/results/"):
        provenance.begin_run([repo / "elsewhere"], publish=True)
    assert (repo / "results" / "old.json").read_text() == "{}\n"


def test_unpublished_runs_get_a_fresh_folder_each(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    published = tmp_path / "results" / "study.json"
    first = output_path(None, False, published, "study")
    second = output_path(None, False, published, "study")
    assert first.name == "study.json" and first.parent != second.parent
    assert first.parent.parent == second.parent.parent == Path("runs/bench/study")
    assert first.parent.is_dir() and not any(first.parent.iterdir())
    assert output_path(None, True, published, "study") == published
    assert output_path(tmp_path / "mine.json", False, published, "study") == tmp_path / "mine.json"


def test_training_runs_of_an_earlier_benchmark_are_kept_unless_reused(tmp_path):
    (tmp_path / "ippo-dining-5").mkdir()
    with pytest.raises(ConfigError, match="ippo-dining-5 holds an earlier run; pass --reuse-runs"):
        refuse_earlier_runs([tmp_path / "ippo-dining-5", tmp_path / "mappo-dining-5"], False)
    refuse_earlier_runs([tmp_path / "ippo-dining-5"], True)
    refuse_earlier_runs([tmp_path / "mappo-dining-5"], False)


def test_allow_dirty_marks_the_results_with_a_hash_of_the_changes(repo):
    (repo / "code.py").write_text("x = 2\n")
    first = provenance.begin_run([repo / "results"], allow_dirty=True, publish=True).describe()
    (repo / "code.py").write_text("x = 3\n")
    second = provenance.begin_run([repo / "results"], allow_dirty=True, publish=True).describe()
    assert first["dirty"] and second["dirty"]
    assert first["diff_sha256"] != second["diff_sha256"]


def test_code_changed_during_the_run_is_refused(repo):
    run = provenance.begin_run([repo / "results"], publish=True)
    (repo / "new_module.py").write_text("y = 1\n")
    with pytest.raises(ConfigError, match="changed during the run"):
        run.describe()


def test_the_cpu_is_named_with_the_vector_extensions_xla_compiles_for(monkeypatch, tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(
        "processor\t: 0\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse4_2 avx avx2 fma\n\n"
        "processor\t: 1\nmodel name\t: AMD EPYC 7B13\nflags\t\t: fpu sse4_2 avx avx2 fma\n"
    )
    real_path = provenance.Path
    monkeypatch.setattr(
        provenance, "Path", lambda name: cpuinfo if name == "/proc/cpuinfo" else real_path(name)
    )
    assert provenance.cpu() == {
        "cpu_model": "AMD EPYC 7B13",
        "cpu_vector_extensions": ["avx2", "fma", "avx", "sse4_2"],
    }
