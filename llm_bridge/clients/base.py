"""What every model backend returns, the interface the runner calls, and its one fatal error."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from alemlite.core.errors import ConfigError

# OpenAI chat messages: `content` is a string, or a list of content parts (text and images).
ChatMessages = list[dict[str, Any]]

# How a reply was asked for: the server chose among the legal actions through vLLM's
# `guided_choice` extension, through a JSON schema (`response_format`, OpenAI's or llama.cpp's
# dialect), or a local model
# through its logits (only tokens of legal names allowed); or it answered freely; or a local
# model's likelihood of each legal action chose (nothing generated).
OUTPUT_MODES = (
    "constrained:guided_choice",
    "constrained:json_schema",
    "constrained:json_object",
    "constrained:logits",
    "free",
    "loglik",
)


# `user:password@` after a URL's scheme: a server's credentials, never written or printed.
_USERINFO = re.compile(r"(?<=://)[^/?#@\s]*@")


def without_userinfo(text: str) -> str:
    """`text` with the user info (`user:password@`) of every URL in it removed."""
    return _USERINFO.sub("", text)


class ModelServerError(ConfigError):
    """The model server refuses the run's requests (a wrong key, URL or model name): no
    retry helps, so the run stops at once. A `ConfigError`, so that the `alemlite` command
    prints the message in one line and exits with status 2."""


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
    reasoning: str | None = None  # the server's separate reasoning part, if it sent one
    cut_off: bool = False  # the token budget (--max-tokens) ended the reply
    mode: str = "free"  # one of OUTPUT_MODES
    choice_probs: dict[str, float] | None = None  # loglik: each legal action's probability

    @property
    def failed(self) -> bool:
        return bool(self.error)


class Backend(Protocol):
    """A chat model: `complete` is called concurrently by the runner.

    `complete` returns a failed `Completion` for a request that may succeed later (the
    runner counts it, and a resumed run asks it again), and raises `ModelServerError`
    when the server refuses the requests themselves.
    """

    name: str

    async def complete(
        self,
        messages: ChatMessages,
        seed: int | None = None,
        choices: Sequence[str] | None = None,
    ) -> Completion:
        """One reply; with `choices` (constrained mode), the backend asks the model to answer
        with one of them where it can, and says in `Completion.mode` how it asked."""
        ...

    async def check(self) -> None:
        """Raise a clear error if the model cannot be reached at all."""
        ...

    async def check_images(self) -> None:
        """Raise a `ConfigError` if the model cannot read images (called in image modes)."""
        ...

    async def close(self) -> None: ...
