"""An agent's remembered turns, kept so that its chat grows as a prefix cache likes.

Model servers (vLLM, SGLang) reuse the computation of a prompt's longest cached prefix.
A chat whose messages at turn t+1 begin with exactly the messages of turn t (system
prompt, remembered turns, the last observation) recomputes only the last answer and the
new observation. A sliding window of the last K turns breaks that every turn once full:
dropping the oldest turn changes the chat right after the system prompt.

So the window is dropped in blocks: it remembers at most K turns, always the most recent;
when a new turn would make K + 1, the oldest ceil(K / 2) are forgotten at once. Between
those drops (one every ceil(K / 2) turns) each turn's chat extends the previous one byte
for byte, and the agent remembers between K - ceil(K / 2) + 1 and K turns (K = 8: 5 to 8,
and 3 of every 4 turns extend the previous chat). K = 0 remembers nothing; K = 1 cannot
extend (each turn replaces the one remembered turn).
"""

from __future__ import annotations

from typing import Any

Turn = tuple[Any, str]  # (the user message's content, the assistant's answer)


class History:
    """The remembered (observation, answer) turns of one agent in one episode."""

    def __init__(self, limit: int):
        self.limit = limit
        self.turns: list[Turn] = []

    def add(self, user: Any, assistant: str) -> None:
        if not self.limit:
            return
        if len(self.turns) == self.limit:
            del self.turns[: (self.limit + 1) // 2]
        self.turns.append((user, assistant))

    def messages(self) -> list[dict[str, Any]]:
        """The remembered turns as chat messages, oldest first."""
        return [
            message
            for user, assistant in self.turns
            for message in (
                {"role": "user", "content": user},
                {"role": "assistant", "content": assistant},
            )
        ]
