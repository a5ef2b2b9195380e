"""Published figures equal what current code renders from the results files they cite."""

import json
from pathlib import Path

import pytest

import baselines
from alemlite.evaluation import evaluate
from benchmarks import (
    craft_references,
    dining_references,
    matrix_references,
    readme_tables,
    reference_tables,
    references,
)
from benchmarks.harness import RESULTS_DIR
from benchmarks.study.plots import plot_study
from benchmarks.study.report import kept_conclusions, markdown_report

DOCS = Path(__file__).resolve().parents[1] / "docs"


def test_every_readme_table_has_a_renderer_and_matches_its_json():
    used = set()
    for page in readme_tables.PAGES:
        text = page.read_text()
        used.update(readme_tables.blocks(text))
        _, changed = readme_tables.render(text)
        assert changed == [], (
            f"{page.name} tables differ from their JSON: {changed}; "
            "run `python -m benchmarks.readme_tables`"
        )
    assert used == set(readme_tables.TABLES)


def test_a_changed_number_is_caught():
    text = readme_tables.PAGES[0].read_text()
    tampered = text.replace(" philosopher steps/s (", " philosopher steps/s, (", 1)
    assert tampered != text
    _, changed = readme_tables.render(tampered)
    assert changed == ["dining_throughput"]


def test_the_study_report_is_the_one_its_json_renders(tmp_path):
    report = DOCS / "coordination_study.md"
    results = json.loads((RESULTS_DIR / "coordination_study_cpu.json").read_text())
    plotted = plot_study(results, tmp_path)
    # The report links the published figures, which carry the same names.
    figures = {name: DOCS / "figures" / path.name for name, path in plotted.items()}
    for path in figures.values():
        assert path.exists(), path
    current = report.read_text()
    assert markdown_report(results, figures, DOCS, kept_conclusions(current)) == current


# Every shipped policy but Craft's, which are not replayed here: their 128 test episodes on a
# 32 x 32 map compile and run for minutes.
REPLAYED = [name for name in reference_tables.SHIPPED if "craft" not in name]
CARDS = {
    "dining": dining_references.card,
    "matrix": matrix_references.card,
    "craft": craft_references.card,
}


@pytest.mark.parametrize("name", REPLAYED)
def test_the_shipped_policy_scores_its_published_return(name):
    policy = baselines.load(name)
    results_file, run_name, _ = reference_tables.SHIPPED[name]
    results = readme_tables.load(results_file)
    run = results["runs"][run_name or results["chosen"]["algorithm"]]
    env = policy.make_env()
    episodes = evaluate(
        env, policy.state_policy(env), env.default_params, run["test_episodes"], run["test_seed"]
    )
    published = run["best"]["return_per_seed"][policy.description["seed_index"]]
    assert abs(float(episodes["episode_return"].mean()) - published) < 1e-5
    if run_name is None:  # a reference: its card's return is this replay's too
        assert abs(results["test"]["return"]["mean"] - published) < 1e-5


@pytest.mark.parametrize(
    "name", [name for name, shipped in reference_tables.SHIPPED.items() if shipped[1] is None]
)
def test_a_shipped_reference_card_is_the_one_its_json_renders(name):
    results_file = reference_tables.SHIPPED[name][0]
    results = readme_tables.load(results_file)
    card = (baselines.PRETRAINED_DIR / name / "CARD.md").read_text()
    assert card == CARDS[name.split("-")[0]](name, results, results_file)


def test_a_card_tests_the_method_by_seed_as_well_as_the_shipped_seed_by_episode():
    """The N = 3 `paper` reference: its shipped seed beats every scripted policy over the
    test episodes, but two of its method's four seeds end at 0.50, so by seed it does not."""
    results = readme_tables.load("dining_reference_3_paper.json")
    card = dining_references.card("dining-3-paper", results, "dining_reference_3_paper.json")
    rows = [line.split(" | ") for line in card.splitlines() if line.startswith("| all_wait")]
    assert [row[3:] for row in rows] == [["yes", "0.51", "no |"]]
    assert "By seed, MAPPO's margin is not significant" in card
    assert references.by_seed_p([1.0, 2.0, 3.0], 0.0) < 0.05
    assert references.by_seed_p([1.0, 2.0, 3.0], 3.0) > 0.5  # one-sided: above only
    assert references.p_value(references.by_seed_p([2.0, 2.0], 2.0)) == "undefined"


ADAPTERS = sorted(RESULTS_DIR.glob("finetune_*/*/best/**/adapter_config.json"))


@pytest.mark.parametrize("config", ADAPTERS, ids=lambda p: str(p.parent.relative_to(RESULTS_DIR)))
def test_a_published_adapter_names_the_clean_commit_of_its_run(config):
    """peft's `adapter_config.json` has no place for provenance: the `provenance.json` beside
    it (or, in runs of the older layout, beside the adapter folders) carries it, and must
    name the clean tree and commit of the run that kept the adapter."""
    run = next(p for p in config.parents if (p / "summary.json").is_file())
    folders = config.parents[: config.parents.index(run)]
    stamps = [folder / "provenance.json" for folder in folders]
    assert any(s.is_file() for s in stamps), f"{config} has no provenance.json by it"
    stamp = json.loads(next(s for s in stamps if s.is_file()).read_text())["provenance"]
    recorded = json.loads((run / "summary.json").read_text())["provenance"]
    assert stamp["dirty"] is False and stamp["diff_sha256"] is None
    assert stamp["commit"] == recorded["commit"] and stamp["command"] == recorded["command"]


def test_every_fine_tuning_run_publishes_its_adapters():
    runs = {p.parent for p in RESULTS_DIR.glob("finetune_*/*/summary.json")}
    assert runs and runs == {next(p for p in c.parents if p in runs) for c in ADAPTERS}
