"""What every model backend returns, and the interface the runner calls."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

ChatMessages = list[dict[str, str]]


@dataclass(frozen=True)
class Completion:
    """One answered (or finally failed) request, with its accounting."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0  # wall time of the successful attempt
    attempts: int = 1  # 1 + retries
    error: str = ""  # non-empty when every attempt failed; `text` is then ""
    server: str = ""  # which base URL answered

    @property
    def failed(self) -> bool:
        return bool(self.error)


class Backend(Protocol):
    """A chat model: `complete` is called concurrently by the runner."""

    name: str

    async def complete(self, messages: ChatMessages, seed: int | None = None) -> Completion: ...

    async def check(self) -> None:
        """Raise a clear error if the model cannot be reached at all."""
        ...

    async def close(self) -> None: ...
