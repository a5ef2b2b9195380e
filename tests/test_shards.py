"""Sharded evaluation: `--shard I/N` runs merged by `alemlite merge` equal the unsharded run
(an LLM team against the loopback server, and a compiled team), and the merge refuses
shards that overlap, leave a gap, or come from another configuration."""

from __future__ import annotations

import json

import pytest

from alemlite_app.cli import main
from llm_bridge.compare import mismatched_settings
from llm_bridge.shards import parse_shard
from llm_bridge.transcripts import read_records
from tests.llm_server import ChatServer, Faults, dining_resource_ordering

# Dining at three seats: a model beside a random neighbour, some junk replies (picked by the
# request's hash, so the same in every run), so that episodes differ.
TABLE = ["--env", "dining", "--num-agents", "3", "--max-steps", "6", "--episodes", "5"]
LLM_TEAM = ["--team", "llm", "uniform_random", "llm", "--model", "scripted", "--no-progress"]


@pytest.fixture(scope="module")
def llm_runs(tmp_path_factory):
    """The unsharded run, its two shards (run in reverse order), their merge, and a shard of
    another run (another temperature)."""
    root = tmp_path_factory.mktemp("llm")
    with ChatServer(dining_resource_ordering, Faults(malformed=0.2)) as server:

        def run(out, *flags):
            main(["eval-llm", *TABLE, *LLM_TEAM, "--base-url", server.base_url,
                  "--out", str(root / out), *flags])  # fmt: skip

        run("whole")
        run("second", "--shard", "2/2")
        run("first", "--shard", "1/2")
        run("other", "--shard", "1/2", "--temperature", "0.5")
    main(["merge", str(root / "second"), str(root / "first"), "--out", str(root / "merged")])
    return root


def _summary(folder):
    return json.loads((folder / "summary.json").read_text())


def test_two_llm_shards_merged_equal_one_run(llm_runs):
    whole, merged = _summary(llm_runs / "whole"), _summary(llm_runs / "merged")
    for key in ("valid", "complete", "config", "summary", "episodes", "turns", "headline"):
        assert merged[key] == whole[key], key
    assert merged["usage"]["failed_requests"] == 0 < merged["usage"]["parse_methods"]["failed"]
    for key in ("requests", "parse_rate", "parse_methods", "prompt_tokens", "completion_tokens"):
        assert merged["usage"][key] == whole["usage"][key], key
    shards = [_summary(llm_runs / name) for name in ("first", "second")]
    assert merged["usage"]["wall_s"] == sum(shard["usage"]["wall_s"] for shard in shards)
    p95 = max(shard["usage"]["latency_p95_s"] for shard in shards)
    assert merged["usage"]["latency_p95_s"] == p95
    assert merged["merged"]["summed"][-1] == "wall_s"
    assert "latency_p95_s" in merged["merged"]["maxed"]
    # The episodes differ, so that equal summaries say something.
    assert len(set(whole["episodes"]["episode_return"])) > 1


def test_a_shard_plays_its_own_episodes_and_numbers_them_as_the_run_does(llm_runs):
    second = _summary(llm_runs / "second")
    assert second["config"]["shard"] == {"index": 2, "count": 2, "of_episodes": 5}
    assert (second["config"]["first_episode"], second["config"]["episodes"]) == (2, 3)
    records = list(read_records(llm_runs / "second" / "transcript.jsonl"))
    assert {r["episode"] for r in records if r["type"] == "turn"} == {2, 3, 4}
    first_step = next(r for r in records if r["type"] == "step")
    assert first_step["live"] == [2, 3, 4]
    # Each turn of the shard is the unsharded run's turn of the same episode, step and seat.
    whole = {
        (r["episode"], r["step"], r["seat"]): r["reply"]
        for r in read_records(llm_runs / "whole" / "transcript.jsonl")
        if r["type"] == "turn"
    }
    shard = [r for r in records if r["type"] == "turn"]
    assert all(whole[(r["episode"], r["step"], r["seat"])] == r["reply"] for r in shard)


def test_a_shard_compares_only_with_results_of_its_seeds(llm_runs):
    first = _summary(llm_runs / "first")["config"]
    second = _summary(llm_runs / "second")["config"]
    whole = _summary(llm_runs / "whole")["config"]
    assert mismatched_settings(first, whole) == {}  # the run's first episodes
    assert mismatched_settings(second, whole) == {"seed": [2, 0]}


def test_compiled_shards_merged_equal_the_unsharded_report(tmp_path):
    base = ["eval", *TABLE, "--team", "uniform_random"]
    main([*base, "--out", str(tmp_path / "whole")])
    for shard in ("1/3", "2/3", "3/3"):
        main([*base, "--shard", shard, "--out", str(tmp_path / shard.replace("/", "of"))])
    (third,) = (tmp_path / "3of3").glob("*.json")
    assert third.name.startswith("dining_3_shaped_uniform_random_shard3of3_")
    main(["merge", *(str(tmp_path / f"{i}of3") for i in (1, 2, 3)), "--out", str(tmp_path / "m")])
    (whole,) = (tmp_path / "whole").glob("*.json")
    (merged,) = (tmp_path / "m").glob("*.json")
    assert merged.name == whole.name
    whole, merged = json.loads(whole.read_text()), json.loads(merged.read_text())
    assert merged["merged"]["summed"] == []
    assert {key: merged[key] for key in whole} == whole
    assert len(set(whole["episodes"]["episode_return"])) > 1


def _refusal(argv, capsys) -> str:
    with pytest.raises(SystemExit) as caught:
        main(argv)
    assert caught.value.code == 2
    [line] = capsys.readouterr().err.splitlines()
    return line


def test_merge_refuses_overlap_gap_and_other_configurations(llm_runs, capsys, tmp_path):
    first, second, other = (str(llm_runs / name) for name in ("first", "second", "other"))
    out = ["--out", str(tmp_path / "out")]
    line = _refusal(["merge", first, second, first, *out], capsys)
    assert line.startswith("alemlite merge: error: episode 0 is in two shards")
    line = _refusal(["merge", second, *out], capsys)
    assert line.endswith("episodes 0-1 of the run's 5 are in no shard given; run and add the "
                         "missing shards of 2")  # fmt: skip
    line = _refusal(["merge", other, second, *out], capsys)
    assert "are shards of different runs: their configs differ in temperature;" in line
    line = _refusal(["merge", str(llm_runs / "whole"), second, *out], capsys)
    assert "summary.json is no shard (its config has no shard block)" in line
    line = _refusal(["merge", first, second, "--out", first], capsys)
    assert line.endswith(f"--out={first} is one of the shards; write the merged result to a new "
                         "folder")  # fmt: skip
    line = _refusal(["merge", first, second, "--out", str(llm_runs / "whole")], capsys)
    assert "holds an LLM run (transcript.jsonl)" in line
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("2", "shard=2 must be I/N"),
        ("0/2", "shard=0/2 must have I from 1 to N"),
        ("3/2", "shard=3/2 must have I from 1 to N"),
        ("1/6", "shard=1/6 splits 5 episodes into 6 shards"),
    ],
)
def test_a_bad_shard_is_refused_before_anything_runs(text, message, tmp_path, capsys):
    line = _refusal(["eval", *TABLE, "--shard", text, "--out", str(tmp_path / "run")], capsys)
    assert line.startswith(f"alemlite eval: error: --{message}")
    assert not (tmp_path / "run").exists()


def test_shards_cover_every_episode_once_in_equal_blocks():
    for total in (1, 5, 32, 33):
        for count in range(1, min(total, 7) + 1):
            shards = [parse_shard(f"{i}/{count}", total) for i in range(1, count + 1)]
            blocks = [shard.episodes(total) for shard in shards]
            assert [e for block in blocks for e in block] == list(range(total))
            assert max(map(len, blocks)) - min(map(len, blocks)) <= 1
