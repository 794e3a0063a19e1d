"""Replay the Dockerfile's build stage in a virtualenv, where there is no container engine.

The build stage's own instructions are run, in order, as Docker would run them: its ``ARG``
and ``ENV`` values in the environment, each ``RUN`` through its ``SHELL``, each ``COPY`` from a
build context filtered by ``.dockerignore`` into the ``WORKDIR``. The only change is where the
image's virtualenv lives (``/opt/routectl`` becomes a temporary directory), where pip finds
packages (a local wheelhouse instead of PyPI; ``--require-hashes`` still checks every file),
and that pip writes no bytecode.

Like Docker's build cache, a :class:`Layers` store keeps the virtualenv as each ``RUN`` left
it, keyed by every instruction so far, the files each ``COPY`` brought in and the build
arguments in scope: a second replay with another ``PROVIDERS`` (declared after the lock's
install) takes the installed lock from the store instead of installing it again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

VENV_IN_IMAGE = "/opt/routectl"


@dataclasses.dataclass(frozen=True)
class Instruction:
    """One Dockerfile instruction: its keyword (upper case) and its arguments."""

    keyword: str
    arguments: str


def instructions(text: str) -> list[Instruction]:
    """The Dockerfile's instructions, continuation lines joined and comment lines dropped
    (Docker drops comment lines inside a continued instruction too)."""
    kept = [line for line in text.splitlines() if not line.lstrip().startswith("#")]
    joined = re.sub(r"\\\n", "", "\n".join(kept))
    found: list[Instruction] = []
    for raw in re.split(r"\n(?=[A-Z]+\s)", joined):
        if chunk := raw.strip():
            keyword, _, arguments = chunk.partition(" ")
            found.append(Instruction(keyword.upper(), arguments.strip()))
    return found


def build_stage(text: str) -> list[Instruction]:
    """The instructions of the first stage (``FROM ... AS build``), without its FROM."""
    body = instructions(text)
    starts = [i for i, ins in enumerate(body) if ins.keyword == "FROM"]
    end = starts[1] if len(starts) > 1 else len(body)
    return body[starts[0] + 1 : end]


def assignments(arguments: str) -> dict[str, str]:
    """``KEY=value`` pairs of an ENV or ARG instruction (shell-quoted values allowed)."""
    pairs = [word.split("=", 1) for word in shlex.split(arguments)]
    return {pair[0]: pair[1] if len(pair) > 1 else "" for pair in pairs}


def _pattern(pattern: str) -> re.Pattern[str]:
    """A .dockerignore pattern as a regex over a context-relative path."""
    out, i = "", 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pattern.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pattern[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pattern[i] == "?":
            out, i = out + "[^/]", i + 1
        else:
            out, i = out + re.escape(pattern[i]), i + 1
    return re.compile(out + "$")


def build_context(repo: Path, destination: Path) -> Path:
    """Copy what ``.dockerignore`` lets into the build context to ``destination``: a path is
    left out when the last pattern matching it (or a directory above it) excludes it."""
    rules: list[tuple[bool, re.Pattern[str], str]] = []
    for raw in (repo / ".dockerignore").read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            include = line.startswith("!")
            text = line.removeprefix("!").strip("/")
            rules.append((include, _pattern(text), text))

    def excluded(relative: str) -> bool:
        parts = relative.split("/")
        verdict = False
        for include, pattern, _ in rules:
            if any(pattern.match("/".join(parts[: n + 1])) for n in range(len(parts))):
                verdict = not include
        return verdict

    def may_hold_included(relative: str) -> bool:
        return any(include and text.startswith(relative + "/") for include, _, text in rules)

    for root, dirs, files in os.walk(repo):
        here = Path(root).relative_to(repo).as_posix()
        prefix = "" if here == "." else here + "/"
        dirs[:] = [d for d in dirs if not excluded(prefix + d) or may_hold_included(prefix + d)]
        for name in files:
            if not excluded(prefix + name):
                target = destination / prefix / name
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(Path(root) / name, target)
    return destination


@dataclasses.dataclass
class Replay:
    """A replay of the build stage: where it ran and what each RUN printed."""

    venv: Path
    workdir: Path
    output: list[str] = dataclasses.field(default_factory=list)

    def bin(self, name: str) -> Path:
        """A program of the replayed image's virtualenv."""
        return self.venv / "bin" / name


class ReplayError(Exception):
    """A RUN instruction failed: its exit status and output."""

    def __init__(self, script: str, returncode: int, output: str) -> None:
        super().__init__(f"RUN exited {returncode}:\n{script}\n--- output ---\n{output}")
        self.returncode = returncode
        self.output = output


@dataclasses.dataclass
class Layers:
    """Docker's build cache for the replay: the virtualenv as each RUN left it, by key.

    Every replay that uses a store must use its ``venv`` (a virtualenv cannot move: its
    scripts name their own path), so replays sharing a store run one after the other.
    """

    root: Path
    hits: int = 0

    @property
    def venv(self) -> Path:
        """Where the replayed image's virtualenv lives."""
        return self.root / "opt-routectl"

    def _snapshot(self, key: str) -> Path:
        return self.root / "layers" / key

    def restore(self, key: str) -> bool:
        """Put the virtualenv back as the RUN of ``key`` left it, if it is stored."""
        snapshot = self._snapshot(key)
        if not snapshot.is_dir():
            return False
        shutil.rmtree(self.venv, ignore_errors=True)
        shutil.copytree(snapshot, self.venv, symlinks=True)
        self.hits += 1
        return True

    def store(self, key: str) -> None:
        """Keep the virtualenv as it is now, under ``key``."""
        snapshot = self._snapshot(key)
        if self.venv.is_dir() and not snapshot.exists():
            shutil.copytree(self.venv, snapshot, symlinks=True)


def _digest(*parts: str) -> str:
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:24]


def _tree_digest(path: Path) -> str:
    files = [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    h = hashlib.sha256()
    for f in files:
        h.update(f.relative_to(path.parent).as_posix().encode())
        h.update(f.read_bytes())
    return h.hexdigest()


def replay(
    repo: Path,
    scratch: Path,
    *,
    build_args: dict[str, str],
    wheelhouse: Path,
    only_runs_using: str | None = None,
    layers: Layers | None = None,
) -> Replay:
    """Run the Dockerfile's build stage with ``build_args`` under ``scratch``.

    ``only_runs_using``: run only the RUN instructions that mention this word (and no COPY of
    the lock's install): enough to see a refusal that comes before pip. ``layers``: a build
    cache shared with other replays (its virtualenv is used).
    """
    venv = layers.venv if layers is not None else scratch / "opt-routectl"
    if layers is not None:
        shutil.rmtree(venv, ignore_errors=True)
    key = ""
    context = build_context(repo, scratch / "context")
    workdir = scratch / "root"
    workdir.mkdir(parents=True, exist_ok=True)
    shim = scratch / "shim"
    shim.mkdir(exist_ok=True)
    (shim / "python").symlink_to(sys.executable)
    env = {
        "PATH": f"{shim}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(scratch),
        "PIP_CONFIG_FILE": os.devnull,  # no local index or constraints: the lock alone
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": str(wheelhouse),
        # Bytecode only speeds up the image's start; compiling it here would only slow the test.
        "PIP_NO_COMPILE": "1",
    }
    shell = ["/bin/sh", "-c"]
    result = Replay(venv=venv, workdir=workdir)
    for ins in build_stage((repo / "Dockerfile").read_text()):
        arguments = ins.arguments.replace(VENV_IN_IMAGE, str(venv))
        key = _digest(key, ins.keyword, ins.arguments)
        if ins.keyword == "SHELL":
            shell = json.loads(arguments)
        elif ins.keyword == "ENV":
            env |= {k: v.replace("$PATH", env["PATH"]) for k, v in assignments(arguments).items()}
        elif ins.keyword == "ARG":
            for name, default in assignments(arguments).items():
                env[name] = build_args.get(name, default)
                key = _digest(key, name, env[name])
        elif ins.keyword == "WORKDIR":
            workdir = result.workdir = workdir / arguments.lstrip("/")
            workdir.mkdir(parents=True, exist_ok=True)
        elif ins.keyword == "COPY":
            *sources, target = shlex.split(arguments)
            for source in sources:
                copy(context / source, workdir / target)
                key = _digest(key, _tree_digest(context / source))
        elif ins.keyword == "RUN":
            if not only_runs_using or only_runs_using in arguments:
                result.output.append(_run([*shell, arguments], workdir, env, layers, key))
        else:
            raise AssertionError(f"the replay does not know {ins.keyword}: teach it")
    return result


def _run(
    command: list[str], workdir: Path, env: dict[str, str], layers: Layers | None, key: str
) -> str:
    """One RUN, or its layer from the build cache: what it printed."""
    if layers is not None and layers.restore(key):
        return f"(layer {key} from the build cache)\n"
    run = subprocess.run(  # noqa: S603 -- the Dockerfile's own RUN, in a scratch dir
        command, cwd=workdir, env=env, capture_output=True, text=True, check=False, timeout=900
    )
    if run.returncode != 0:
        raise ReplayError(command[-1], run.returncode, run.stdout + run.stderr)
    if layers is not None:
        layers.store(key)
    return run.stdout + run.stderr


def copy(source: Path, target: Path) -> None:
    """COPY one file or a directory's contents."""
    if source.is_dir():
        shutil.copytree(source, target, dirs_exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
