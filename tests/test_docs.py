"""The README a newcomer reads in ten minutes, and the documentation site beside it (``docs/``, ``mkdocs.yml``):
README stays short, every section it once held is a page it links to, every relative link of README and of the docs
pages resolves (file and heading), and the site builds offline with ``mkdocs build --strict``.
(tests/test_readme.py checks the commands and YAML blocks of the same pages.)"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
README_MAX_LINES = 300

MOVED = ("Get in", "Status", "From deploy to a first job", "Grafana", "What it costs, before anything is spent",
         "Changing a deployed cluster", "Taking a project down", "A project file", "Datasets already in S3",
         "The command line (reference)", "Commands that call AWS", "Deploying: details", "After deploy: acceptance",
         "Acceptance on Kubernetes (HyperPod on EKS)", "What each flavour expects of its image", "Layout",
         "Tests and quality gates", "Benchmarks", "Troubleshooting", "Sources", "Words used here")
"""The sections of the 1,105-line README this one replaced: each is now a heading of a docs page README links to."""

FENCE = re.compile(r"^```.*?^```", re.S | re.M)
CODE = re.compile(r"`[^`\n]+`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*$", re.M)


def prose(text: str) -> str:
    """The text without code: a fenced block or a code span holds no link (a regex like ``[a-z]([-a-z]*)`` is none)."""
    return CODE.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """The anchor GitHub and mkdocs (Python-Markdown's toc) give a heading: lower case, punctuation dropped, spaces
    to hyphens."""
    text = heading.replace("`", "").strip().lower()
    text = re.sub(r"[^\w\s-]", "", text)
    return re.sub(r"[\s]+", "-", text)


def anchors(path: Path) -> set[str]:
    return {slug(h) for h in HEADING.findall(prose_headings(path.read_text(encoding="utf-8")))}


def prose_headings(text: str) -> str:
    return FENCE.sub("", text)  # a `# comment` in a code block is no heading


def links(path: Path) -> list[str]:
    """Every relative link of a page (web and mail links aside)."""
    return [target for target in LINK.findall(prose(path.read_text(encoding="utf-8")))
            if not re.match(r"^[a-z][a-z0-9+.-]*:", target)]


def broken(path: Path) -> list[str]:
    """The links of ``path`` whose file or heading does not exist, each with why."""
    found = []
    for target in links(path):
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        if not dest.exists():
            found.append(f"{target}: no {dest.relative_to(ROOT) if dest.is_relative_to(ROOT) else dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
            found.append(f"{target}: no heading #{anchor} in {dest.name}")
    return found


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves(page: Path) -> None:
    assert broken(page) == []


def test_a_broken_link_or_heading_is_caught(tmp_path: Path) -> None:
    (tmp_path / "there.md").write_text("# There\n\n## A heading\n", encoding="utf-8")
    page = tmp_path / "page.md"
    page.write_text("[ok](there.md#a-heading) [gone](missing.md) [no heading](there.md#elsewhere) "
                    "`[a-z]([-a-z]*)` [web](https://example.com)\n", encoding="utf-8")
    assert [b.split(":")[0] for b in broken(page)] == ["missing.md", "there.md#elsewhere"]


def test_readme_is_short() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines < README_MAX_LINES, f"README.md has {lines} lines: move detail to a docs/ page and link it"


def test_every_section_the_readme_dropped_is_a_page_it_links_to() -> None:
    linked = {(README.parent / t.partition("#")[0]).resolve() for t in links(README) if t.partition("#")[0]}
    pages = [p for p in linked if p.suffix == ".md" and p.is_relative_to(DOCS)]
    headings = {h.replace("`", "") for p in pages for h in HEADING.findall(prose_headings(p.read_text("utf-8")))}
    assert [section for section in MOVED if section not in headings] == []


def test_the_site_builds_offline_with_no_warning(tmp_path: Path) -> None:
    """``mkdocs build --strict``: a warning (a link to a missing page or heading) fails it."""
    try:
        import mkdocs  # noqa: F401
    except ImportError:
        message = "mkdocs is not installed: `make setup` (pyproject.toml's dev extras) installs it"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    built = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site"),
                            "--config-file", str(ROOT / "mkdocs.yml")], cwd=ROOT, capture_output=True, text=True,
                           timeout=120, check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    assert sorted(p.relative_to(tmp_path / "site").with_suffix(".md").as_posix()
                  for p in (tmp_path / "site").rglob("*.html") if p.name != "404.html") == sorted(
        p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))  # every page, and only those
