"""Which published figures are still fresh, and one command that republishes the rest.

A results file is fresh when its provenance names a clean tree at a commit, its command,
and no source file the command runs has changed its code between that commit and the head.
The files a command runs are the repository modules its entry module imports, followed
through every `import` statement (those inside functions included) and every string that
names a module, with the data files (prompt templates, assets) of the packages a string
names; so the check is conservative: a change anywhere in what the program can execute or
read makes its figures stale. The environment and algorithm registries load their modules
by name (`{"craft": "alemlite.envs.craft.spec:SPEC"}`), so an entry counts where its name
is written: in a string of those files (a default, a preset) or a word of the command.
A Python file's code is its syntax tree without docstrings: a change to its documentation,
comments or layout alone runs the same program, and leaves its figures fresh; any change
to a data file counts.
Files without provenance of their own (a run folder's reports, config, adapters) belong to
the nearest `summary.json`, `gap.json` or other provenance-bearing JSON in a folder above.

    alemlite freshness              # list every results file and why it is stale
    alemlite freshness --check      # exit 1 if any is stale
    alemlite freshness --republish  # rerun each stale file's command, in order

Republishing runs the recorded commands (old flag names spelled anew, `RENAMED_FLAGS`)
one after another, each in a fresh worktree of the head commit (a command that ships a
checkpoint leaves its tree dirty, and the next publish would be refused there), and copies
what each one wrote back into this checkout, which must be clean; run it on a quiet machine.
A command that asks the scripted stand-in model on this machine (`--model stand-in
--base-url http://127.0.0.1:PORT/v1`) gets one on that port for its run. A command that
fails is reported, its outputs are not copied, and the rest still run; the exit status is
then 1. Every command reads the checkpoints of the head commit: commit what a pass
republished before republishing the reports that read it.
A rerun whose results record different options (`config`) than the published ones ran
another experiment under the same command, if a default changed since: it is reported as
failed with the options that moved (renamed ones followed, where and how it writes left
out), and nothing comes back; where each moved option keeps the experiment (a new option
whose default is the earlier behaviour) `--accept-moved-options` republishes it, else
rerun the command with the earlier options spelled out. A `python -m benchmarks.*` command
has its flags parsed into its config before it runs, so such a move stops it at once. A
SIGTERM stops the rerun and removes its worktree.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import json
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import tyro

from alemlite.core.errors import ConfigError
from alemlite_app.experiment_options import moved_options, report_moved, script_options
from benchmarks.harness import RESULTS_DIR as RESULTS
from benchmarks.provenance import TreeState
from llm_bridge.stand_in import StandInServer

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("alemlite", "alemlite_app", "baselines", "benchmarks", "llm_bridge")
# flags renamed since a results file recorded its command: module -> old -> new
RENAMED_FLAGS = {
    "training_speed": {"--agents": "--num-agents"},
    "marl_dining": {"--sizes": "--num-agents"},
}


@dataclass(frozen=True)
class Provenance:
    commit: str | None
    dirty: bool | None
    command: str | None
    date: str | None
    wall_time_s: float | None  # how long the command ran, to plan a republish


def provenance(record: dict) -> Provenance | None:
    """The provenance of a results JSON, in any of the layouts the benchmarks have written:
    a `provenance` block, a `machine` block (training benchmarks) or top-level keys."""
    for block in (record.get("provenance"), record.get("machine"), record):
        if isinstance(block, dict) and "commit" in block:
            dirty = block.get("dirty")
            dirty = {"True": True, "False": False}.get(dirty, dirty)  # older blocks: strings
            wall = block.get("wall_time_s", record.get("wall_s"))
            return Provenance(block["commit"], dirty, block.get("command"), block.get("date"), wall)
    return None


def entry_module(command: str) -> str | None:
    """The repository module a recorded command runs: `python -m X`, or the module behind
    `alemlite WORDS` / `python -m alemlite_app.cli WORDS`."""
    words = shlex.split(command)
    if words[:2] == ["python", "-m"] and len(words) > 2:
        module, rest = words[2], words[3:]
    elif words[:1] == ["alemlite"]:
        module, rest = "alemlite_app.cli", words[1:]
    else:
        return None
    if module != "alemlite_app.cli":
        return module
    from alemlite_app.cli import COMMANDS  # the CLI imports this module's command lazily

    matches = [key for key in COMMANDS if tuple(rest[: len(key)]) == key]
    return COMMANDS[max(matches, key=len)].split(":")[0] if matches else module


def module_file(module: str, repo: Path = REPO) -> Path | None:
    base = repo.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


# A string naming a repository module, as lazy registries load them ("baselines.ippo:IPPO",
# "alemlite.envs.dining.spec:SPEC"), or a package whose files are read as data
# (`resources.files("alemlite.envs.dining") / "prompts"`).
# A bare package name ("benchmarks") is as often a folder in a path, so a dot is required.
MODULE_STRING = re.compile(rf"(?:{'|'.join(PACKAGES)})(?:\.\w+)+(?::\w+)?")


@dataclass
class References:
    """What one source file refers to."""

    modules: set[str] = field(default_factory=set)  # imported, or named in a string
    data: set[str] = field(default_factory=set)  # packages named in a string (data files)
    # A registry's entries, name -> module (`{"craft": "alemlite.envs.craft.spec:SPEC"}`):
    # loaded only by that name, so they count where the name is written.
    registry: dict[str, str] = field(default_factory=dict)
    words: set[str] = field(default_factory=set)  # every string constant


def _module_string(node: ast.AST) -> str | None:
    is_string = isinstance(node, ast.Constant) and isinstance(node.value, str)
    return node.value.split(":")[0] if is_string and MODULE_STRING.fullmatch(node.value) else None


def _references(path: Path, module: str, repo: Path) -> References:
    """The repository modules `path` (module `module`) imports, at any depth of its code,
    or names in a string; the packages a string names, whose data files (templates,
    assets) it may read; its registries' entries; and its string constants."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = References()
    names: set[str] = set()
    tree = ast.parse(path.read_text(), str(path))
    in_registry = set()  # a registry's own keys and values are no use of them
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                name = _module_string(value)
                if name and isinstance(key, ast.Constant) and isinstance(key.value, str):
                    found.registry[key.value] = name
                    in_registry.update((id(key), id(value)))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)  # submodules
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) in in_registry:
                continue
            found.words.add(node.value)
            name = _module_string(node)
            if name:
                names.add(name)
                if (repo.joinpath(*name.split(".")) / "__init__.py").is_file():
                    found.data.add(name)
    found.modules = _with_parents(names, repo)
    return found


def _with_parents(names: set[str], repo: Path) -> set[str]:
    """The repository modules among `names` and their parent packages (which run first)."""
    found = set()
    for name in names:
        parts = name.split(".")
        if parts[0] in PACKAGES:
            found.update(".".join(parts[:n]) for n in range(1, len(parts) + 1))
    return {name for name in found if module_file(name, repo)}


def data_files(package: str, repo: Path = REPO) -> set[Path]:
    """The files of a package that are not Python, outside its subpackages and caches."""
    root = repo.joinpath(*package.split("."))
    found = set()
    for path in root.rglob("*"):
        inner = path.relative_to(root).parent
        subpackage = any(
            (root / Path(*inner.parts[: n + 1]) / "__init__.py").is_file()
            for n in range(len(inner.parts))
        )
        if path.is_file() and path.suffix not in (".py", ".pyc") and not subpackage:
            found.add(path)
    return found


def closure(module: str, repo: Path = REPO, command: str = "") -> set[Path]:
    """The source files of `module` and of every repository module it imports or names,
    transitively, with the data files of the packages they name. A registry entry counts
    when its name is written in a string of those files or a word of `command` (an
    environment or algorithm is loaded by its name, and only then)."""
    seen: set[str] = set()
    packages: set[str] = set()
    registry: dict[str, set[str]] = {}
    words = set(shlex.split(command))
    parts = module.split(".")
    todo = [".".join(parts[:n]) for n in range(1, len(parts) + 1)]  # packages run first
    while todo:
        while todo:
            name = todo.pop()
            if name in seen or (path := module_file(name, repo)) is None:
                continue
            seen.add(name)
            found = _references(path, name, repo)
            todo.extend(found.modules - seen)
            packages |= found.data
            words |= found.words
            for key, target in found.registry.items():
                registry.setdefault(key, set()).add(target)
        for key in words & registry.keys():  # names written so far load their entries
            todo.extend(_with_parents(registry.pop(key), repo) - seen)
    files = {module_file(name, repo) for name in seen}
    return files.union(*(data_files(package, repo) for package in packages))


def _git(repo: Path, *args: str, text: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=text)


def code(source: str) -> str | None:
    """What a module executes: its syntax tree without docstrings (comments and layout never
    reach the tree); None for source that does not parse."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and body
            and isinstance(body[0], ast.Expr)
            and isinstance(body[0].value, ast.Constant)
            and isinstance(body[0].value.value, str)
        ):
            node.body = body[1:] or [ast.Pass()]
    return ast.dump(tree)


@functools.cache
def code_changed(repo: Path, commit: str, name: str, head: str = "HEAD") -> bool:
    """Whether file `name` runs other code (or, for a data file, holds other bytes) at `head`
    than at `commit`; added or removed files count as changed. Cached: pass `head` as a
    hash."""
    then, now = (_git(repo, "show", f"{rev}:{name}", text=False) for rev in (commit, head))
    if then.returncode != 0 or now.returncode != 0:
        return True
    if not name.endswith(".py"):  # a data file (a template, an image): any change counts
        return then.stdout != now.stdout
    before = code(then.stdout.decode())
    return before is None or before != code(now.stdout.decode())


@dataclass
class Verdict:
    path: Path  # the results file that carries the provenance
    provenance: Provenance | None
    reasons: list[str] = field(default_factory=list)  # empty when fresh

    @property
    def fresh(self) -> bool:
        return not self.reasons


def judge(path: Path, record: dict, repo: Path = REPO) -> Verdict:
    found = provenance(record)
    verdict = Verdict(path, found)
    if found is None:
        verdict.reasons.append("no provenance")
        return verdict
    if not found.command:
        verdict.reasons.append("no command recorded")
    if found.dirty is not False:
        verdict.reasons.append("dirty tree" if found.dirty else "tree state not recorded")
    resolved = _git(repo, "rev-parse", "--verify", "--quiet", f"{found.commit}^{{commit}}")
    if resolved.returncode != 0:
        verdict.reasons.append(f"commit {found.commit} not in this history")
        return verdict
    if not found.command:
        return verdict
    module = entry_module(found.command)
    if module is None or module_file(module, repo) is None:
        verdict.reasons.append(f"command runs no repository module: {found.command}")
        return verdict
    files = sorted(str(p.relative_to(repo)) for p in closure(module, repo, found.command))
    commit = resolved.stdout.strip()
    head = _git(repo, "rev-parse", "HEAD").stdout.strip()  # a hash: answers are cached by it
    changed = _git(repo, "diff", "--name-only", commit, head, "--", *files)
    names = [name for name in changed.stdout.split() if code_changed(repo, commit, name, head)]
    if names:
        more = f" and {len(names) - 3} more" if len(names) > 3 else ""
        verdict.reasons.append(f"code changed since: {', '.join(names[:3])}{more}")
    return verdict


def verdicts(results: Path = RESULTS, repo: Path = REPO) -> list[Verdict]:
    """One verdict per provenance-bearing results file; a JSON without provenance that no
    such file in a folder above covers gets a verdict of its own ("no provenance")."""
    records = {}
    for path in sorted(results.rglob("*.json")):
        if "runs" in path.relative_to(results).parts:
            continue  # a run folder's scratch, never cited
        records[path] = json.loads(path.read_text())
    carriers = {path for path, record in records.items() if provenance(record) is not None}
    carrier_dirs = {path.parent for path in carriers} - {results}
    out = [judge(path, records[path], repo) for path in sorted(carriers)]
    for path, record in records.items():
        if path not in carriers and not carrier_dirs.intersection(path.parents):
            out.append(judge(path, record, repo))
    return sorted(out, key=lambda verdict: verdict.path)


def republish_command(command: str) -> list[str]:
    """A recorded command as it is spelled today, run with this interpreter."""
    words = shlex.split(command)
    if words[0] == "alemlite":
        words = ["python", "-m", "alemlite_app.cli", *words[1:]]
    module = words[2].removeprefix("benchmarks.")
    renamed = RENAMED_FLAGS.get(module, {})
    words = [renamed.get(word, word) for word in words]
    if "--publish" not in words:
        words.append("--publish")
    return [sys.executable, *words[1:]]


def stand_in_address(command: str) -> tuple[str, int] | None:
    """(environment, port) of the stand-in model a recorded command asks on this machine, or
    None when it asks none."""
    words = shlex.split(command)

    def value(flag: str) -> str | None:
        return words[words.index(flag) + 1] if flag in words[:-1] else None

    url = urlsplit(value("--base-url") or "")
    if value("--model") != "stand-in" or url.hostname not in ("127.0.0.1", "localhost"):
        return None
    return value("--env") or "dining", url.port or 80


@contextlib.contextmanager
def _stand_in_for(command: str) -> Iterator[None]:
    address = stand_in_address(command)
    if address is None:
        yield
        return
    env, port = address
    with StandInServer(env, "127.0.0.1", port, 0):
        yield


def _changed_files(tree: Path) -> tuple[list[str], list[str]]:
    """(written, deleted) paths of a worktree against its commit, untracked files included."""
    status = _git(tree, "status", "--porcelain", "--untracked-files=all", "-z").stdout
    written, deleted = [], []
    for entry in filter(None, status.split("\0")):
        code, name = entry[:2], entry[3:]
        (deleted if "D" in code else written).append(name)
    return written, deleted


def _renamed_options(module: str) -> dict[str, str]:
    """A script's options renamed since (`RENAMED_FLAGS`), earlier name -> today's."""
    renamed = RENAMED_FLAGS.get(module.removeprefix("benchmarks."), {})
    return {old.removeprefix("--").replace("-", "_"): new.removeprefix("--").replace("-", "_")
            for old, new in renamed.items()}  # fmt: skip


def _read_json(path: Path) -> dict:
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _options_moved(tree: Path, repo: Path, written: list[str], module: str) -> bool:
    """Report (and say True) where a rerun's recorded options differ from the published."""
    moved = False
    for name in written:
        if name.endswith(".json") and (repo / name).exists():
            published, rerun = _read_json(repo / name), _read_json(tree / name)
            changes = moved_options(published, rerun, _renamed_options(module))
            if changes:
                moved = True
                report_moved(name, changes, "kept the published file")
    return moved


def options_moved_before(command: str, published: list[Path]) -> bool:
    """Report (and say True) where a benchmark script's options, read before it runs,
    differ from those its published files record: its rerun would be refused after all its
    work. Other commands are judged after their run only."""
    words = republish_command(command)
    module, path = words[2], module_file(words[2])
    options = script_options(module, path, words[3:]) if path else None
    if options is None:
        return False
    moved = False
    for results in published:
        changes = moved_options(_read_json(results), {"config": options}, _renamed_options(module))
        if changes:
            moved = True
            name = results.relative_to(REPO) if results.is_relative_to(REPO) else results
            report_moved(str(name), changes, "not rerun")
    return moved


def republish_in_worktree(
    command: str, repo: Path = REPO, accept_moved_options: bool = False
) -> bool:
    """Run one recorded command in a fresh worktree of `repo`'s head commit and, if it
    succeeds with the options the published results record, copy what it wrote (and remove
    what it deleted) into `repo`."""
    words = republish_command(command)
    with tempfile.TemporaryDirectory(prefix="republish-") as scratch:
        tree = Path(scratch) / "tree"
        added = _git(repo, "worktree", "add", "--detach", str(tree), "HEAD")
        if added.returncode != 0:
            print(added.stderr.strip(), file=sys.stderr)
            return False
        try:
            with _stand_in_for(command):
                succeeded = subprocess.run(words, cwd=tree).returncode == 0
            if succeeded:
                written, deleted = _changed_files(tree)
                moved = not accept_moved_options and _options_moved(tree, repo, written, words[2])
                succeeded = not moved
            if succeeded:
                for name in written:
                    (repo / name).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copy2(tree / name, repo / name)
                for name in deleted:
                    (repo / name).unlink(missing_ok=True)
            return succeeded
        finally:
            _git(repo, "worktree", "remove", "--force", str(tree))


@dataclass(frozen=True)
class FreshnessConfig:
    """List which published results are stale, or republish them."""

    check: bool = False
    """Exit 1 if any results file is stale."""
    republish: bool = False
    """Rerun every stale file's recorded command from this (clean) tree, in order."""
    accept_moved_options: bool = False
    """Republish where a rerun records other options than the published file (listed), after
    checking that each keeps the experiment."""
    only: tuple[str, ...] = ()
    """Consider only results files whose path under benchmarks/results/ matches one of
    these glob patterns (e.g. 'training_speed_*' 'gap_dining_*/*')."""


def freshness(config: FreshnessConfig) -> None:
    """List which published results are stale, or republish them."""
    found = [
        verdict for verdict in verdicts()
        if not config.only or any(verdict.path.relative_to(RESULTS).match(p) for p in config.only)
    ]  # fmt: skip
    stale = [verdict for verdict in found if not verdict.fresh]
    for verdict in found:
        state = "fresh" if verdict.fresh else "STALE: " + "; ".join(verdict.reasons)
        print(f"{verdict.path.relative_to(REPO)}  {state}")
    hours = sum(v.provenance.wall_time_s or 0 for v in stale if v.provenance) / 3600
    print(
        f"{len(found) - len(stale)} fresh, {len(stale)} stale (their last runs took {hours:.1f} h)"
    )
    if config.republish:
        if TreeState.now().dirty:
            raise ConfigError(
                "--republish copies the rerun results into this checkout, which has "
                "uncommitted changes; commit or stash them first"
            )
        commands = list(
            dict.fromkeys(
                v.provenance.command for v in stale if v.provenance and v.provenance.command
            )
        )
        # a SIGTERM unwinds like Ctrl-C, so the scratch worktree is removed
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
        failed = []
        for number, command in enumerate(commands, 1):
            spelled = shlex.join(republish_command(command)[1:])
            print(f"[{number}/{len(commands)}] {spelled}", flush=True)
            published = [v.path for v in stale if v.provenance and v.provenance.command == command]
            accept = config.accept_moved_options
            if (not accept and options_moved_before(command, published)) or (
                not republish_in_worktree(command, accept_moved_options=accept)
            ):
                failed.append(command)
        unrunnable = [v for v in stale if not (v.provenance and v.provenance.command)]
        for verdict in unrunnable:
            print(f"no command to rerun: {verdict.path.relative_to(REPO)}")
        if failed or unrunnable:
            sys.exit(f"{len(failed)} command(s) failed: {'; '.join(failed)}" if failed else 1)
    elif config.check and stale:
        sys.exit(1)


if __name__ == "__main__":
    freshness(tyro.cli(FreshnessConfig))
