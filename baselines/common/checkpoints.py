"""Orbax checkpoints of whole runs (for `--resume`) and exported policies (for loading by name).

A run checkpoint holds the vmapped `Runner` of every seed and the best-so-far
tracker, so restoring it and running the same compiled updates reproduces the
uninterrupted run. Each checkpoint directory also gets a `SHA256SUMS` of its files
(`sha256sum -c SHA256SUMS` checks it by hand), so a damaged checkpoint is found and set
aside before the storage library reads it, and a resume falls back to the newest one
that is whole. An exported policy holds one seed's actor parameters and the few facts
needed to rebuild the actor, small enough to ship with the package.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import logging
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jax
import orbax.checkpoint as ocp

import alemlite
from alemlite.core.environment import Environment
from alemlite.core.errors import ConfigError, require
from alemlite.core.spec import EnvOptions
from alemlite.folder_lock import hold_folder
from baselines.common.agents import SharedActor
from baselines.common.config import NetworkConfig, options_from_dict

DIGEST_FILE = "SHA256SUMS"


class RunCheckpoints:
    """The latest `max_to_keep` checkpoints of a run, keyed by update number."""

    def __init__(self, directory: Path, max_to_keep: int = 2):
        self.directory = Path(directory).absolute()
        self._max_to_keep = max_to_keep
        self._opened: ocp.CheckpointManager | None = None

    @property
    def _manager(self) -> ocp.CheckpointManager:
        # Opened on first use: opening reads every checkpoint's metadata, which a resume
        # checks (and sets aside when damaged) first.
        if self._opened is None:
            self._opened = ocp.CheckpointManager(
                self.directory,
                options=ocp.CheckpointManagerOptions(
                    max_to_keep=self._max_to_keep,
                    create=True,
                    # a save cut short by a kill leaves a temporary directory; nothing in it counts
                    cleanup_tmp_directories=True,
                ),
            )
        return self._opened

    def save(self, update: int, state: Any, meta: dict[str, Any]) -> None:
        """Save the checkpoint of `update`. A save that fails (a full disk) leaves nothing of
        it behind, so that a resume never takes part of it for a checkpoint."""
        try:
            with _errors_held():
                self._manager.save(
                    update,
                    args=ocp.args.Composite(
                        state=ocp.args.StandardSave(state), meta=ocp.args.JsonSave(meta)
                    ),
                )
                self._manager.wait_until_finished()
            if jax.process_index() == 0:
                _write_digest(self.directory / str(update))
        except Exception:
            self._discard(update)
            raise

    def _discard(self, update: int) -> None:
        """Remove what a failed save of `update` wrote, and end the manager's threads."""
        with contextlib.suppress(Exception), _errors_held():
            self.close()
        if jax.process_index() == 0:
            for path in [self.directory / str(update), *self.directory.glob(f"{update}.*-tmp*")]:
                shutil.rmtree(path, ignore_errors=True)

    def latest_update(self) -> int | None:
        return self._manager.latest_step()

    def restore(self, update: int, abstract_state: Any) -> tuple[Any, dict[str, Any]]:
        """The state saved at `update`, laid out (and sharded) like `abstract_state`."""
        # Read through a checkpointer of this one directory, not the manager, which would
        # first read the metadata of every checkpoint, damaged ones included.
        with ocp.Checkpointer(ocp.CompositeCheckpointHandler()) as checkpointer:
            restored = checkpointer.restore(
                self.directory / str(update),
                args=ocp.args.Composite(
                    state=ocp.args.StandardRestore(abstract_state), meta=ocp.args.JsonRestore()
                ),
            )
        return restored.state, restored.meta

    def damaged(self) -> dict[int, str]:
        """Checkpoints whose files differ from their `SHA256SUMS`, with what differs.

        One written before its sums (the run was killed in between) is not listed here;
        `restore_newest` finds out whether it restores.
        """
        found = {}
        for update, path in self._step_directories().items():
            problem = _digest_problem(path)
            if problem is not None:
                found[update] = problem
        return found

    def newest_whole(self) -> int | None:
        """The newest checkpoint not found damaged by its sums; None when there is none at all.

        Refuses when every checkpoint is damaged, saying how to start afresh.
        """
        damaged = self.damaged()
        whole = [update for update in self._step_directories() if update not in damaged]
        if damaged and not whole:
            raise self._nothing_restores(damaged)
        return max(whole, default=None)

    def restore_newest(
        self, abstract_state: Any, set_aside: Path
    ) -> tuple[int, Any, dict[str, Any], list[str]]:
        """Restore the newest checkpoint that restores; move newer, damaged ones to `set_aside`.

        Returns the update, state, meta and one line per checkpoint set aside. Refuses (and
        moves nothing) when no checkpoint restores, saying how to start afresh.
        """
        damaged = self.damaged()
        for update in sorted(self._step_directories(), reverse=True):
            if update in damaged:
                continue
            try:
                state, meta = self.restore(update, abstract_state)
            except Exception as error:  # any storage error: it does not restore
                damaged[update] = f"does not restore: {_first_line(error)}"
                continue
            newer = {u: why for u, why in damaged.items() if u > update}
            return update, state, meta, self._set_aside(newer, set_aside, update)
        raise self._nothing_restores(damaged)

    def close(self) -> None:
        if self._opened is not None:
            self._opened.close()
            self._opened = None

    def _nothing_restores(self, damaged: dict[int, str]) -> ConfigError:
        listed = "; ".join(
            f"checkpoint {update}: {why}" for update, why in sorted(damaged.items(), reverse=True)
        )
        return ConfigError(
            f"out={str(self.directory.parent)!r} has no checkpoint that restores ({listed}); "
            "start the run afresh without --resume in a new --out (this one keeps its "
            "metrics and checkpoints for inspection)"
        )

    def _step_directories(self) -> dict[int, Path]:
        if not self.directory.is_dir():
            return {}
        return {
            int(path.name): path
            for path in self.directory.iterdir()
            if path.name.isdigit() and path.is_dir()
        }

    def _set_aside(self, damaged: dict[int, str], destination: Path, resumed: int) -> list[str]:
        """Move damaged checkpoints out of the way (kept, not deleted) and say where."""
        if not damaged:
            return []
        self.close()  # the manager lists checkpoints when opened; reopen it without these
        destination.mkdir(parents=True, exist_ok=True)
        notes = []
        for update, why in sorted(damaged.items(), reverse=True):
            target = destination / str(update)
            suffix = 1
            while target.exists():  # the same update damaged twice: keep both
                target = destination / f"{update}.{suffix}"
                suffix += 1
            if jax.process_index() == 0:  # one process moves; every process resumes alike
                shutil.move(self.directory / str(update), target)
            notes.append(
                f"checkpoint {self.directory / str(update)} is damaged ({why}); moved it to "
                f"{target} and resuming from update {resumed}"
            )
        return notes


@contextlib.contextmanager
def _errors_held() -> Iterator[None]:
    """Hold the errors orbax logs while the block runs: its threads log each failed write
    with a traceback before the save raises it, which the run then says in one line. When
    the block succeeds they are logged after all."""
    logger = logging.getLogger("absl")  # orbax logs through absl
    held: list[logging.LogRecord] = []

    def hold(record: logging.LogRecord) -> bool:
        if record.levelno >= logging.ERROR:
            held.append(record)
            return False
        return True

    logger.addFilter(hold)
    try:
        yield
    finally:
        logger.removeFilter(hold)
    for record in held:
        logger.handle(record)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _write_digest(step_directory: Path) -> None:
    lines = [
        f"{_sha256(path)}  {path.relative_to(step_directory).as_posix()}\n"
        for path in sorted(step_directory.rglob("*"))
        if path.is_file() and path.name != DIGEST_FILE
    ]
    partial = step_directory / f".{DIGEST_FILE}.partial"
    partial.write_text("".join(lines))
    partial.replace(step_directory / DIGEST_FILE)  # whole or absent, even if killed here


def _digest_problem(step_directory: Path) -> str | None:
    """What differs from the checkpoint's `SHA256SUMS`; None if whole or written without sums."""
    digest_path = step_directory / DIGEST_FILE
    if not digest_path.exists():
        return None
    lines = digest_path.read_text(errors="replace").splitlines()
    if not lines:
        return f"{DIGEST_FILE} is empty"
    for line in lines:
        expected, separator, name = line.partition("  ")
        if not separator or len(expected) != 64:
            return f"{DIGEST_FILE} is unreadable"
        path = step_directory / name
        if not path.is_file():
            return f"{name} is missing"
        if _sha256(path) != expected:
            return f"{name} differs from what was saved"
    return None


def _first_line(error: BaseException, limit: int = 200) -> str:
    text = (str(error).strip().splitlines() or [""])[0]
    text = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return text if len(text) <= limit else text[: limit - 3] + "..."


LOCK_FILE = "train.lock"


def run_lock(run_dir: Path) -> contextlib.AbstractContextManager[None]:
    """Hold `run_dir/train.lock` while a run trains there; a second run is refused."""
    return hold_folder(run_dir, LOCK_FILE, "training run", "--out")


POLICY_FILE = "policy.json"
PARAMS_DIR = "actor_params"
# policy.json key -> the type its value must have
POLICY_KEYS = {
    "network": dict,
    "num_agents": int,
    "num_actions": int,
    "observation_shape": list,
    "env": dict,
}


def env_record(name: str, options: EnvOptions) -> dict[str, Any]:
    """How a run's summary and an exported policy record their environment."""
    return {"name": name, "options": dataclasses.asdict(options)}


def make_recorded_env(record: dict[str, Any]) -> Environment:
    """The environment an `env_record` describes. Policies exported before environments
    had options recorded `make`'s keyword arguments beside the name (the shipped ones)."""
    settings = dict(record)
    env_spec = alemlite.spec(settings.pop("name"))
    if "options" in settings:
        return env_spec.build(options_from_dict(env_spec.name, settings["options"]))
    return env_spec.make(**settings)


def export_policy(directory: Path, actor: SharedActor, actor_params: Any, info: dict) -> None:
    """Write one actor (parameters and shape facts) to `directory`, replacing what is there."""
    directory = Path(directory).absolute()
    directory.mkdir(parents=True, exist_ok=True)
    description = {
        "network": vars(actor.network),
        "num_agents": actor.num_agents,
        "num_actions": actor.num_actions,
        "observation_shape": list(actor.observation_shape),
        **info,
    }
    if jax.process_index() == 0:  # every process saves its share of the parameters below
        (directory / POLICY_FILE).write_text(json.dumps(description, indent=2) + "\n")
    checkpointer = ocp.StandardCheckpointer()
    checkpointer.save(directory / PARAMS_DIR, jax.device_get(actor_params), force=True)
    checkpointer.wait_until_finished()


def read_description(directory: Path) -> dict[str, Any]:
    """`policy.json` of an exported policy, checked; a damaged one is refused in one line."""
    path = Path(directory).absolute() / POLICY_FILE
    try:
        description = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"{path} is not valid JSON ({error}); restore it from the run's policy/ "
            "directory or export the policy again"
        ) from None
    require(
        isinstance(description, dict),
        f"{path} holds {type(description).__name__}, not a policy description; restore it",
    )
    for key, kind in POLICY_KEYS.items():
        require(key in description, f"{path} lacks the key {key!r}; restore the file")
        require(
            isinstance(description[key], kind) and not isinstance(description[key], bool),
            f"{path}: {key}={description[key]!r} must be a {kind.__name__}; restore the file",
        )
    require("name" in description["env"], f"{path} lacks the key 'env.name'; restore the file")
    unknown = sorted(set(description["network"]) - set(NetworkConfig.__dataclass_fields__))
    require(not unknown, f"{path}: network has unknown keys {unknown}; restore the file")
    try:
        NetworkConfig(**description["network"])
    except (ConfigError, TypeError) as error:
        raise ConfigError(f"{path}: network: {error}; restore the file") from None
    return description


def import_policy(directory: Path) -> tuple[SharedActor, Any, dict]:
    """The actor, its parameters and the description written by `export_policy`."""
    directory = Path(directory).absolute()
    description = read_description(directory)
    actor = SharedActor(
        network=NetworkConfig(**description["network"]),
        num_agents=description["num_agents"],
        num_actions=description["num_actions"],
        observation_shape=tuple(description["observation_shape"]),
    )
    abstract = jax.eval_shape(actor.init, jax.random.PRNGKey(0))
    try:
        params = ocp.StandardCheckpointer().restore(directory / PARAMS_DIR, abstract)
    except Exception as error:  # any storage error: it does not restore
        raise ConfigError(
            f"the parameters in {directory / PARAMS_DIR} do not restore as described by "
            f"{POLICY_FILE} ({_first_line(error)}); export the policy again from its run"
        ) from None
    # The restore returns what was saved whatever shapes it was asked for: compare them.
    mismatch = _first_mismatch(abstract, params)
    require(
        mismatch is None,
        f"the parameters in {directory / PARAMS_DIR} do not restore as described by "
        f"{POLICY_FILE} ({mismatch}); export the policy again from its run",
    )
    return actor, params, description


def _first_mismatch(expected: Any, actual: Any) -> str | None:
    """Where `actual` first differs from `expected` in structure, shape or dtype."""
    expected_leaves = dict(jax.tree_util.tree_flatten_with_path(expected)[0])
    actual_leaves = dict(jax.tree_util.tree_flatten_with_path(actual)[0])
    for path in sorted(expected_leaves.keys() | actual_leaves.keys(), key=jax.tree_util.keystr):
        name = jax.tree_util.keystr(path)
        if path not in actual_leaves:
            return f"{name} is missing"
        if path not in expected_leaves:
            return f"{name} is not described"
        want, got = expected_leaves[path], actual_leaves[path]
        want = (tuple(want.shape), str(want.dtype))
        got = (tuple(got.shape), str(got.dtype))
        if want != got:
            return (
                f"{name} is saved as {got[1]}{list(got[0])}, described as {want[1]}{list(want[0])}"
            )
    return None
