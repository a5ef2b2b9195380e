"""Image observations: Craft agents' views go to the server as PNG data URIs in the OpenAI
message format, equal pixel for pixel to the crop of the map frame around each agent; an
environment without such a view, and a transformers model that reads no images, are
refused in one line. The loopback server decodes what it receives."""

from __future__ import annotations

import asyncio
import json

import jax
import numpy as np
import pytest

import alemlite
from alemlite.core.errors import ConfigError
from alemlite.core.prompting import PromptOptions
from alemlite.envs.craft.agent_view import YOU_COLOUR, YOU_MASKS
from alemlite.envs.craft.world.rendering import TILE
from alemlite.envs.dining.prompting import DiningRenderer
from alemlite.evaluation import episode_keys
from alemlite_app.cli import main
from llm_bridge.agents import LLMAgent
from llm_bridge.clients.openai_backend import OpenAIBackend, OpenAIConfig
from llm_bridge.images import IMAGE_NOTE, enlarge, png_data_uri, scale_of
from llm_bridge.program import batch_program
from llm_bridge.runner import RunConfig, run_evaluation
from llm_bridge.transcripts import read_records
from tests.llm_server import ChatServer, craft_alternating, images_of, text_of

AGENTS, EPISODES, MAX_STEPS, SEED = 2, 2, 2, 4
SPEC = alemlite.spec("craft")


@pytest.fixture(scope="module")
def env():
    # The plain world (no coordination layer) compiles fastest; its frames are drawn alike.
    return alemlite.make(
        "craft", num_agents=AGENTS, map_size=16, max_steps=MAX_STEPS, coordination=False
    )


def crop(env, frame: np.ndarray, position) -> np.ndarray:
    """The agent's view window cut from the whole map's frame; black off the map."""
    tile = frame.shape[0] // env.config.map_size
    half_rows, half_cols = env.config.view_height // 2, env.config.view_width // 2
    padded = np.pad(frame, ((half_rows * tile,) * 2, (half_cols * tile,) * 2, (0, 0)))
    row, col = np.asarray(position) * tile
    return padded[row : row + (2 * half_rows + 1) * tile, col : col + (2 * half_cols + 1) * tile]


def marked(env, view: np.ndarray, facing: int) -> np.ndarray:
    """`view` with the agent's own tile at its centre outlined and ticked where it faces."""
    view = view.copy()
    row, col = env.config.view_height // 2 * TILE, env.config.view_width // 2 * TILE
    view[row : row + TILE, col : col + TILE][YOU_MASKS[facing]] = YOU_COLOUR
    return view


def team(url: str) -> list[LLMAgent]:
    return [LLMAgent(OpenAIBackend(OpenAIConfig(model="scripted", base_urls=(url,))), "x")] * AGENTS


def run(env, server, out, observation):
    return run_evaluation(
        env,
        SPEC.prompts(env),
        team(server.base_url),
        PromptOptions(variant="specific", history=1),
        RunConfig(episodes=EPISODES, seed=SEED, out=out, progress=False, observation=observation),
        render_agent=SPEC.render_agent_rgb,
    )


@pytest.fixture(scope="module")
def both(env, tmp_path_factory):
    out = tmp_path_factory.mktemp("both")
    with ChatServer(craft_alternating) as server:
        report = run(env, server, out, "both")
    return report, server.log.bodies, out


def test_each_request_carries_the_text_then_the_agents_view(env, both):
    report, bodies, out = both
    assert report["usage"]["observation"] == "both"
    assert len(bodies) == AGENTS * EPISODES * MAX_STEPS == report["usage"]["requests"]
    window = (env.config.view_height * 8, env.config.view_width * 8)
    scale = scale_of(*window)
    for body in bodies:
        text, image = body["messages"][-1]["content"]
        assert text["type"] == "text" and text["text"].startswith("Step ")
        assert "In view:" in text["text"] and text["text"].endswith("\n" + IMAGE_NOTE)
        assert image["type"] == "image_url"
        (picture,) = images_of(body)
        assert picture.shape == (window[0] * scale, window[1] * scale, 3)
        assert min(picture.shape[:2]) >= 224
    # The transcript keeps the parts as sent.
    turns = [r for r in read_records(out / "transcript.jsonl") if r["type"] == "turn"]
    sent = {json.dumps(body["messages"][1:]) for body in bodies}
    assert {json.dumps(turn["prompt"]) for turn in turns} == sent


@pytest.fixture(scope="module")
def program(env, both):
    """The run's compiled batch program (kept by the runner), its start states, and the
    whole map's frame of a batch of states."""
    compiled = batch_program(env, env.default_params, team("http://127.0.0.1:9/v1"))
    states, _ = compiled.reset(episode_keys(SEED, EPISODES))
    draw = jax.jit(jax.vmap(lambda state: SPEC.render_rgb(env, state, env.default_params)))
    return compiled, states, draw


def test_the_first_views_equal_the_crop_of_the_map_frame(env, both, program):
    _, bodies, _ = both
    _, states, draw = program
    frames, positions = np.asarray(draw(states)), np.asarray(states.agents.position)
    facing = np.asarray(states.agents.facing)
    first = [b for b in bodies if text_of(b["messages"][-1]["content"]).startswith("Step 1.")]
    assert len(first) == AGENTS * EPISODES
    expected = {
        enlarge(marked(env, crop(env, frames[e], positions[e, a]), facing[e, a])).tobytes()
        for e in range(EPISODES)
        for a in range(AGENTS)
    }
    assert {images_of(body)[0].tobytes() for body in first} == expected
    assert len(expected) == AGENTS * EPISODES  # four different views, each sent once


def test_a_view_at_the_map_edge_is_black_off_the_map(env, program):
    compiled, states, draw = program
    agents = states.agents
    states = states.replace(agents=agents.replace(position=agents.position.at[:, 0].set(0)))
    views = np.asarray(compiled.frames(SPEC.render_agent_rgb)(states))
    frames = np.asarray(draw(states))
    for episode in range(EPISODES):
        view = views[episode, 0]
        facing = int(states.agents.facing[episode, 0])
        np.testing.assert_array_equal(view, marked(env, crop(env, frames[episode], (0, 0)), facing))
        rows, cols = env.config.view_height // 2 * 8, env.config.view_width // 2 * 8
        assert not view[:rows].any() and not view[:, :cols].any()
        assert view[rows:, cols:].any()


@pytest.mark.parametrize("facing", range(4))
def test_the_view_marks_the_agent_at_its_centre_and_where_it_faces(env, program, facing):
    compiled, states, draw = program
    agents = states.agents
    states = states.replace(agents=agents.replace(facing=agents.facing.at[:, 0].set(facing)))
    view = np.asarray(compiled.frames(SPEC.render_agent_rgb)(states))[0, 0]
    row, col = env.config.view_height // 2 * TILE, env.config.view_width // 2 * TILE
    tile = view[row : row + TILE, col : col + TILE]
    white = np.all(tile == 255, axis=-1)
    # The outline all round, and a tick three pixels deep on the side faced only.
    assert white[[0, -1]].all() and white[:, [0, -1]].all()
    middle = slice(TILE // 2 - 2, TILE // 2 + 2)
    sides = [white[middle, 1:3], white[middle, -3:-1], white[1:3, middle], white[-3:-1, middle]]
    assert [side.all() for side in sides] == [side == facing for side in range(4)]
    # Nothing else of the view is changed.
    unmarked = crop(env, np.asarray(draw(states))[0], np.asarray(states.agents.position)[0, 0])
    np.testing.assert_array_equal(view, marked(env, unmarked, facing))
    assert (view != unmarked).any(axis=-1).sum() <= YOU_MASKS[facing].sum()


def test_image_mode_sends_the_view_with_the_text_it_cannot_show(env, both, tmp_path):
    with ChatServer(lambda messages: "<action>noop</action>") as server:
        report = run(env, server, tmp_path, "image")
    assert report["usage"]["observation"] == "image" and report["usage"]["parse_rate"] == 1.0
    # The first step's texts of the run in both modes, by the view they were sent with.
    full = {
        images_of(body)[0].tobytes(): text_of(body["messages"][-1]["content"])
        for body in both[1]
        if text_of(body["messages"][-1]["content"]).startswith("Step 1.")
    }
    for body in server.log.bodies:
        (text, _), (picture,) = body["messages"][-1]["content"], images_of(body)
        text = text["text"]
        # What the picture cannot show stays in words; the view's tiles are left to it.
        assert text.startswith("Step ") and text.endswith("\n" + IMAGE_NOTE)
        for words in ("You are agent", "Stats: ", "Inventory: ", "Legal actions now: noop"):
            assert words in text
        assert "In view:" not in text and "Creatures:" not in text
        if text.startswith("Step 1."):  # the same as in both modes, less the view's lines
            lines = full[picture.tobytes()].splitlines()
            assert text.splitlines() == [
                line for line in lines if not line.startswith(("In view:", "Creatures:"))
            ]


def test_an_environment_without_views_is_refused_in_one_line(tmp_path, capsys):
    env = alemlite.make("dining", num_philosophers=3, max_steps=2)
    config = RunConfig(episodes=1, out=tmp_path, progress=False, observation="image")
    backend = OpenAIBackend(OpenAIConfig(model="scripted", base_urls=("http://127.0.0.1:9/v1",)))
    with pytest.raises(ConfigError, match="observation=image must be text for env=dining"):
        run_evaluation(env, DiningRenderer(), [LLMAgent(backend, "x")] * 3, PromptOptions(), config)
    with pytest.raises(SystemExit) as stopped:
        main(["eval-llm", "--env", "dining", "--observation", "both", "--out", str(tmp_path)])
    assert stopped.value.code == 2
    error = capsys.readouterr().err.strip()
    assert len(error.splitlines()) == 1
    assert "--observation=both must be text for --env=dining" in error
    assert "use --observation text" in error


def test_png_data_uris_decode_to_the_enlarged_frame():
    frame = np.random.default_rng(0).integers(0, 256, (7, 9, 3), dtype=np.uint8)
    uri = png_data_uri(frame)
    (decoded,) = images_of(
        {"messages": [{"content": [{"type": "image_url", "image_url": {"url": uri}}]}]}
    )
    np.testing.assert_array_equal(decoded, np.repeat(np.repeat(frame, 32, 0), 32, 1))


# ---- the transformers backend ---------------------------------------------------------------
def _tiny_tokenizer(transformers, extra=()):
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers

    characters = [chr(code) for code in range(32, 127)] + ["\n"]
    special = ["<pad>", "<eos>", "<unk>", *extra]
    vocab = {token: i for i, token in enumerate(special)}
    vocab |= {c: i + len(special) for i, c in enumerate(characters)}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    pattern = "|".join([*(token for token in extra), "."])
    core.pre_tokenizer = pre_tokenizers.Split(Regex(pattern), behavior="isolated")
    core.decoder = decoders.Fuse()
    return transformers.PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>",
        **({"extra_special_tokens": {"image_token": extra[0]}} if extra else {}),
    ), len(vocab)  # fmt: skip


CHAT = (
    "{% for m in messages %}{{ m['role'] }}: {% if m['content'] is string %}{{ m['content'] }}"
    "{% else %}{% for p in m['content'] %}{% if p['type'] == 'text' %}{{ p['text'] }}"
    "{% else %}<image>{% endif %}{% endfor %}{% endif %}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def test_the_transformers_backend_refuses_images_for_a_text_model():
    transformers = pytest.importorskip("transformers", reason="the optional hf extra")
    pytest.importorskip("torch", reason="the optional hf extra")
    from llm_bridge.clients.hf_backend import HFBackend, HFConfig

    tokenizer, vocab = _tiny_tokenizer(transformers)
    config = transformers.GPT2Config(
        vocab_size=vocab, n_positions=64, n_embd=8, n_layer=1, n_head=2
    )
    backend = HFBackend(HFConfig("tiny-gpt2"), transformers.GPT2LMHeadModel(config), tokenizer)
    with pytest.raises(ConfigError) as refused:
        asyncio.run(backend.check_images())
    assert str(refused.value) == (
        "observation=image must be text for the transformers model tiny-gpt2 (GPT2Config), "
        "which reads no images (its config has no vision_config); use --observation text, or "
        "a vision-language model as --model"
    )


def test_the_transformers_backend_reads_images_with_a_multimodal_model():
    transformers = pytest.importorskip("transformers", reason="the optional hf extra")
    torch = pytest.importorskip("torch", reason="the optional hf extra")
    from llm_bridge.clients.hf_backend import HFBackend, HFConfig

    tokenizer, vocab = _tiny_tokenizer(transformers, extra=("<image>",))
    image_processor = transformers.CLIPImageProcessor(
        size={"shortest_edge": 28}, crop_size={"height": 28, "width": 28}
    )
    processor = transformers.LlavaProcessor(
        image_processor=image_processor, tokenizer=tokenizer, chat_template=CHAT,
        patch_size=14, vision_feature_select_strategy="default", num_additional_image_tokens=1,
    )  # fmt: skip
    vision = transformers.CLIPVisionConfig(
        hidden_size=16, intermediate_size=16, num_hidden_layers=1, num_attention_heads=2,
        image_size=28, patch_size=14, projection_dim=16,
    )  # fmt: skip
    text = transformers.LlamaConfig(
        vocab_size=vocab, hidden_size=16, intermediate_size=16, num_hidden_layers=1,
        num_attention_heads=2, num_key_value_heads=2, pad_token_id=0, eos_token_id=1,
    )  # fmt: skip
    config = transformers.LlavaConfig(
        vision_config=vision, text_config=text, image_token_id=3,
        vision_feature_select_strategy="default",
    )  # fmt: skip
    torch.manual_seed(0)
    model = transformers.LlavaForConditionalGeneration(config).eval()
    backend = HFBackend(HFConfig("tiny-llava", max_new_tokens=3), model, processor)
    frame = np.zeros((7, 9, 3), np.uint8)
    asked = [
        {"type": "text", "text": "Your view is the image."},
        {"type": "image_url", "image_url": {"url": png_data_uri(frame)}},
    ]

    async def ask():
        await backend.check_images()
        return await asyncio.gather(
            backend.complete([{"role": "user", "content": asked}]),
            backend.complete([{"role": "user", "content": asked[:1]}]),
        )

    with_image, without = asyncio.run(ask())
    assert not with_image.failed and not without.failed, (with_image.error, without.error)
    assert backend.generate_calls == 1  # one batch, one image in it
    # The image's 4 patch tokens (28 x 28 pixels in patches of 14) stand in the prompt.
    assert with_image.prompt_tokens == without.prompt_tokens + 4
