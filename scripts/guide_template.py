#!/usr/bin/env python3
"""Keep docs/writing-a-provider.md and providers/template/ one source.

The guide shows every file of the template in a fenced block preceded by a marker line
``<!-- template: <path inside providers/template> -->``.

* ``sync``: rewrite those blocks from the template's files (run it after editing them);
* ``check``: exit 1, naming the file, if a block differs from its file or a file is missing;
* ``extract DIR``: write the guide's blocks as files under DIR, as a reader would copy them.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "writing-a-provider.md"
TEMPLATE = ROOT / "providers" / "template"
BLOCK = re.compile(r"<!-- template: (?P<path>\S+) -->\n```(?P<lang>\w*)\n(?P<body>.*?)```\n", re.S)
SKIP = ("__pycache__", ".egg-info", ".mypy_cache", ".pytest_cache", "build")


def template_files() -> list[str]:
    """The template's files, relative to it."""
    return sorted(
        str(p.relative_to(TEMPLATE))
        for p in TEMPLATE.rglob("*")
        if p.is_file() and not any(part.endswith(SKIP) for part in p.parts)
    )


def blocks(text: str) -> dict[str, str]:
    """Path -> the block's body, as the guide shows it."""
    return {m["path"]: m["body"] for m in BLOCK.finditer(text)}


def sync() -> int:
    """Rewrite the guide's blocks from the files."""

    def body(match: re.Match[str]) -> str:
        content = (TEMPLATE / match["path"]).read_text(encoding="utf-8")
        return f"<!-- template: {match['path']} -->\n```{match['lang']}\n{content}```\n"

    GUIDE.write_text(BLOCK.sub(body, GUIDE.read_text(encoding="utf-8")), encoding="utf-8")
    return check()


def check() -> int:
    """0 if every template file is in the guide, exactly."""
    shown = blocks(GUIDE.read_text(encoding="utf-8"))
    problems = [f"{p}: not shown in the guide" for p in template_files() if p not in shown]
    for path, body in shown.items():
        file = TEMPLATE / path
        if not file.is_file():
            problems.append(f"{path}: shown in the guide but not in providers/template")
        elif file.read_text(encoding="utf-8") != body:
            problems.append(
                f"{path}: the guide's block differs (run scripts/guide_template.py sync)"
            )
    for problem in problems:
        sys.stderr.write(problem + "\n")
    return 1 if problems else 0


def extract(directory: Path) -> int:
    """Write the guide's blocks as files under ``directory``."""
    for path, body in blocks(GUIDE.read_text(encoding="utf-8")).items():
        target = directory / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
    return 0


def main(argv: list[str]) -> int:
    """The command line."""
    if argv[:1] == ["sync"]:
        return sync()
    if argv[:1] == ["check"]:
        return check()
    if len(argv) == 2 and argv[0] == "extract":  # noqa: PLR2004
        return extract(Path(argv[1]))
    sys.stderr.write(str(__doc__))
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
