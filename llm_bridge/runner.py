"""B episodes in lockstep: render, ask every live LLM agent concurrently, parse, step.

The environment is the same jitted, vmapped program the MARL evaluation uses, on the
same seed protocol (`alemlite.evaluation`): episode i starts from `PRNGKey(seed + i)`
and step t draws its policy and environment keys from `fold_in(play_key, t)`. Each
step makes one device-to-host transfer of the whole batch, from which the serialiser
builds every prompt. Finished episodes stop asking. Scripted and MARL agents act
inside the compiled step, so teams can mix them with LLM seats.

Every request and response goes to the transcript as it happens; rerunning with the
same configuration and output folder resumes: answered responses already in the
transcript are reused (never asked again) where the replay asks the same prompt, failed
requests are asked again, and the rest of the run continues from there.

Reasoning models: a reply's thoughts (the server's reasoning field, or `<think>` blocks in
the text) are split from its answer (`llm_bridge.parse.split_reasoning`); the transcript
keeps both, only the answer is parsed. Replies cut off by the token budget
(`--max-tokens`, finish reason "length") and replies with thoughts but no parseable answer
are counted (`usage.cut_off`, `usage.empty_answers`); the latter play the no-op, as every
unparsed reply does.

Constrained mode (`RunConfig.constrained`) asks the server to answer with one of the
agent's legal action names (see `llm_bridge.clients.openai_backend`); the reply is then
the action alone, so agents send no messages or notes, and the system prompt's answer
format asks for the name alone, until the client steps the server down to free text: then
the free-text system prompt is sent (`llm_bridge.system_prompts`, which also says how the
transcript records it). `usage.mode` says how replies were asked. Each agent's chat keeps
its system prompt and grows as a prefix of itself between the history window's block drops
(`llm_bridge.history`), so that servers' prefix caches hit. With image observations
(`RunConfig.observation`), each user message carries the agent's view drawn by the
environment's spec (`render_agent_rgb`, the agent outlined at its centre) as a PNG, and the
observation text without what the picture shows (the builder's `picture=True`): in image
mode the stats, inventory, teammates, messages and legal actions stay in words.

A run is valid only if at most `max_failed_fraction` of its LLM turns failed (their
agents did the no-op). A run past it writes its summary with `"valid": false` and the
reason, and raises `InvalidRun`; once the failures so far exceed that share of the most
turns the run could take, it stops there rather than play on with no-ops.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import math
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from tqdm.auto import tqdm

from alemlite.core.environment import Environment
from alemlite.core.errors import ConfigError, require
from alemlite.core.prompting import PromptBuilder, PromptOptions
from alemlite.evaluation import episode_keys
from alemlite.folder_lock import hold_folder
from alemlite.report import fingerprint, format_table
from alemlite.stats import summarise
from llm_bridge.agents import Agent, LLMAgent
from llm_bridge.clients.base import OUTPUT_MODES, ChatMessages
from llm_bridge.history import History
from llm_bridge.images import OBSERVATIONS, Observation, user_content
from llm_bridge.parse import ActionParser, ParsedReply, split_reasoning
from llm_bridge.program import AgentRenderer, batch_program
from llm_bridge.system_prompts import SystemPrompts
from llm_bridge.transcripts import (
    Transcript,
    prompt_digest,
    set_aside,
    write_file,
)
from llm_bridge.usage import Turn, Usage
from llm_bridge.usage import headline as _headline  # (llm_bridge.shards imports these two)
from llm_bridge.usage import usage_table as _usage_table

RUN_FILES = ("transcript.jsonl", "transcript.jsonl.torn", "summary.json", "summary.txt")


class InvalidRun(ConfigError):
    """Too many LLM turns failed for the run to count; `report` is what was written.

    A `ConfigError`, so that the `alemlite` command prints it in one line (status 2).
    """

    def __init__(self, message: str, report: dict[str, Any]):
        super().__init__(message)
        self.report = report


@dataclass(frozen=True)
class RunConfig:
    """How many episodes, on which seeds, and where the results go."""

    episodes: int = 32
    seed: int = 0
    """base seed: episode i uses seed + i, as in `alemlite eval`"""
    out: Path = Path("runs/llm")
    resume: bool = True
    """continue from out/transcript.jsonl if it exists (same configuration only)"""
    progress: bool = True
    input_price_per_mtok: float = 0.0
    """price of a million prompt tokens, for the cost column"""
    output_price_per_mtok: float = 0.0
    max_failed_fraction: float = 0.01
    """the most LLM turns (as a share) that may fail, after retries, in a valid run"""
    constrained: bool = False
    """ask the server to choose among the legal action names (the reply is the action alone)"""
    decoding: str = "generate"
    """loglik: the backend is given the legal action names and picks one by its likelihood"""
    observation: Observation = "text"
    """what each agent is shown: the observation text, its view as an image, or both"""
    first_episode: int = 0
    """the id of the first episode played: a shard of a larger run plays episodes
    first_episode .. first_episode + episodes - 1 (episode i on seed + i) and records them so"""
    system_prompt: str | None = None
    """replaces the environment's system prompt (None: the environment's)"""
    few_shot: tuple[tuple[str, str], ...] = ()
    """(role, content) example messages sent after the system prompt in every request"""

    def __post_init__(self) -> None:
        require(self.episodes >= 1, f"episodes={self.episodes} must be at least 1")
        require(
            self.observation in OBSERVATIONS,
            f"observation={self.observation!r} must be one of: {', '.join(OBSERVATIONS)}",
        )
        require(self.first_episode >= 0, f"first_episode={self.first_episode} must be 0 or more")
        require(
            0.0 <= self.max_failed_fraction <= 1.0,
            f"max_failed_fraction={self.max_failed_fraction} must lie in [0, 1]",
        )
        for name in ("input_price_per_mtok", "output_price_per_mtok"):
            value = getattr(self, name)
            require(math.isfinite(value) and value >= 0, f"{name}={value} must be a number >= 0")


def parse_feedback_note(noop: str, free_text: bool) -> str:
    """What the next observation adds after a reply with no valid action (`noop` played)."""
    answer = "<action>NAME</action>" if free_text else "the name alone"
    return f"Note: your last reply had no valid action, so {noop} was used. Answer with {answer}."


def free_reply_text(action: str, message: str) -> str:
    """A free-text reply as an agent's chat remembers it: the played action, in its tag,
    and the message it sent, if any."""
    text = f"<action>{action}</action>"
    return text + f"<message>{message}</message>" if message else text


class EvaluationRun:
    """One evaluation: an environment, its serialiser, a team, prompt options, a run config."""

    def __init__(
        self,
        env: Environment,
        renderer: PromptBuilder,
        team: Sequence[Agent],
        options: PromptOptions,
        config: RunConfig,
        params: Any = None,
        describe: dict[str, Any] | None = None,
        noop_action: int = 0,
        render_agent: AgentRenderer | None = None,
    ):
        require(
            len(team) == env.num_agents,
            f"the team has {len(team)} agents for {env.num_agents} seats; give one per seat",
        )
        require(
            options.variant in renderer.variants,
            f"unknown prompt variant {options.variant!r} for {renderer.env_name}; "
            f"choose one of: {', '.join(renderer.variants)}",
        )
        require(options.history >= 0, f"history={options.history} must be 0 or more")
        require(
            config.observation == "text" or render_agent is not None,
            f"observation={config.observation} must be text for env={env.name}, which draws no "
            "view of an agent (its spec has no render_agent_rgb); use --observation text",
        )
        self.render_agent = render_agent
        self.env = env
        self.params = env.default_params if params is None else params
        self.renderer = renderer
        self.team = tuple(team)
        self.options = options
        self.config = config
        self.noop_action = noop_action
        # Read once: an environment may build its names anew on every read (Craft's layers).
        self.action_names = tuple(env.action_names)
        self.parser = ActionParser(self.action_names, noop_action, renderer.message_chars)
        self.prompts = SystemPrompts(
            renderer, options, config.system_prompt, config.constrained, team
        )
        self.few_shot = [{"role": role, "content": content} for role, content in config.few_shot]
        self.llm_seats = np.array(
            [s for s, agent in enumerate(team) if isinstance(agent, LLMAgent)]
        )
        max_steps = getattr(self.params, "max_steps", None)
        # The most LLM turns the run can take, if the environment says how long it can last.
        self.max_turns = (
            None
            if max_steps is None
            else config.episodes * int(np.max(np.asarray(max_steps))) * len(self.llm_seats)
        )
        self.describe = {
            **(describe or {}),
            "env": env.name,
            "team": [agent.name for agent in team],
            "prompt": dataclasses.asdict(options),
            "episodes": config.episodes,
            "seed": config.seed,
            "constrained": config.constrained,
            **({"decoding": config.decoding} if config.decoding != "generate" else {}),
            "observation": config.observation,
            **({"first_episode": config.first_episode} if config.first_episode else {}),
            # The prompt's own text where it is not the environment's free-text one (the run's
            # hash changes).
            **(
                {"system_prompt_sha256": prompt_digest([self.prompts.first])}
                if config.system_prompt is not None or config.constrained
                else {}
            ),
            **({"few_shot_sha256": prompt_digest(self.few_shot)} if self.few_shot else {}),
        }

    # ---- prompts ------------------------------------------------------------------
    def _user_content(self, observation: str, episode: int, seat: int, frame: Any) -> Any:
        notes = []
        if self.options.scratchpad:
            notes.append(f"Your scratchpad: {self._scratchpads[episode, seat] or '(empty)'}")
        if self.options.parse_feedback and self._parse_failed[episode, seat]:
            noop = self.action_names[self.noop_action]
            notes.append(parse_feedback_note(noop, self.prompts.free_text(seat)))
        return user_content(self.config.observation, observation, "\n".join(notes), frame)

    def _chat(self, content: Any, episode: int, seat: int) -> ChatMessages:
        return [
            {"role": "system", "content": self.prompts.for_seat(seat)},
            *self.few_shot,
            *self._history[episode][seat].messages(),
            {"role": "user", "content": content},
        ]

    def _assistant_text(self, reply: ParsedReply, seat: int) -> str:
        if not self.prompts.free_text(seat):  # as the constrained reply itself: the name alone
            return self.action_names[reply.action]
        message = reply.message if self.options.communication else ""
        return free_reply_text(self.action_names[reply.action], message)

    # ---- one turn -------------------------------------------------------------------
    async def _turn(
        self, episode: int, step: int, seat: int, content: Any, legal: np.ndarray
    ) -> Turn:
        chat = self._chat(content, episode, seat)
        stepped_down = self.config.constrained and self.prompts.free_text(seat)
        asked = chat[1 + len(self.few_shot) :]  # the system prompt and examples are in the header
        # An answer is reused only for the very prompt it answered: after a failed turn is
        # asked again, the rest of its episode may go another way and ask other prompts.
        cached = self._transcript.cached  # a fresh run has none, and hashes no prompt
        completion = None
        if cached:
            episode_id = self.config.first_episode + episode
            completion = cached.get((episode_id, step, seat, prompt_digest(asked)))
        reused = completion is not None
        if not reused:
            backend = self.team[seat].backend
            if self.config.constrained or self.config.decoding == "loglik":
                choices = np.asarray(self.action_names)[legal.astype(bool)].tolist()
                completion = await backend.complete(chat, choices=choices)
            else:
                completion = await backend.complete(chat)
        thoughts, answer = split_reasoning(completion.text)
        reasoning = "\n".join(r for r in (completion.reasoning, thoughts) if r) or None
        turn = Turn(episode, seat, content, completion, reasoning, self.parser(answer))
        if not reused:
            self._transcript.write(
                {
                    "type": "turn",
                    "episode": self.config.first_episode + episode,
                    "step": step,
                    "seat": seat,
                    "model": self.team[seat].name,
                    "prompt": asked,
                    "reply": answer,
                    "reasoning": reasoning,
                    "cut_off": completion.cut_off,
                    "mode": completion.mode,
                    **({"system": "free"} if stepped_down else {}),
                    "prompt_tokens": completion.prompt_tokens,
                    "completion_tokens": completion.completion_tokens,
                    "latency_s": round(completion.latency_s, 6),
                    "attempts": completion.attempts,
                    "error": completion.error,
                    "server": completion.server,
                    "action": self.action_names[turn.reply.action],
                    "parse": turn.reply.method,
                    "message": turn.reply.message,
                    **(
                        {"choice_probs": completion.choice_probs}
                        if completion.choice_probs is not None
                        else {}
                    ),
                }
            )
        self._usage.add(turn, reused)
        return turn

    def _remember(self, turns: list[Turn], step_messages: np.ndarray) -> None:
        for turn in turns:
            episode, seat, reply = turn.episode, turn.seat, turn.reply
            self._history[episode][seat].add(turn.user_content, self._assistant_text(reply, seat))
            if self.options.communication:
                step_messages[episode, seat] = reply.message
            if self.options.scratchpad and reply.scratchpad:
                self._scratchpads[episode, seat] = reply.scratchpad
            self._parse_failed[episode, seat] = not reply.parsed

    # ---- the run ----------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        """Play every episode to its end (resuming if possible); write and return the report."""
        return asyncio.run(self._run())

    async def _run(self) -> dict[str, Any]:
        out = Path(self.config.out)
        header = {
            "config": self.describe,
            **self.prompts.header(),
            **({"few_shot": self.few_shot} if self.few_shot else {}),
        }
        with hold_folder(out, ".run.lock", "LLM evaluation", "--out"):
            if not self.config.resume and (kept := set_aside(out, RUN_FILES)):
                _say(f"--no-resume: the earlier files of {out} are kept in {kept}")
            with Transcript(
                out / "transcript.jsonl", fingerprint(self.describe), header, self.config.resume
            ) as transcript:
                self._transcript = transcript
                for note in transcript.notes:
                    _say(note)
                if transcript.resumed:
                    _say(
                        f"resuming {out}: {len(transcript.cached)} answered turns on file are "
                        f"reused, {transcript.failed_records} failed ones are asked again"
                    )
                llm_agents = [agent for agent in self.team if isinstance(agent, LLMAgent)]
                backends = list({id(a.backend): a.backend for a in llm_agents}.values())
                try:
                    for backend in backends:
                        # Images first: a model that reads none is refused before it loads.
                        if self.config.observation != "text":
                            await backend.check_images()
                        await backend.check()
                    episodes, wall_s, stopped_at = await self._play()
                finally:
                    for backend in backends:
                        await backend.close()
                report = self._report(episodes, wall_s, stopped_at)
                transcript.write(
                    {
                        "type": "end",
                        "valid": report["valid"],
                        "reason": report["reason"],
                        "summary": report.get("summary"),
                        "usage": report["usage"],
                    }
                )
            write_file(out / "summary.json", json.dumps(report, indent=2, default=str) + "\n")
            write_file(out / "summary.txt", report["table"] + "\n")
        if not report["valid"]:
            raise InvalidRun(
                f"the run is not valid: {report['reason']}; wrote {out / 'summary.json'} with "
                '"valid": false. The transcript keeps every turn: rerun the same command to '
                "ask the failed ones again",
                report,
            )
        return report

    async def _play(self) -> tuple[dict[str, np.ndarray] | None, float, int | None]:
        """Play to the end: (per-episode metrics, wall seconds, None); or, stopped early for
        too many failed turns, (None, wall seconds, the step it stopped at)."""
        num_episodes, num_seats = self.config.episodes, self.env.num_agents
        program = batch_program(self.env, self.params, self.team)
        host_params = jax.device_get(self.params)
        self._usage = Usage(num_episodes)
        self._history = [
            [History(self.options.history) for _ in range(num_seats)] for _ in range(num_episodes)
        ]
        frames = None if self.config.observation == "text" else program.frames(self.render_agent)
        self._scratchpads = np.full((num_episodes, num_seats), "", dtype=object)
        self._parse_failed = np.zeros((num_episodes, num_seats), bool)
        messages = np.full((num_episodes, num_seats), "", dtype=object)

        compiling = time.perf_counter()
        first_seed = self.config.seed + self.config.first_episode
        state, play_keys = program.reset(episode_keys(first_seed, num_episodes))
        done = jnp.zeros(num_episodes, bool)
        episode_return = jnp.zeros((num_episodes, num_seats), jnp.float32)
        length = jnp.zeros(num_episodes, jnp.int32)
        actions = jnp.zeros((num_episodes, num_seats), jnp.int32)
        # Compiled before the clock starts: wall_s and requests_per_s count no compile.
        program.warm(state, play_keys, done, episode_return, length, actions, frames)
        self._usage.compile_s = time.perf_counter() - compiling
        started, cpu_started = time.perf_counter(), time.process_time()
        bar = tqdm(total=num_episodes, unit="ep", disable=not self.config.progress, desc="episodes")
        step = 0
        was_done = np.zeros(num_episodes, bool)
        while True:
            # The one device-to-host transfer of this step.
            host_state, host_done, (host_active, host_mask), host_actions, host_frames = (
                jax.device_get(
                    (state, done, program.view(state), actions, frames and frames(state))
                )
            )
            if step > 0:
                played = {
                    "live": (np.flatnonzero(~was_done) + self.config.first_episode).tolist(),
                    "actions": host_actions[~was_done].tolist(),
                }
                # A resumed run that asked a failed turn again may have played it otherwise.
                if self._transcript.steps.get(step - 1) != played:
                    self._transcript.write({"type": "step", "step": step - 1, **played})
            bar.update(int(host_done.sum()) - bar.n)
            if host_done.all():
                break
            turns = await self._ask_all(
                host_state, host_params, host_done, host_active, host_mask, host_frames,
                messages, step,
            )  # fmt: skip
            if self._past_failure_budget():
                bar.close()
                self._usage.cpu_s = time.process_time() - cpu_started
                return None, time.perf_counter() - started, step
            llm_actions = np.full((num_episodes, num_seats), self.noop_action, np.int32)
            messages = np.full((num_episodes, num_seats), "", dtype=object)
            for turn in turns:
                llm_actions[turn.episode, turn.seat] = turn.reply.action
            # Before remembering: a reply that stepped down was free text, and is kept so.
            self.prompts.note_step_downs(turns)
            self._remember(turns, messages)
            was_done = host_done
            state, done, episode_return, length, actions = program.step(
                state, play_keys, done, episode_return, length, jax.device_put(llm_actions), step
            )
            step += 1
            self._progress(bar, step, started)
        bar.close()
        episodes = jax.device_get(program.metrics(state, episode_return, length))
        self._usage.cpu_s = time.process_time() - cpu_started
        return (
            {name: np.asarray(values) for name, values in episodes.items()},
            time.perf_counter() - started,
            None,
        )

    def _past_failure_budget(self) -> bool:
        """Whether the failures so far already make the run invalid, however long it lasts."""
        failed = int(self._usage.failed_requests.sum())
        return (
            self.max_turns is not None and failed > self.config.max_failed_fraction * self.max_turns
        )

    async def _ask_all(
        self, state, params, done, active, mask, frames, messages, step
    ) -> list[Turn]:
        if not self.llm_seats.size:
            return []
        asking = ~done[:, None] & active[:, self.llm_seats]
        episode_index, seat_index = np.nonzero(asking)
        seats = self.llm_seats[seat_index]
        shown = messages if self.options.communication else np.full_like(messages, "")
        observations = self.renderer.observations(
            state, params, episode_index, seats, shown, mask, self.options,
            picture=self.config.observation == "image",
        )  # fmt: skip
        tasks = [
            asyncio.ensure_future(
                self._turn(
                    e, step, s,
                    self._user_content(text, e, s, None if frames is None else frames[e, s]),
                    mask[e, s],
                )
            )
            for e, s, text in zip(
                episode_index.tolist(), seats.tolist(), observations, strict=True
            )
        ]  # fmt: skip
        try:
            return await asyncio.gather(*tasks)
        except BaseException:
            # One turn stopped the run (the server refused, the disk is full): the others of
            # the step are cancelled before anything more is written.
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    def _progress(self, bar: tqdm, step: int, started: float) -> None:
        usage = self._usage
        turns = int(usage.turns.sum())
        elapsed = max(time.perf_counter() - started, 1e-9)
        bar.set_postfix(
            step=step,
            req_s=f"{(turns - usage.reused) / elapsed:.1f}",
            parse=f"{usage.parsed.sum() / max(turns, 1):.3f}",
            refresh=False,
        )

    # ---- results ------------------------------------------------------------------------
    def _report(
        self, episodes: dict[str, np.ndarray] | None, wall_s: float, stopped_at: int | None
    ) -> dict[str, Any]:
        usage = self._usage
        counts = usage.counts()
        totals = usage.totals(
            self._mode(),
            self.config.observation,
            (self.config.input_price_per_mtok, self.config.output_price_per_mtok),
            wall_s,
        )
        reason = self._usage.invalid_reason(
            counts, self.config.max_failed_fraction, stopped_at, self.max_turns
        )
        headline = _headline(counts)
        top = headline + (f"\nNOT VALID: {reason}" if reason else "")
        report: dict[str, Any] = {
            "valid": reason is None,
            "reason": reason,
            "complete": episodes is not None,
            "turns": counts,
            "headline": headline,
            "config": self.describe,
        }
        if episodes is None:  # stopped early: no episode finished its play as asked
            report["usage"] = totals
            report["table"] = top + "\n\n" + _usage_table(totals)
            return report
        if self.llm_seats.size:
            episodes = {
                **episodes,
                "parse_rate": usage.parsed / np.maximum(usage.turns, 1),
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "failed_requests": usage.failed_requests,
            }
        summary = summarise(episodes)
        agents = ", ".join(dict.fromkeys(agent.name for agent in self.team))
        title = f"{self.env.name}: {agents} ({self.options.variant})"
        table = format_table(summary, title) + "\n\n" + _usage_table(totals)
        return {
            **report,
            "summary": summary,
            "episodes": {name: np.asarray(values).tolist() for name, values in episodes.items()},
            "usage": totals,
            "table": top + "\n\n" + table,
        }

    def _mode(self) -> str:
        """How the run's replies were asked: the mode of most answered turns (every one of
        them unless servers differ, or none answered: then what the run asked for)."""
        if self._usage.modes:
            return self._usage.modes.most_common(1)[0][0]
        if self.config.decoding == "loglik":
            return "loglik"
        return OUTPUT_MODES[0] if self.config.constrained else "free"


def _say(note: str) -> None:
    """A note for the user about the run's files (on stderr, beside the progress bar)."""
    print(f"note: {note}", file=sys.stderr, flush=True)


def run_evaluation(
    env: Environment,
    renderer: PromptBuilder,
    team: Sequence[Agent],
    options: PromptOptions,
    config: RunConfig,
    params: Any = None,
    describe: dict[str, Any] | None = None,
    render_agent: AgentRenderer | None = None,
) -> dict[str, Any]:
    """Evaluate `team` on `config.episodes` episodes; see `EvaluationRun`. `render_agent`
    (the spec's `render_agent_rgb`) draws agents' views for image observations.

    Raises `InvalidRun` (after writing the summary) when too many LLM turns failed.
    """
    return EvaluationRun(
        env, renderer, team, options, config, params, describe, render_agent=render_agent
    ).run()
