"""A real inference server that alemlite did not write: llama.cpp's OpenAI-compatible server
(`llama-cpp-python[server]`, built from source by `make llama-server`, which `make test`
runs) serving SmolLM2-135M's GGUF file on 127.0.0.1, played in free text and constrained.

The server ignores vLLM's `guided_choice` (it answers freely) and refuses OpenAI's
`json_schema` response format with a 500 validation error; it takes a `json_object` with a
schema. The client finds that out on the first step and plays constrained from then on."""

from __future__ import annotations

import json

import pytest

from alemlite_app.cli import main
from llm_bridge.clients.llama_server import serve
from llm_bridge.models import cached_file
from llm_bridge.transcripts import read_records

MODEL = "smollm2-135m"
pytest.importorskip(
    "llama_cpp.server", reason="llama.cpp's server is not built (make llama-server builds it)"
)
pytestmark = pytest.mark.skipif(
    not cached_file(MODEL).is_file(),
    reason=f"{MODEL} is not fetched: run `make model` (make test does)",
)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("llama-server") / "server.log"
    with serve(cached_file(MODEL), MODEL, log) as base_url:
        yield base_url


def _play(server, tmp_path, *flags):
    out = tmp_path / "run"
    main(
        [
            "eval-llm", "--env", "dining", "--num-agents", "3", "--max-steps", "3",
            "--episodes", "2", "--base-url", server, "--model", MODEL,
            "--max-tokens", "24", "--out", str(out), *flags,
        ]
    )  # fmt: skip
    summary = json.loads((out / "summary.json").read_text())
    turns = [r for r in read_records(out / "transcript.jsonl") if r["type"] == "turn"]
    return summary, turns


def test_free_text_against_llama_cpp(server, tmp_path):
    summary, turns = _play(server, tmp_path)
    assert summary["valid"] and summary["usage"]["mode"] == "free"
    assert summary["usage"]["failed_requests"] == 0
    assert turns and all(t["server"] == server and t["completion_tokens"] > 0 for t in turns)


def test_constrained_against_llama_cpp_steps_down_to_its_json_dialect(server, tmp_path, capsys):
    summary, turns = _play(server, tmp_path, "--constrained")
    notes = capsys.readouterr().err
    assert "ignored constrained:guided_choice" in notes
    assert "refused constrained:json_schema (500" in notes
    assert summary["usage"]["mode"] == "constrained:json_object"
    answered = [t for t in turns if t["mode"] == "constrained:json_object"]
    assert answered and all(t["parse"] != "failed" for t in answered if not t["cut_off"])
    for turn in answered:
        if not turn["cut_off"]:  # the grammar holds a complete reply to the legal names
            assert json.loads(turn["reply"])["action"] == turn["action"]


def test_the_backend_agreement_benchmark_pairs_the_two_stacks_turn_by_turn(tmp_path):
    from benchmarks.llm_backend_agreement import BackendAgreementConfig, run

    config = BackendAgreementConfig(
        num_agents=3, max_steps=1, episodes=1, max_tokens=24, out=tmp_path
    )  # fmt: skip
    result = run(config)
    (written_file,) = tmp_path.glob("llm_backend_agreement_*.json")
    written = json.loads(written_file.read_text())
    assert written["stacks"] == json.loads(json.dumps(result["stacks"]))
    stacks = result["stacks"]
    assert stacks["transformers/constrained"]["mode"] == "constrained:logits"
    assert stacks["llama.cpp/constrained"]["mode"] == "constrained:json_object"
    for name, stack in stacks.items():
        assert stack["valid"] and stack["failed_requests"] == 0, name
        assert stack["turns"] >= 3 and abs(sum(stack["action_share"].values()) - 1) < 1e-9
    for agreement in result["agreement"].values():
        # Every seat's first prompt is the same text on both stacks (same seed, same template).
        assert agreement["same_prompt_turns"] >= 3
        assert 0 <= agreement["first_step_same_action_share"] <= 1
