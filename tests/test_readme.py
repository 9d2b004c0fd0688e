"""The README stays a short manual whose layout table, links and wording match the tree."""

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
MAX_README_LINES = 260
# Words that describe how the software was developed rather than the software itself.
FORBIDDEN = ("session", "this machine", "earlier run", "previous commit")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _section(text: str, title: str) -> str:
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert match, f"README has no '## {title}' section"
    return match.group(1)


def _layout_paths() -> set[str]:
    """Every `poam_ros/...` path the README's layout table names, without a trailing slash."""
    rows = [line for line in _section(README.read_text(), "Layout").splitlines()
            if line.startswith("|")]
    assert rows, "the Layout section has no table"
    return {token.rstrip("/") for row in rows for token in re.findall(r"`([^`]+)`", row)
            if token.startswith("poam_ros/")}


def _package_entries() -> set[str]:
    """The package's folders (links included) and top-level modules."""
    package = REPO / "poam_ros"
    return {entry.name for entry in package.iterdir() if entry.name != "__pycache__"
            and (entry.is_dir() or entry.suffix == ".py")}


def test_layout_table_names_every_package_folder_and_module():
    named = {path.split("/")[1] for path in _layout_paths()}
    missing = sorted(_package_entries() - named)
    assert not missing, f"README's layout table does not name poam_ros/{missing}"


def test_every_package_path_in_the_layout_table_exists():
    absent = sorted(path for path in _layout_paths() if not (REPO / path).exists())
    assert not absent, f"README's layout table names paths that do not exist: {absent}"


def test_readme_is_short():
    lines = len(README.read_text().splitlines())
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines (at most {MAX_README_LINES})"


def test_readme_links_into_docs_exist():
    links = re.findall(r"\]\((docs/[^)#\s]+\.md)", README.read_text())
    assert links, "README links to no docs/*.md"
    absent = sorted({link for link in links if not (REPO / link).is_file()})
    assert not absent, f"README links to missing files: {absent}"


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    return {_anchor(line.lstrip("#")) for line in path.read_text().splitlines()
            if re.match(r"#{1,6} ", line)}


def _markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


@pytest.mark.parametrize("source", _markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_and_anchors_resolve(source):
    broken = []
    for target in LINK.findall(source.read_text()):
        if re.match(r"[a-z]+:", target):
            continue  # a URL
        file_part, _, anchor = target.partition("#")
        path = (source.parent / file_part).resolve() if file_part else source
        if not path.exists():
            broken.append(target)
        elif anchor and path.suffix == ".md" and anchor not in _anchors(path):
            broken.append(target)
    assert not broken, f"{source.name}: broken links {broken}"


@pytest.mark.parametrize("source", _markdown_files(), ids=lambda p: str(p.relative_to(REPO)))
def test_documentation_describes_the_software_not_its_development(source):
    text = source.read_text().lower()
    found = [phrase for phrase in FORBIDDEN if phrase in text]
    assert not found, f"{source.name} says {found}"
