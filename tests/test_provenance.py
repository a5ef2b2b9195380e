"""Results name the code that made them: a dirty tree is refused or marked, never hidden."""

import subprocess

import pytest

from alemlite.core.errors import ConfigError
from benchmarks import provenance


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
    run = provenance.begin_run([repo / "results"])
    (repo / "results" / "old.json").write_text('{"new": 1}\n')  # the run's own output
    record = run.describe()
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True)
    assert record["commit"] == head.stdout.strip()
    assert record["dirty"] is False and record["diff_sha256"] is None
    assert record["wall_time_s"] >= 0 and "jax" in record["libraries"]
    assert record["command"]


def test_earlier_uncommitted_results_are_data_not_a_dirty_tree(repo):
    (repo / "results" / "other.json").write_text("{}\n")
    assert provenance.begin_run([repo / "results" / "new.json"]).describe()["dirty"] is False


def test_a_dirty_tree_is_refused_for_published_results(repo):
    (repo / "code.py").write_text("x = 2\n")
    with pytest.raises(ConfigError, match="--allow-dirty"):
        provenance.begin_run([repo / "results"])
    provenance.begin_run([repo / "elsewhere"])  # unpublished outputs may come from any tree


def test_allow_dirty_marks_the_results_with_a_hash_of_the_changes(repo):
    (repo / "code.py").write_text("x = 2\n")
    first = provenance.begin_run([repo / "results"], allow_dirty=True).describe()
    (repo / "code.py").write_text("x = 3\n")
    second = provenance.begin_run([repo / "results"], allow_dirty=True).describe()
    assert first["dirty"] and second["dirty"]
    assert first["diff_sha256"] != second["diff_sha256"]


def test_code_changed_during_the_run_is_refused(repo):
    run = provenance.begin_run([repo / "results"])
    (repo / "new_module.py").write_text("y = 1\n")
    with pytest.raises(ConfigError, match="changed during the run"):
        run.describe()
