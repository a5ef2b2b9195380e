"""Per-model settings in a TOML file (`--model-config models/NAME.toml`), so that a run of
many models is a list of files, not a page of flags:

    model = "gpt-5-mini"
    base_url = "https://api.openai.com/v1"     # or a list of URLs, load-balanced
    api_key_env = "OPENAI_API_KEY"              # the variable's name: never the key itself
    max_tokens = 4096
    token_field = "max_completion_tokens"       # how the token budget is sent
    temperature = "omit"                        # a number, or "omit": not sent
    reasoning_effort = "low"
    input_price_per_mtok = 0.25                 # US dollars per million prompt tokens
    output_price_per_mtok = 2.0
    context_length = 400000

    [request]                                   # more fields of every request, as given
    verbosity = "low"

A file's values apply to the options still at their defaults: a flag given on the command
line wins. A file that holds a key (`api_key`, or a value that looks like one) is refused:
keys come from the environment variable `api_key_env` names, and no output file holds one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from alemlite.core.errors import ConfigError, require

# Every key a model file may set: the options of the same name (`LLMOptions`), and `request`.
MODEL_FILE_KEYS = (
    "model",
    "base_url",
    "api_key_env",
    "temperature",
    "max_tokens",
    "token_field",
    "top_p",
    "reasoning_effort",
    "stop",
    "model_seed",
    "concurrency",
    "timeout_s",
    "max_retries",
    "input_price_per_mtok",
    "output_price_per_mtok",
    "context_length",
    "request",
)
# What an API key looks like (OpenAI's sk-..., bearer tokens): refused wherever it appears.
_KEY_LIKE = re.compile(r"\b(sk|pk|rk)-[A-Za-z0-9_-]{16,}|\bBearer\s+\S{16,}")


def read_model_file(path: Path) -> dict[str, Any]:
    """The options a model file sets, by option name (`base_url` as a tuple, `temperature`
    "omit" as None); one-line `ConfigError`s for anything else."""
    try:
        import tomllib  # read only when a model file is given
    except ModuleNotFoundError:
        raise ConfigError(f"model_config={path} needs Python 3.11 or newer (tomllib)") from None

    require(path.is_file(), f"model_config={path} is no file; give a models/NAME.toml")
    text = path.read_text()
    try:
        values = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"model_config={path} is no valid TOML: {error}") from None
    require(
        "api_key" not in values and not _KEY_LIKE.search(text),
        f"model_config={path} holds an API key; keys never go in files: set "
        'api_key_env = "NAME" and export NAME=<key> in the environment',
    )
    unknown = sorted(set(values) - set(MODEL_FILE_KEYS))
    require(
        not unknown,
        f"model_config={path} sets {', '.join(unknown)}, which it may not; a model file "
        f"takes: {', '.join(MODEL_FILE_KEYS)}",
    )
    if isinstance(values.get("base_url"), str):
        values["base_url"] = (values["base_url"],)
    elif "base_url" in values:
        values["base_url"] = tuple(values["base_url"])
    if "stop" in values:
        values["stop"] = (
            tuple(values["stop"]) if isinstance(values["stop"], list) else (values["stop"],)
        )
    if "temperature" in values and isinstance(values["temperature"], str):
        require(
            values["temperature"] == "omit",
            f"model_config={path} sets temperature={values['temperature']!r}; give a number, "
            'or "omit" for a model that takes only its default',
        )
        values["temperature"] = None
    require(
        isinstance(values.get("request", {}), dict),
        f"model_config={path} sets request to no table; write [request] and its fields below",
    )
    return values
