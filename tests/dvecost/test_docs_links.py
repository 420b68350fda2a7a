"""The documents hold together: relative links resolve, a section of docs/benchmarks.md quoted
by name exists, and nothing in the repository cites a document that is not in it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("runtime", "dve", "statespace", "ocm", "scenarios", "dvecost")


def markdown_files() -> list[Path]:
    return sorted([ROOT / "README.md", *(ROOT / "docs").rglob("*.md"),
                   *(ROOT / "tools").rglob("*.md")])


def source_files() -> list[Path]:
    return sorted(p for pkg in PACKAGES + ("tests", "tools") for p in (ROOT / pkg).rglob("*.py"))


@pytest.mark.parametrize("doc", markdown_files(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(doc):
    text = doc.read_text()
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target) or target.startswith("#"):
            continue
        path = (doc.parent / target.split("#")[0]).resolve()
        if not path.exists():
            broken.append(target)
    assert not broken, f"{doc.relative_to(ROOT)}: links to missing files {broken}"


def test_quoted_benchmark_sections_exist():
    """``docs/benchmarks.md, "Section"`` in a current document names a heading there."""
    headings = set(re.findall(r"^#+ (.+?)\s*$", (ROOT / "docs" / "benchmarks.md").read_text(),
                              flags=re.M))
    quoted = []
    for path in (p for p in markdown_files() if "history" not in p.parts):
        for name in re.findall(r'benchmarks\.md`*,\s*"([^"]+)"', path.read_text()):
            quoted.append((path.relative_to(ROOT), name))
    assert quoted, "no document quotes a section of docs/benchmarks.md: the pattern is stale"
    missing = [(str(p), n) for p, n in quoted if n not in headings]
    assert not missing, missing


def test_no_citation_of_documents_outside_the_repository():
    """The design notes, the language reference and the style guide the project was written
    from live outside the repository; the code and the current docs cite our own docs."""
    outside = ("DESIGN" + ".md", "dve-" + "reference", "style-" + "guide")
    this = Path(__file__).resolve()
    current = [p for p in markdown_files() if "history" not in p.parts] + source_files()
    hits = [f"{p.relative_to(ROOT)}: {word}" for p in current if p.resolve() != this
            for word in outside if word in p.read_text()]
    assert not hits, hits
