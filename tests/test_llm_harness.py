"""The harness's own speed: every program compiles before a run's clock starts and nothing
compiles after, the summary tells the client's time from the server's, and the harness
benchmark runs end to end against its instant server (no timing asserted)."""

from __future__ import annotations

import json
import logging

import jax
import pytest

import alemlite
from benchmarks.llm_harness_speed import HarnessSpeedConfig, run
from llm_bridge.agents import LLMAgent
from llm_bridge.clients.openai_backend import OpenAIBackend, OpenAIConfig
from llm_bridge.program import BatchProgram
from llm_bridge.runner import RunConfig, run_evaluation
from tests.llm_server import ChatServer, craft_alternating

DiningOptions = alemlite.spec("dining").options
CraftOptions = alemlite.spec("craft").options


class _Compiles(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        self.count += "Finished XLA compilation" in record.getMessage()


@pytest.fixture
def compiles():
    counter = _Compiles()
    logger = logging.getLogger("jax")
    logger.addHandler(counter)
    with jax.log_compiles(True):
        yield counter
    logger.removeHandler(counter)


def test_nothing_compiles_once_the_clock_runs(compiles, tmp_path, monkeypatch):
    """A second run (the process's host-side lookups are warm) on a batch of another size:
    its new programs all compile in `warm`, before the clock; none in the loop, though
    Craft episodes end at different steps and the seats asked change from step to step."""
    spec = alemlite.spec("craft")
    counts = []  # compiles so far: after each warm, after each run
    warm = BatchProgram.warm

    def counted_warm(self, *args):
        warm(self, *args)
        counts.append(compiles.count)

    monkeypatch.setattr(BatchProgram, "warm", counted_warm)
    with ChatServer(craft_alternating) as server:
        for episodes in (2, 3):
            env = spec.build(spec.options(num_agents=2, map_size=16, max_steps=7))
            backend = OpenAIBackend(OpenAIConfig(model="scripted", base_urls=(server.base_url,)))
            config = RunConfig(episodes=episodes, out=tmp_path / str(episodes), progress=False)
            report = run_evaluation(
                env, spec.prompts(env), [LLMAgent(backend, "scripted")] * 2,
                spec.prompt_defaults, config,
            )  # fmt: skip
            counts.append(compiles.count)
    _, first_end, second_warm, second_end = counts
    assert second_warm > first_end  # the counter sees the new batch's programs compile
    assert second_end == second_warm  # and nothing compile after they were warmed
    usage = report["usage"]
    assert usage["compile_s"] > 0 and usage["client_cpu_ms_per_turn"] > 0
    assert usage["server_ms_per_request"] == pytest.approx(1e3 * usage["latency_mean_s"])
    assert "harness: client " in report["table"] and " ms per request; compile " in report["table"]


def test_the_harness_benchmark_times_both_environments(tmp_path):
    config = HarnessSpeedConfig(
        out=tmp_path,
        dining=DiningOptions(num_agents=3, max_steps=4),
        craft=CraftOptions(num_agents=2, map_size=16, max_steps=4),
        episodes=2,
        concurrency=4,
        rounds=1,
    )
    run(config)
    (path,) = tmp_path.glob("llm_harness_speed_*.json")
    written = json.loads(path.read_text())
    assert set(written["turns_per_s"]) == {"dining", "craft"}
    for env_name, agents in (("dining", 3), ("craft", 2)):
        result = written["results"][env_name]
        (timed,) = result["runs"]
        # Every seat of every episode answered a legal action at every step.
        assert timed["turns"] == 2 * agents * 4
        assert timed["failed_requests"] == 0 and timed["parse_rate"] == 1.0
        assert result["timed_compiles"] == 0 and result["compile_s"] > 0
        assert timed["client_cpu_ms_per_turn"] > 0 and timed["server_cpu_ms_per_turn"] >= 0
    assert "commit" in written  # with its provenance
