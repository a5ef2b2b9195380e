"""`pytest --compile-report DIR`: where the suite's time goes to JAX, per test.

JAX reports how long it spends tracing, lowering and compiling each program it builds
(`jax.monitoring` duration events, the backend compile's named by the program). Each test
worker writes `DIR/compiles-<worker>.json`: per test, the seconds and count of each event,
and the compile seconds of each program by name. A cold run (no
`.pytest_cache/jax-compilation`) shows which tests pay for which programs:
`python -m tests.compile_report DIR` sums them by file, and with `--programs` by program,
with the number of test files that compiled each (a program compiled in several files, at
the cost of seconds each time, is the one to share through a fixture or to make identical,
so the persistent cache serves it).
"""

from __future__ import annotations

import collections
import json
import sys
from pathlib import Path

import jax
import pytest

EVENTS = {
    "/jax/core/compile/jaxpr_trace_duration": "trace",
    "/jax/core/compile/jaxpr_to_mlir_module_duration": "lower",
    "/jax/core/compile/backend_compile_duration": "compile",
}


class CompileReport:
    def __init__(self, folder: Path, worker: str):
        self.path = folder / f"compiles-{worker}.json"
        self.test = "(collection)"
        self.tests: dict[str, dict[str, list[float]]] = collections.defaultdict(
            lambda: collections.defaultdict(lambda: [0.0, 0])
        )
        # test -> program name -> [backend compile seconds, count]
        self.programs: dict[str, dict[str, list[float]]] = collections.defaultdict(
            lambda: collections.defaultdict(lambda: [0.0, 0])
        )
        self._listener = self._heard
        jax.monitoring.register_event_duration_secs_listener(self._listener)

    def _heard(self, event: str, duration: float, fun_name: object = "?", **_: object) -> None:
        if event in EVENTS:
            total = self.tests[self.test][EVENTS[event]]
            total[0] += duration
            total[1] += 1
        if EVENTS.get(event) == "compile":
            program = self.programs[self.test][str(fun_name)]
            program[0] += duration
            program[1] += 1

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item):
        self.test = item.nodeid
        yield
        self.test = "(between tests)"

    def pytest_sessionfinish(self):
        jax.monitoring.unregister_event_duration_listener(self._listener)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        body = {
            test: {
                **{kind: {"seconds": round(s, 3), "count": n} for kind, (s, n) in kinds.items()},
                "programs": {
                    name: {"seconds": round(s, 3), "count": n}
                    for name, (s, n) in self.programs[test].items()
                },
            }
            for test, kinds in self.tests.items()
        }
        self.path.write_text(json.dumps(body, indent=1) + "\n")


def by_file(folder: Path) -> list[tuple[str, float, int, float]]:
    """(test file, compile seconds, compiles, trace + lower seconds), most compile first."""
    totals: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0, 0.0])
    for path in folder.glob("compiles-*.json"):
        for test, kinds in json.loads(path.read_text()).items():
            row = totals[test.split("::")[0]]
            compile_ = kinds.get("compile", {"seconds": 0.0, "count": 0})
            row[0] += compile_["seconds"]
            row[1] += compile_["count"]
            row[2] += sum(kinds.get(k, {"seconds": 0.0})["seconds"] for k in ("trace", "lower"))
    rows = [(name, s, int(n), other) for name, (s, n, other) in totals.items()]
    return sorted(rows, key=lambda row: -row[1])


def by_program(folder: Path) -> list[tuple[str, float, int, int]]:
    """(program name, compile seconds, compiles, test files that compiled it), most compile
    seconds first. Programs of one name but different shapes or constants count together."""
    totals: dict[str, list] = collections.defaultdict(lambda: [0.0, 0, set()])
    for path in folder.glob("compiles-*.json"):
        for test, kinds in json.loads(path.read_text()).items():
            for name, heard in kinds.get("programs", {}).items():
                row = totals[name]
                row[0] += heard["seconds"]
                row[1] += heard["count"]
                row[2].add(test.split("::")[0])
    rows = [(name, s, int(n), len(files)) for name, (s, n, files) in totals.items()]
    return sorted(rows, key=lambda row: -row[1])


def main(argv: list[str]) -> None:
    folder, programs = Path(argv[0]), "--programs" in argv[1:]
    if programs:
        rows = by_program(folder)
        print(f"{'program':60} {'compile s':>10} {'compiles':>9} {'files':>6}")
        for name, seconds, count, files in rows:
            print(f"{name[:60]:60} {seconds:10.1f} {count:9d} {files:6d}")
        print(f"{'total':60} {sum(r[1] for r in rows):10.1f} {sum(r[2] for r in rows):9d}")
        return
    rows = by_file(folder)
    print(f"{'file':60} {'compile s':>10} {'compiles':>9} {'trace+lower s':>14}")
    for name, seconds, count, other in rows:
        print(f"{name:60} {seconds:10.1f} {count:9d} {other:14.1f}")
    print(
        f"{'total':60} {sum(r[1] for r in rows):10.1f} {sum(r[2] for r in rows):9d} "
        f"{sum(r[3] for r in rows):14.1f}"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
