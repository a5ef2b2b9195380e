"""Accounting over an LLM evaluation's turns: answered, failed, unparsed, tokens, latency,
and the harness's own time; the usage lines of the run's summary."""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from llm_bridge.clients.base import OUTPUT_MODES, Completion
from llm_bridge.parse import PARSE_METHODS, ParsedReply


@dataclass
class Turn:
    episode: int
    seat: int
    user_content: Any  # the user message's content: text, or text and image parts
    completion: Completion
    reasoning: str | None
    reply: ParsedReply


@dataclass
class Usage:
    """Accounting over the LLM turns of the run (per episode where it becomes a metric)."""

    num_episodes: int
    turns: np.ndarray = dataclasses.field(init=False)
    parsed: np.ndarray = dataclasses.field(init=False)
    failed_requests: np.ndarray = dataclasses.field(init=False)
    prompt_tokens: np.ndarray = dataclasses.field(init=False)
    completion_tokens: np.ndarray = dataclasses.field(init=False)
    latencies: list[float] = dataclasses.field(default_factory=list)
    methods: Counter = dataclasses.field(default_factory=Counter)
    modes: Counter = dataclasses.field(default_factory=Counter)  # answered turns by mode
    cut_off: int = 0
    empty_answers: int = 0
    attempts: int = 0
    reused: int = 0
    last_error: str = ""
    compile_s: float = 0.0  # compiling the batch's programs, before the clock started
    cpu_s: float = 0.0  # this process's CPU time over the play

    def __post_init__(self) -> None:
        for name in ("turns", "parsed", "failed_requests", "prompt_tokens", "completion_tokens"):
            setattr(self, name, np.zeros(self.num_episodes, np.int64))

    def add(self, turn: Turn, reused: bool) -> None:
        completion = turn.completion
        self.turns[turn.episode] += 1
        self.parsed[turn.episode] += turn.reply.parsed
        self.failed_requests[turn.episode] += completion.failed
        self.prompt_tokens[turn.episode] += completion.prompt_tokens
        self.completion_tokens[turn.episode] += completion.completion_tokens
        self.methods[turn.reply.method] += 1
        self.attempts += completion.attempts
        self.reused += reused
        if completion.failed:
            self.last_error = completion.error
        else:
            self.latencies.append(completion.latency_s)
            self.modes[completion.mode] += 1
            self.cut_off += completion.cut_off
            self.empty_answers += turn.reasoning is not None and not turn.reply.parsed

    def counts(self) -> dict[str, int]:
        """LLM turns: answered, failed (no answer after retries), unparsed (answered, no action)."""
        total, failed = int(self.turns.sum()), int(self.failed_requests.sum())
        answered = total - failed
        return {
            "total": total,
            "answered": answered,
            "failed": failed,
            "unparsed": answered - int(self.parsed.sum()),
        }

    def invalid_reason(
        self,
        counts: dict[str, int],
        limit: float,
        stopped_at: int | None,
        max_turns: int | None,
    ) -> str | None:
        """Why the run is not valid (more than `limit` of its turns failed; `stopped_at`: the
        step it stopped at for that), or None."""
        last = " ".join(self.last_error.split())[:160]
        if stopped_at is not None:
            return (
                f"stopped at step {stopped_at}: {counts['failed']} LLM turns failed after "
                f"retries (last error: {last}), more than max_failed_fraction={limit} of the "
                f"at most {max_turns} turns of the run"
            )
        if counts["failed"] <= limit * counts["total"]:
            return None
        return (
            f"{counts['failed']} of {counts['total']} LLM turns failed after retries "
            f"({counts['failed'] / counts['total']:.1%}, more than "
            f"max_failed_fraction={limit}; last error: {last})"
        )

    def totals(
        self, mode: str, observation: str, prices_per_mtok: tuple[float, float], wall_s: float
    ) -> dict[str, Any]:
        """The run's usage block: counts, tokens, cost (input and output prices per million
        tokens), latency, throughput and the harness's own time."""
        counts = self.counts()
        turns = counts["total"]
        latencies = np.asarray(self.latencies) if self.latencies else np.zeros(1)
        prompt_tokens, completion_tokens = (
            int(self.prompt_tokens.sum()),
            int(self.completion_tokens.sum()),
        )
        return {
            "requests": turns,
            "reused_from_transcript": self.reused,
            "retries": self.attempts - turns,
            "failed_requests": counts["failed"],
            "parse_rate": float(self.parsed.sum() / max(turns, 1)),
            "parse_methods": {method: self.methods[method] for method in PARSE_METHODS},
            "cut_off": self.cut_off,
            "empty_answers": self.empty_answers,
            "mode": mode,
            "modes": {name: self.modes[name] for name in OUTPUT_MODES if self.modes[name]},
            "observation": observation,
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "latency_mean_s": float(latencies.mean()),
            "latency_p50_s": float(np.percentile(latencies, 50)),
            "latency_p95_s": float(np.percentile(latencies, 95)),
            "cost": (prompt_tokens * prices_per_mtok[0] + completion_tokens * prices_per_mtok[1])
            / 1e6,
            "wall_s": wall_s,
            "requests_per_s": (turns - self.reused) / max(wall_s, 1e-9),
            "compile_s": self.compile_s,
            # The harness's own time (this process's CPU: environment, prompts, client,
            # parsing, transcript) beside the time a request took to be answered.
            "client_cpu_ms_per_turn": 1e3 * self.cpu_s / max(turns - self.reused, 1),
            "server_ms_per_request": 1e3 * float(latencies.mean()),
        }


def headline(counts: dict[str, int]) -> str:
    if not counts["total"]:
        return "LLM turns: none (no LLM seat played)"
    return (
        f"LLM turns: {counts['answered']} answered, {counts['failed']} failed, "
        f"{counts['unparsed']} unparsed (of {counts['total']})"
    )


def usage_table(totals: dict[str, Any]) -> str:
    methods = ", ".join(f"{name} {count}" for name, count in totals["parse_methods"].items())
    lines = [
        f"requests {totals['requests']} (reused {totals['reused_from_transcript']}, "
        f"retries {totals['retries']}, failed {totals['failed_requests']})",
        f"parse rate {totals['parse_rate']:.3f} ({methods}); cut off by --max-tokens "
        f"{totals['cut_off']}, empty answers after reasoning {totals['empty_answers']}",
        f"mode {totals['mode']}, observation {totals['observation']}",
        f"tokens {totals['prompt_tokens']} in / {totals['completion_tokens']} out, "
        f"cost {totals['cost']:.4f}",
        f"latency mean {totals['latency_mean_s']:.3f}s, p50 {totals['latency_p50_s']:.3f}s, "
        f"p95 {totals['latency_p95_s']:.3f}s; {totals['requests_per_s']:.1f} requests/s",
    ]
    names = ("client_cpu_ms_per_turn", "server_ms_per_request", "compile_s")
    client, server, compile_s = (totals.get(name) for name in names)
    # One number each (merged shards list theirs apart, older runs have none).
    if all(isinstance(value, (int, float)) for value in (client, server, compile_s)):
        lines.append(
            f"harness: client {client:.3f} ms CPU per turn, server {server:.3f} ms per request; "
            f"compile {compile_s:.2f}s before the clock"
        )
    return "\n".join(lines)
