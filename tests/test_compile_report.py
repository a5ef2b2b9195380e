"""`--compile-report`: each test's JAX compile time, summed by file and by program over the
workers."""

from __future__ import annotations

import json

import jax
import jax.numpy as jnp

from tests.compile_report import CompileReport, by_file, by_program


def test_a_compile_is_charged_to_the_test_that_ran_it_and_summed_by_file(tmp_path):
    report = CompileReport(tmp_path, "gw9")
    report.test = "tests/test_x.py::test_one"

    # A program of its own (a fresh constant), so that no cache can serve it.
    def scaled_sine(x):
        return x * 3.25 + jnp.sin(x)

    jax.jit(scaled_sine)(jnp.arange(7.0)).block_until_ready()
    report.test = "(between tests)"
    report.pytest_sessionfinish()
    heard = json.loads((tmp_path / "compiles-gw9.json").read_text())["tests/test_x.py::test_one"]
    assert heard["trace"]["count"] >= 1 and heard["lower"]["count"] >= 1
    other = {"tests/test_x.py::test_two": {"compile": {"seconds": 2.0, "count": 1}}}
    (tmp_path / "compiles-gw8.json").write_text(json.dumps(other))
    rows = dict((name, (s, n)) for name, s, n, _ in by_file(tmp_path))
    compiled = heard.get("compile", {"seconds": 0.0, "count": 0})
    assert rows["tests/test_x.py"] == (compiled["seconds"] + 2.0, compiled["count"] + 1)
    programs = {name: (s, n, files) for name, s, n, files in by_program(tmp_path)}
    (name,) = [name for name in programs if "scaled_sine" in name]
    assert programs[name][1:] == (heard["programs"][name]["count"], 1)
    assert heard["programs"][name]["count"] >= 1  # arange compiles a program of its own
    assert sum(program["count"] for program in heard["programs"].values()) == compiled["count"]
