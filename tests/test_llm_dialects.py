"""Every server's dialect: request fields passed through as given, a server that refuses
`max_tokens` and `temperature` as OpenAI's reasoning models do played to the end, per-model
files (`--model-config`), and system-prompt and few-shot files in the run's fingerprint."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

import alemlite
from alemlite.core.errors import ConfigError
from alemlite.envs.dining.policies import DINING_POLICIES
from alemlite.evaluation import evaluate
from alemlite_app.cli import main
from llm_bridge.agents import LLMAgent
from llm_bridge.clients.base import ModelServerError
from llm_bridge.clients.openai_backend import OpenAIBackend, OpenAIConfig
from llm_bridge.options import LLMOptions, PromptSwitches
from llm_bridge.runner import RunConfig, run_evaluation
from tests.llm_server import ChatServer, dining_resource_ordering

ROOT = Path(__file__).resolve().parents[1]
EPISODES, PHILOSOPHERS, MAX_STEPS, SEED = 3, 4, 6, 5


def wait(messages: list[dict]) -> str:
    return "<action>WAIT</action>"


def ask(config: OpenAIConfig, text: str = "hello") -> tuple:
    backend = OpenAIBackend(config)

    async def once():
        try:
            return await backend.complete([{"role": "user", "content": text}])
        finally:
            await backend.close()

    return asyncio.run(once())


def test_request_fields_are_sent_as_given_and_temperature_none_is_not_sent():
    fields = {
        "reasoning_effort": "low",
        "top_p": 0.9,
        "stop": ["</action>"],
        "chat_template_kwargs": {"enable_thinking": False},
        "any": {"nested": [1, "two"]},
    }
    with ChatServer(wait) as server:
        config = OpenAIConfig(
            model="scripted", base_urls=(server.base_url,), temperature=None, seed=7,
            token_field="max_completion_tokens", max_tokens=99, request_fields=fields,
        )  # fmt: skip
        assert not ask(config).failed
    (body,) = server.log.bodies
    assert body == {
        "model": "scripted",
        "messages": [{"role": "user", "content": "hello"}],
        "seed": 7,
        "max_completion_tokens": 99,
        **fields,
    }


def test_a_refused_field_is_stepped_down_once_then_refusal_stops_the_run(capfd):
    with ChatServer(wait, refused_fields=["max_tokens", "seed"]) as server:
        completion = ask(OpenAIConfig(model="scripted", base_urls=(server.base_url,), seed=3))
        assert not completion.failed and completion.attempts == 1  # a refusal is no attempt
    first, second, third = server.log.bodies
    assert "max_tokens" in first and "max_completion_tokens" in second and "seed" in second
    assert "seed" not in third and third["max_completion_tokens"] == 256
    err = capfd.readouterr().err
    assert f"note: {server.base_url} refused max_tokens (400: Unsupported parameter" in err
    assert "sending the token budget as max_completion_tokens from now on" in err
    assert "refused seed" in err and "leaving seed out from now on" in err
    # Refused under both names: nothing is left to step down, and the run stops in one line.
    both = ["max_tokens", "max_completion_tokens"]
    refusal = r"answered 400 .*'max_completion_tokens'"
    with (
        ChatServer(wait, refused_fields=both) as server,
        pytest.raises(ModelServerError, match=refusal),
    ):
        ask(OpenAIConfig(model="scripted", base_urls=(server.base_url,)))
    # A 400 that names a field but refuses no field (a prompt too long) is no step-down.
    with ChatServer(wait, refused_fields=["messages"]) as server:
        with pytest.raises(ModelServerError, match="answered 400"):
            ask(OpenAIConfig(model="scripted", base_urls=(server.base_url,)))
        assert len(server.log.bodies) == 1


def test_a_reasoning_model_server_is_played_to_the_end(tmp_path, capfd):
    """The server refuses max_tokens and temperature; the run steps down and plays every
    episode as the scripted policy does, with no failed turn."""
    env = alemlite.make("dining", num_philosophers=PHILOSOPHERS, max_steps=MAX_STEPS)
    policy = DINING_POLICIES["resource_ordering"]
    direct = evaluate(env, policy, env.default_params, EPISODES, SEED)
    refused = ["max_tokens", "temperature"]
    with ChatServer(dining_resource_ordering, refused_fields=refused) as server:
        backend = OpenAIBackend(
            OpenAIConfig(model="scripted", base_urls=(server.base_url,), concurrency=8)
        )
        config = RunConfig(episodes=EPISODES, seed=SEED, out=tmp_path, progress=False)
        report = run_evaluation(
            env, alemlite.spec("dining").prompts(env), [LLMAgent(backend, "scripted")] * 4,
            alemlite.spec("dining").prompt_defaults, config,
        )  # fmt: skip
    assert report["valid"] and report["usage"]["failed_requests"] == 0
    assert report["episodes"]["meals"] == direct["meals"].tolist()
    answered = [body for body in server.log.bodies if not set(refused) & set(body)]
    assert len(answered) == report["usage"]["requests"]  # every turn, once stepped down
    assert all(body["max_completion_tokens"] == 256 for body in answered)
    assert server.log.unsupported_refused["max_tokens"] >= 1
    assert server.log.unsupported_refused["temperature"] >= 1
    err = capfd.readouterr().err
    assert "leaving temperature out from now on" in err


# ---- model files -------------------------------------------------------------------------


@pytest.mark.parametrize("path", sorted((ROOT / "models").glob("*.toml")), ids=lambda p: p.stem)
def test_every_shipped_model_file_reads_into_options(path):
    options = LLMOptions(model_config=path)
    assert options.model != LLMOptions().model and options.context_length
    assert options.max_tokens < options.context_length
    assert re.fullmatch(r"[A-Z][A-Z0-9_]*", options.api_key_env)  # a variable's name
    backend = options.make_backend()
    assert backend.config.request_fields == options.request()


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


def test_a_model_file_fills_the_options_and_flags_win(tmp_path):
    model_file = write(
        tmp_path / "m.toml",
        'model = "reasoner"\nbase_url = ["http://a/v1", "http://b/v1"]\n'
        'temperature = "omit"\ntoken_field = "max_completion_tokens"\nmax_tokens = 900\n'
        'input_price_per_mtok = 1.5\ncontext_length = 2000\nreasoning_effort = "low"\n'
        "[request]\nchat_template_kwargs = { enable_thinking = false }\n",
    )
    options = LLMOptions(model_config=model_file, max_tokens=100, request_fields='{"top_k": 5}')
    assert options.base_url == ("http://a/v1", "http://b/v1") and options.temperature is None
    assert options.max_tokens == 100  # the flag, not the file's 900
    assert options.input_price_per_mtok == 1.5 and options.context_length == 2000
    assert options.request() == {
        "chat_template_kwargs": {"enable_thinking": False},
        "top_k": 5,
        "reasoning_effort": "low",
    }
    described = options.describe()
    assert described["token_field"] == "max_completion_tokens"
    assert described["request"] == options.request() and described["temperature"] is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('api_key = "abc"', "holds an API key; keys never go in files: set api_key_env"),
        ('model = "m"\n# sk-abcdefghijklmnopqrstuvwx', "holds an API key"),
        ('modle = "m"', "sets modle, which it may not; a model file takes: model, base_url"),
        ('temperature = "hot"', "temperature='hot'; give a number, or \"omit\""),
        ("model = ", "is no valid TOML"),
        ("max_tokens = 5000\ncontext_length = 4096", "leaves no room for a prompt"),
        ('request = "x"', "sets request to no table"),
    ],
)
def test_a_bad_model_file_is_refused_in_one_line(tmp_path, text, message):
    model_file = write(tmp_path / "bad.toml", text)
    with pytest.raises(ConfigError, match=re.escape(message)) as caught:
        LLMOptions(model_config=model_file)
    assert "\n" not in str(caught.value)


def test_eval_llm_with_a_model_file_writes_no_key(tmp_path, monkeypatch, capfd):
    secret = "KeyOfTheReasoner0123456789"
    monkeypatch.setenv("REASONER_KEY", secret)
    out = tmp_path / "run"
    with ChatServer(dining_resource_ordering, refused_fields=["max_tokens"]) as server:
        model_file = write(
            tmp_path / "reasoner.toml",
            f'model = "scripted"\nbase_url = "{server.base_url}"\napi_key_env = "REASONER_KEY"\n'
            'output_price_per_mtok = 1000000.0\n[request]\nreasoning_effort = "high"\n',
        )
        main(
            [
                "eval-llm", "--model-config", str(model_file), "--episodes", "2",
                "--num-agents", "3", "--max-steps", "3", "--out", str(out), "--no-progress",
            ]
        )  # fmt: skip
    assert all(body["reasoning_effort"] == "high" for body in server.log.bodies)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["config"]["request"] == {"reasoning_effort": "high"}
    assert summary["usage"]["cost"] == summary["usage"]["completion_tokens"]  # $1 a token
    files = [path for path in tmp_path.rglob("*") if path.is_file() and path != model_file]
    assert all(secret.encode() not in path.read_bytes() for path in files)
    printed = capfd.readouterr()
    assert secret not in printed.out + printed.err


# ---- system prompt and few-shot files --------------------------------------------------------


def test_system_prompt_and_few_shot_files_are_sent_and_fingerprinted(tmp_path):
    system = write(tmp_path / "system.txt", "You dine. Reply <action>NAME</action>.\n")
    examples = [
        {"role": "user", "content": "Step 1. You are HUNGRY."},
        {"role": "assistant", "content": "<action>GRAB_LEFT</action>"},
    ]
    few_shot = write(tmp_path / "few_shot.json", json.dumps(examples))
    runs = {}
    with ChatServer(dining_resource_ordering) as server:
        for name, flags in {
            "plain": [],
            "system": ["--system-prompt", str(system)],
            "both": ["--system-prompt", str(system), "--few-shot", str(few_shot)],
        }.items():
            first = len(server.log.bodies)
            main(
                [
                    "eval-llm", "--base-url", server.base_url, "--model", "scripted",
                    "--episodes", "2", "--num-agents", "3", "--max-steps", "3",
                    "--out", str(tmp_path / name), "--no-progress", *flags,
                ]
            )  # fmt: skip
            runs[name] = server.log.bodies[first:]
    system_message = {"role": "system", "content": system.read_text().strip()}
    assert runs["system"][0]["messages"][0] == system_message
    assert all(body["messages"][:3] == [system_message, *examples] for body in runs["both"])
    assert runs["plain"][0]["messages"][0]["content"] != system_message["content"]
    headers = {
        name: json.loads((tmp_path / name / "transcript.jsonl").read_text().splitlines()[0])
        for name in runs
    }
    assert len({header["fingerprint"] for header in headers.values()}) == 3
    assert headers["both"]["few_shot"] == examples
    assert headers["both"]["config"]["few_shot"]["file"] == str(few_shot)
    assert headers["system"]["system_prompt"] == system_message["content"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "is no valid JSON"),
        ("[]", "give a JSON list of messages"),
        ('[{"role": "system", "content": "x"}]', 'message 0 is {"role": "system"'),
    ],
)
def test_a_bad_few_shot_file_is_refused_in_one_line(tmp_path, text, message):
    few_shot = write(tmp_path / "few.json", text)
    with pytest.raises(ConfigError, match=re.escape(message)) as caught:
        PromptSwitches(few_shot=few_shot)
    assert "\n" not in str(caught.value)


def test_a_refused_constraint_field_steps_down_the_mode_not_the_fields():
    with ChatServer(wait, refused_fields=["guided_choice"]) as server:
        backend = OpenAIBackend(OpenAIConfig(model="scripted", base_urls=(server.base_url,)))

        async def once():
            try:
                return await backend.complete([{"role": "user", "content": "hi"}], choices=["A"])
            finally:
                await backend.close()

        completion = asyncio.run(once())
    assert completion.mode == "constrained:json_schema" and completion.text == '{"action": "A"}'
    refused, answered = server.log.bodies
    assert "guided_choice" in refused and "response_format" in answered
    assert answered["max_tokens"] == 256 and answered["temperature"] == 0.0  # fields kept
