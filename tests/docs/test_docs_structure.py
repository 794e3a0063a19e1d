"""Every doc (docs/*.md and README.md) is put together right: numbered sections count 1, 2,
3... with no gap and no repeat (subsections n.1, n.2... under section n), a contents list
names exactly the numbered sections in order, and every relative link (a file, and a
``#anchor`` in it) resolves.

Markdown is parsed with markdown-it-py (CommonMark), so headings and links inside code
blocks are not taken for real ones. Anchors are GitHub's: the heading's text lower-cased,
punctuation dropped, spaces turned into hyphens, ``-1``, ``-2``... added to repeats.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from markdown_it import MarkdownIt
from markdown_it.token import Token

REPO = Path(__file__).resolve().parents[2]
DOCS = sorted([*(REPO / "docs").glob("*.md"), REPO / "README.md"])
NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+\S")
CONTENTS_ENTRY = re.compile(r"^\d+\.\s+\[")


def doc_id(path: Path) -> str:
    """The doc's path from the repository root."""
    return path.relative_to(REPO).as_posix()


@cache
def tokens(path: Path) -> list[Token]:
    """The doc's markdown-it tokens."""
    return MarkdownIt("commonmark").parse(path.read_text())


def headings(path: Path) -> list[tuple[int, str]]:
    """(level, text) of every heading, in order (the text as GitHub slugs it: code spans
    keep their content, emphasis markers go)."""
    found: list[tuple[int, str]] = []
    stream = tokens(path)
    for i, token in enumerate(stream):
        if token.type == "heading_open":
            inline = stream[i + 1]
            text = "".join(
                c.content for c in inline.children or [] if c.type in {"text", "code_inline"}
            )
            found.append((int(token.tag[1]), text))
    return found


def slug(text: str) -> str:
    """GitHub's anchor for a heading's text."""
    kept = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return kept.replace(" ", "-")


@cache
def anchors(path: Path) -> frozenset[str]:
    """Every heading anchor of the doc, repeats numbered as GitHub numbers them."""
    seen: Counter[str] = Counter()
    found: set[str] = set()
    for _, text in headings(path):
        base = slug(text)
        found.add(base if seen[base] == 0 else f"{base}-{seen[base]}")
        seen[base] += 1
    return frozenset(found)


def links(path: Path) -> list[str]:
    """Every link target (href) of the doc, outside code."""
    found: list[str] = []
    for token in tokens(path):
        for child in token.children or []:
            if child.type == "link_open":
                found.append(str(child.attrs["href"]))
            if child.type == "image":
                found.append(str(child.attrs["src"]))
    return found


def test_the_parser_sees_what_a_reader_sees() -> None:
    """Headings in code blocks are not headings; slugs follow GitHub's rules."""
    design = REPO / "docs" / "design.md"
    assert not [t for _, t in headings(design) if t.startswith("routectl.model")]  # a code comment
    assert slug("4. Options and `ConfigError`".replace("`", "")) == "4-options-and-configerror"
    assert slug("7. Node IPAM (--allocate-node-cidrs)") == "7-node-ipam---allocate-node-cidrs"
    assert slug("5. Errors: mapping a cloud's failures") == "5-errors-mapping-a-clouds-failures"


def numbering_problems(path: Path) -> list[str]:
    """Numbered headings under one parent that do not count 1, 2, 3..., or whose number
    does not start with their section's (### 7.1 belongs under ## 7)."""
    problems: list[str] = []
    parents: dict[int, str] = {}  # level -> number of the last numbered heading there
    expected: dict[tuple[int, str], int] = {}  # (level, parent number) -> next number
    for level, text in headings(path):
        for deeper in [lvl for lvl in parents if lvl >= level]:
            del parents[deeper]
        match = NUMBERED.match(text)
        if not match:
            continue
        number = match.group(1)
        *prefix, last = number.split(".")
        parent = parents[max(parents)] if parents else ""
        if ".".join(prefix) != parent:
            problems.append(f"{text!r} is numbered {number} under section {parent or '(none)'}")
        want = expected.get((level, parent), 1)
        if int(last) != want:
            problems.append(
                f"{text!r} is numbered {number}, expected {'.'.join([*prefix, str(want)])}"
            )
        expected[(level, parent)] = int(last) + 1
        parents[level] = number
    return problems


def contents(path: Path) -> list[tuple[str, str]]:
    """(link text, anchor) of the doc's contents list: the first numbered list of #links
    before its first section (empty if it has none)."""
    stream = tokens(path)
    entries: list[tuple[str, str]] = []
    inside = False
    for token in stream:
        if token.type == "heading_open" and token.tag != "h1":
            break
        if token.type == "ordered_list_open":
            inside = True
        elif token.type == "ordered_list_close":
            if entries:
                break
            inside = False
        elif inside and token.type == "inline" and token.children:
            children = token.children
            if children[0].type == "link_open" and str(children[0].attrs["href"]).startswith("#"):
                end = next(j for j, c in enumerate(children) if c.type == "link_close")
                text = "".join(c.content for c in children[1:end])
                entries.append((text, str(children[0].attrs["href"])[1:]))
    return entries


def contents_problems(path: Path) -> list[str]:
    """Differences between the contents list and the numbered top sections (## n. Title)."""
    listed = contents(path)
    top = [text for level, text in headings(path) if level == 2 and NUMBERED.match(text)]
    if not listed:
        return [f"{len(top)} numbered sections and no contents list"] if len(top) >= 3 else []
    wanted = [(t.split(" ", 1)[1], slug(t)) for t in top]
    missing = [
        f"{text!r} (#{anchor}) is not in the contents"
        for text, anchor in wanted
        if (text, anchor) not in listed
    ]
    extra = [
        f"the contents list {text!r} (#{anchor}), no such section"
        for text, anchor in listed
        if (text, anchor) not in wanted
    ]
    order = [] if missing or extra or listed == wanted else ["the contents list is out of order"]
    return missing + extra + order


def link_problems(path: Path) -> list[str]:
    """Relative links to a file or directory that does not exist, or to an #anchor that is
    no heading of the .md file it names (a bare #anchor: of the doc itself)."""
    broken: list[str] = []
    for href in links(path):
        parts = urlsplit(href)
        if parts.scheme or parts.netloc:
            continue
        target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
        if not target.exists():
            broken.append(f"{href}: no such file")
        elif (
            parts.fragment
            and target.suffix == ".md"
            and unquote(parts.fragment) not in anchors(target)
        ):
            broken.append(f"{href}: no heading with that anchor")
    return broken


@pytest.mark.parametrize("path", DOCS, ids=doc_id)
def test_section_numbers_count_up_without_gaps_or_repeats(path: Path) -> None:
    """Numbered sections are 1, 2, 3... under each parent, subsections n.1, n.2... under n."""
    assert numbering_problems(path) == []


@pytest.mark.parametrize("path", DOCS, ids=doc_id)
def test_the_contents_list_names_every_numbered_section_in_order(path: Path) -> None:
    """A doc's contents list names exactly its numbered top sections, in order, each by its
    heading's text (less the number) and anchor; a doc of 3 or more sections has one."""
    assert contents_problems(path) == []


@pytest.mark.parametrize("path", DOCS, ids=doc_id)
def test_every_relative_link_resolves(path: Path) -> None:
    """Every relative link names a file that exists, and its #anchor a heading of it."""
    assert link_problems(path) == []


def test_the_checks_catch_the_slips_they_are_for(tmp_path: Path) -> None:
    """Two sections numbered 2, a subsection numbered out of turn, a contents list short of a
    section, a broken file link and a broken anchor are each found."""
    (tmp_path / "other.md").write_text("# Other\n\n## Known gaps\n")
    doc = tmp_path / "doc.md"
    doc.write_text(
        "# T\n\n1. [A](#1-a)\n2. [B](#2-b)\n\n## 1. A\n\n### 1.1 x\n\n### 1.3 y\n\n"
        "## 2. B\n\n## 2. C\n\n```sh\n## 9. not a heading\n```\n\n"
        "[gone](missing.md) [here](#1-a) [nowhere](#9-z) [there](other.md#known-gaps) "
        "[not there](other.md#known-gap)\n"
    )
    assert numbering_problems(doc) == [
        "'1.3 y' is numbered 1.3, expected 1.2",
        "'2. C' is numbered 2, expected 3",
    ]
    assert contents_problems(doc) == ["'C' (#2-c) is not in the contents"]
    assert link_problems(doc) == [
        "missing.md: no such file",
        "#9-z: no heading with that anchor",
        "other.md#known-gap: no heading with that anchor",
    ]
