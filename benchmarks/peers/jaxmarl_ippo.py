"""Time JaxMARL's own IPPO (`make_train` of its feed-forward script) on dining; run in a venv
with JaxMARL's algorithm dependencies, driven line by line by `benchmarks/jaxmarl_training.py`.

    /tmp/jaxmarl-venv/bin/python benchmarks/peers/jaxmarl_ippo.py --jaxmarl-repo /tmp/JaxMARL

The script is imported from the checkout unmodified; its `jaxmarl.make` is pointed at
alemlite's dining table behind `JaxMARLAdapter` (the only way to give it an environment
JaxMARL does not register), and wandb is initialised disabled, as the script's own config
does. One request per stdin line, one JSON answer per stdout line:
`{"prepare": {...config...}}` compiles and warms up a run; `{"time": true}` times one run.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def load_script(repo: Path, script: str) -> types.ModuleType:
    """JaxMARL's script as a module, with its checkout's `jaxmarl` first on the path."""
    sys.path.insert(0, str(repo))
    spec = importlib.util.spec_from_file_location("jaxmarl_ippo_script", repo / script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--jaxmarl-repo", type=Path, required=True)
    parser.add_argument("--script", default="baselines/IPPO/ippo_ff_mpe.py")
    arguments = parser.parse_args()
    script = load_script(arguments.jaxmarl_repo, arguments.script)
    sys.path.insert(1, str(ROOT))
    import jax
    import wandb

    import alemlite
    from alemlite.core import JaxMARLAdapter

    def make(name: str, **options):
        spec = alemlite.spec(name)
        return JaxMARLAdapter(spec.build(spec.options(**options)))

    script.jaxmarl = types.SimpleNamespace(make=make)
    wandb.init(mode="disabled")
    compiled, key = None, jax.random.PRNGKey(0)
    print(json.dumps({"ready": True, "jax": jax.__version__}), flush=True)
    for line in sys.stdin:
        request = json.loads(line)
        if "prepare" in request:
            start = time.perf_counter()
            compiled = jax.jit(script.make_train(request["prepare"])).lower(key).compile()
            compile_s = time.perf_counter() - start
            jax.block_until_ready(compiled(key))
            print(json.dumps({"compile_s": compile_s}), flush=True)
        else:
            start = time.perf_counter()
            jax.block_until_ready(compiled(key))
            print(json.dumps({"seconds": time.perf_counter() - start}), flush=True)


if __name__ == "__main__":
    main()
