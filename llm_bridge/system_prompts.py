"""Which system prompt each request of a run carries.

A free-text run sends one system prompt: the environment's (its builder's
`system_prompt(options)`), or the run's own (`--system-prompt FILE`), the same for every
request. A constrained run starts with the environment's constrained prompt, whose
answer-format section says that the server restricts each reply to a legal action name and
asks for the name alone. Its client steps a server down to free text once the server refuses
or ignores every constraint (`llm_bridge.clients.openai_backend`), and says so in the
completion's `mode`; from the next step on, every seat of that backend is asked with the
free-text prompt, which asks for `<action>NAME</action>` (a backend spread over several
servers switches at its first server's step-down). The turn that stepped down was asked with
the constrained prompt. A run's own system prompt is sent as written in both modes.

What is recorded: the transcript's header keeps `system_prompt` (the prompt the run starts
with) and, in a constrained run, `free_system_prompt`; a turn asked with the latter says
`"system": "free"`. A constrained run's fingerprint holds the digest of its constrained
prompt, so a transcript written under another one is not resumed as if it were the same run.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from alemlite.core.prompting import PromptBuilder, PromptOptions
from llm_bridge.agents import Agent
from llm_bridge.usage import Turn


class SystemPrompts:
    """The run's system prompts, and which backends stepped down to free text."""

    def __init__(
        self,
        renderer: PromptBuilder,
        options: PromptOptions,
        own: str | None,
        constrained: bool,
        team: Sequence[Agent],
    ):
        self.free = own or renderer.system_prompt(options)
        self.constrained = (own or renderer.system_prompt(options, True)) if constrained else None
        self._backends = [getattr(agent, "backend", None) for agent in team]
        self._stepped_down: set[int] = set()  # ids of backends answering in free text

    @property
    def first(self) -> str:
        """The prompt the run starts with (the header's `system_prompt`)."""
        return self.free if self.constrained is None else self.constrained

    def header(self) -> dict[str, Any]:
        """What the transcript's header records of them."""
        if self.constrained is None:
            return {"system_prompt": self.free}
        return {"system_prompt": self.constrained, "free_system_prompt": self.free}

    def free_text(self, seat: int) -> bool:
        """Whether `seat` is asked for free text (a free-text run, or its backend stepped
        down): replies then come in tags, else as the action name alone."""
        return self.constrained is None or id(self._backends[seat]) in self._stepped_down

    def for_seat(self, seat: int) -> str:
        return self.free if self.free_text(seat) else self.first

    def note_step_downs(self, turns: Iterable[Turn]) -> None:
        """After a step: the backends that answered a constrained request in free text."""
        if self.constrained is None:
            return
        for turn in turns:
            completion = turn.completion
            if completion.mode == "free" and not completion.failed:
                self._stepped_down.add(id(self._backends[turn.seat]))
