"""Replay the Dockerfile's build stage in a virtualenv, where there is no container engine.

The build stage's own instructions are run, in order, as Docker would run them: its ``ARG``
and ``ENV`` values in the environment, each ``RUN`` through its ``SHELL``, each ``COPY`` from a
build context filtered by ``.dockerignore`` into the ``WORKDIR``. The only change is where the
image's virtualenv lives (``/opt/routectl`` becomes a temporary directory), where pip finds
packages (a local wheelhouse instead of PyPI; ``--require-hashes`` still checks every file),
and that pip writes no bytecode.
"""

from __future__ import annotations

import dataclasses
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


def replay(
    repo: Path,
    scratch: Path,
    *,
    build_args: dict[str, str],
    wheelhouse: Path,
    only_runs_using: str | None = None,
) -> Replay:
    """Run the Dockerfile's build stage with ``build_args`` under ``scratch``.

    ``only_runs_using``: run only the RUN instructions that mention this word (and no COPY of
    the lock's install): enough to see a refusal that comes before pip.
    """
    venv = scratch / "opt-routectl"
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
        if ins.keyword == "SHELL":
            shell = json.loads(arguments)
        elif ins.keyword == "ENV":
            env |= {k: v.replace("$PATH", env["PATH"]) for k, v in assignments(arguments).items()}
        elif ins.keyword == "ARG":
            for name, default in assignments(arguments).items():
                env[name] = build_args.get(name, default)
        elif ins.keyword == "WORKDIR":
            workdir = result.workdir = workdir / arguments.lstrip("/")
            workdir.mkdir(parents=True, exist_ok=True)
        elif ins.keyword == "COPY":
            *sources, target = shlex.split(arguments)
            for source in sources:
                copy(context / source, workdir / target)
        elif ins.keyword == "RUN":
            if only_runs_using and only_runs_using not in arguments:
                continue
            run = subprocess.run(  # noqa: S603 -- the Dockerfile's own RUN, in a scratch dir
                [*shell, arguments],
                cwd=workdir,
                env=env,
                capture_output=True,
                text=True,
                check=False,
                timeout=900,
            )
            result.output.append(run.stdout + run.stderr)
            if run.returncode != 0:
                raise ReplayError(arguments, run.returncode, run.stdout + run.stderr)
        else:
            raise AssertionError(f"the replay does not know {ins.keyword}: teach it")
    return result


def copy(source: Path, target: Path) -> None:
    """COPY one file or a directory's contents."""
    if source.is_dir():
        shutil.copytree(source, target, dirs_exist_ok=True)
    else:
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
