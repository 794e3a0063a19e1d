#!/usr/bin/env python3
"""Compile requirements/image.lock, the container image's locked third-party packages.

* ``lock`` (the default): write the plugin block of requirements/image.in from providers/
  (every ``providers/<name>/pyproject.toml`` except the example, ``providers/template``),
  compile the lock with pip-tools (``pip-compile --generate-hashes``), then drop the local
  trees' own entries (``routectl @ file:...``): the image installs those from the checkout.
* ``check``: exit 1, naming the plugins, if image.in's plugin block is not what providers/
  holds (no network, no pip-tools; the packaging tests run it).

Run it through ``scripts/lock-image``, which brings pip-tools into a virtualenv of its own.
The lock is what the Dockerfile installs with ``pip install --require-hashes``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
IMAGE_IN = REPO / "requirements" / "image.in"
IMAGE_LOCK = REPO / "requirements" / "image.lock"
EXAMPLE = "template"
"""providers/template is the example a new plugin is copied from: never in an image."""
BEGIN = "# -- plugins: written by scripts/lock-image from providers/ (do not edit) --"
END = "# -- end of plugins --"


def shipped_plugins(repo: Path = REPO) -> list[str]:
    """The directory names of the plugins an image may carry, sorted."""
    return sorted(
        p.parent.name
        for p in (repo / "providers").glob("*/pyproject.toml")
        if p.parent.name != EXAMPLE
    )


def plugin_block(plugins: list[str]) -> str:
    """image.in's block of local trees: the core, then each plugin."""
    return "\n".join([BEGIN, ".", *(f"./providers/{name}" for name in plugins), END])


def with_block(text: str, block: str) -> str:
    """image.in's ``text`` with its plugin block replaced by ``block``."""
    pattern = re.compile(re.escape(BEGIN) + r".*?" + re.escape(END), re.DOTALL)
    if not pattern.search(text):
        raise SystemExit(f"{IMAGE_IN}: no plugin block ({BEGIN!r} ... {END!r})")
    return pattern.sub(lambda _: block, text)


def strip_local_trees(lock: str) -> str:
    """The lock without ``name @ file:...`` entries (and pip-compile's warnings about them)."""
    entries = re.split(r"\n(?=[^\s])", lock)
    kept = [
        e
        for e in entries
        if " @ file:" not in e.split("\n", 1)[0]
        and not e.startswith("# WARNING: pip install will require the following package")
    ]
    return "\n".join(kept)


def check() -> int:
    """Exit status 1 (with a message) when image.in's plugin block is stale."""
    text = IMAGE_IN.read_text()
    wanted = plugin_block(shipped_plugins())
    if wanted not in text:
        sys.stderr.write(
            f"{IMAGE_IN.relative_to(REPO)} does not list exactly the plugins in providers/ "
            f"({', '.join(shipped_plugins())}): run scripts/lock-image\n"
        )
        return 1
    return 0


def lock() -> int:
    """Rewrite image.in's plugin block and compile the lock."""
    IMAGE_IN.write_text(with_block(IMAGE_IN.read_text(), plugin_block(shipped_plugins())))
    env = os.environ | {"CUSTOM_COMPILE_COMMAND": "scripts/lock-image"}
    command = [
        sys.executable,
        "-m",
        "piptools",
        "compile",
        "--quiet",
        "--generate-hashes",
        "--allow-unsafe",  # setuptools: the local trees are built without isolation
        "--strip-extras",
        "--no-emit-index-url",
        "--no-emit-find-links",
        "--output-file=requirements/image.lock",
        "requirements/image.in",
    ]
    subprocess.run(command, cwd=REPO, env=env, check=True)  # noqa: S603 -- fixed arguments
    IMAGE_LOCK.write_text(strip_local_trees(IMAGE_LOCK.read_text()))
    return 0


def main(argv: list[str]) -> int:
    """``lock`` (default) or ``check``."""
    match argv:
        case [] | ["lock"]:
            return lock()
        case ["check"]:
            return check()
    sys.stderr.write("usage: lock_image.py [lock|check]\n")
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
