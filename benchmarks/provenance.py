"""Where a published figure came from: the code, the command, the machine, the time.

Every benchmark starts with `begin_run`, which refuses to write into the
published folders (`benchmarks/results/`, `docs/`) unless `--publish` is given
(by default a benchmark writes a fresh folder under `runs/`, so a trial run never
replaces a published figure), and refuses to publish from a working tree with
uncommitted changes unless `allow_dirty` is given, so a figure always names a
commit that holds the code that made it. The check runs before any work, and
again when the results are written: a tree that changed during the run is
treated like a dirty one. The published folders and the run's own outputs hold
data, not code, and are left out of both checks (one command may write several
results files in turn).
`RunProvenance.describe()` is the block each results JSON carries.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.metadata
import os
import platform
import shlex
import subprocess
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from alemlite.core.errors import ConfigError
from llm_bridge.clients.base import without_userinfo

REPO = Path(__file__).resolve().parents[1]
PUBLISHED_DIRS = (REPO / "benchmarks" / "results", REPO / "docs")
LIBRARIES = ("jax", "jaxlib", "flax", "optax", "orbax-checkpoint", "numpy", "scipy")


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], capture_output=True, text=True, check=True, cwd=REPO
    ).stdout


@dataclass(frozen=True)
class TreeState:
    commit: str  # full hash, or "unknown" outside a git checkout
    dirty: bool  # uncommitted changes or untracked files that git does not ignore
    diff_sha256: str | None  # hash of those changes, so two dirty runs can be told apart

    @classmethod
    def now(cls, outputs: Iterable[Path] = ()) -> TreeState:
        """The code as it stands: published results and the run's own `outputs` (files or
        folders) are data, not code, and are left out."""
        inside = [Path(path).resolve() for path in (*PUBLISHED_DIRS, *outputs)]
        paths = [
            ".",
            *(f":(exclude){p.relative_to(REPO)}" for p in inside if p.is_relative_to(REPO)),
        ]
        try:
            commit = _git("rev-parse", "HEAD").strip()
            status = _git("status", "--porcelain", "--untracked-files=all", "--", *paths)
        except (OSError, subprocess.CalledProcessError):
            return cls("unknown", True, None)
        if not status.strip():
            return cls(commit, False, None)
        digest = hashlib.sha256(_git("diff", "HEAD", "--binary", "--", *paths).encode())
        for line in sorted(status.splitlines()):
            if line.startswith("??"):
                path = REPO / line[3:]
                digest.update(line.encode())
                digest.update(path.read_bytes() if path.is_file() else b"")
        return cls(commit, True, digest.hexdigest())


def command_line() -> str:
    """The command as typed: `python -m module args` for modules, the script's name otherwise."""
    main = sys.modules.get("__main__")
    spec = getattr(main, "__spec__", None)
    if spec is not None and spec.name and spec.name != "__main__":
        head = ["python", "-m", spec.name.removesuffix(".__main__")]
    else:
        head = [Path(sys.argv[0]).name]
    return without_userinfo(shlex.join(head + sys.argv[1:]))  # a --base-url's password


def library_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in LIBRARIES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = "absent"
    return versions


# The CPU's vector extensions: XLA compiles for those it finds, so the same program's float
# results (and speed) differ between machines that differ in them.
VECTOR_EXTENSIONS = ("avx512f", "avx2", "fma", "avx", "sse4_2", "neon", "asimd", "sve")


def cpu() -> dict[str, Any]:
    """The CPU's model and vector extensions, as Linux reports them (else what Python can
    tell)."""
    fields: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    flags = set((fields.get("flags") or fields.get("Features") or "").split())
    return {
        "cpu_model": fields.get("model name") or platform.processor() or platform.machine(),
        "cpu_vector_extensions": [name for name in VECTOR_EXTENSIONS if name in flags],
    }


def machine() -> dict[str, Any]:
    import jax

    device = jax.devices()[0]
    return {
        "machine": platform.node(),
        "processor": platform.processor() or platform.machine(),
        **cpu(),
        "cpu_count": os.cpu_count(),
        "device_kind": device.device_kind,
        "platform": device.platform,
        "device_count": jax.device_count(),
    }


def is_published(path: Path) -> bool:
    resolved = Path(path).resolve()
    return any(resolved.is_relative_to(folder) for folder in PUBLISHED_DIRS)


@dataclass(frozen=True)
class RunProvenance:
    tree: TreeState
    command: str
    started_at: str
    started: float  # time.monotonic() at the start
    outputs: tuple[Path, ...]  # what the run writes; changes there are its own
    published: bool  # whether the run writes into a published folder
    allow_dirty: bool

    def describe(self) -> dict[str, Any]:
        """The provenance block of a results file; re-checks the tree for published runs."""
        end = TreeState.now(self.outputs)
        changed = end != self.tree
        if self.published and changed and not self.allow_dirty:
            raise ConfigError(
                f"the working tree changed during the run (commit {self.tree.commit[:12]} -> "
                f"{end.commit[:12]}, dirty {end.dirty}); rerun from a clean tree or pass "
                "--allow-dirty"
            )
        return {
            "commit": self.tree.commit,
            "dirty": self.tree.dirty or changed,
            "diff_sha256": self.tree.diff_sha256 if not changed else end.diff_sha256,
            "command": self.command,
            **machine(),
            "libraries": library_versions(),
            "date": self.started_at,
            "wall_time_s": round(time.monotonic() - self.started, 1),
        }


def begin_run(
    destinations: Iterable[Path], allow_dirty: bool = False, publish: bool = False
) -> RunProvenance:
    """Record the tree and command at the start; refuse to write published outputs unless
    `publish`, and from a dirty tree unless `allow_dirty`.

    `destinations` are every file or folder the run writes.
    """
    outputs = tuple(Path(path) for path in destinations)
    published = [path for path in outputs if is_published(path)]
    if published and not publish:
        raise ConfigError(
            f"{published[0]} holds published results; pass --publish to replace them, or leave "
            "out the output option to write a fresh folder under runs/"
        )
    if publish and not published:
        raise ConfigError(
            "publish=True but nothing is written into benchmarks/results/ or docs/; drop "
            "--publish, or the output option that sends the results elsewhere"
        )
    tree = TreeState.now(outputs)
    if published and tree.dirty and not allow_dirty:
        raise ConfigError(
            f"the working tree has uncommitted changes (commit {tree.commit[:12]}); commit them "
            "before writing into benchmarks/results/ or docs/, write elsewhere, or pass "
            "--allow-dirty to mark the results as coming from a dirty tree"
        )
    return RunProvenance(
        tree=tree,
        command=command_line(),
        started_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        started=time.monotonic(),
        outputs=outputs,
        published=bool(published),
        allow_dirty=allow_dirty,
    )
