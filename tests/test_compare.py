"""`alemlite compare`: the rliable aggregates beside the per-metric tests."""

import json

import numpy as np
import pytest

from alemlite.cli import main


def test_compare_adds_the_iqm_and_probability_of_improvement(tmp_path, capsys):
    # Every episode of A beats every one of B; A's outlier moves its mean, not its IQM.
    values = {"a": [5.0, 6.0, 7.0, 8.0, 100.0, 6.5, 7.5, 5.5], "b": [1.0, 2.0, 3.0, 4.0]}
    for name, episodes in values.items():
        (tmp_path / f"{name}.json").write_text(json.dumps({"episodes": {"score": episodes}}))
    out = tmp_path / "cmp.json"
    main(["compare", str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--out", str(out)])
    entry = json.loads(out.read_text())["score"]
    assert entry["probability_of_improvement"] == 1.0
    assert entry["probability_of_improvement_ci"] == [1.0, 1.0]
    assert entry["iqm_a"] == pytest.approx(np.mean([6.0, 6.5, 7.0, 7.5]))
    assert entry["iqm_b"] == pytest.approx(2.5)
    assert entry["iqm_ci_a"][0] < entry["iqm_a"] < entry["iqm_ci_a"][1]
    printed = capsys.readouterr().out
    assert "Welch p" in printed and "P(A > B)" in printed and "1.000 [1.000, 1.000]" in printed
