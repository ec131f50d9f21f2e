"""The README and docs/ link only to files and headings that exist (no network, no MkDocs needed).

`make docs` builds the site with MkDocs in strict mode, which checks the same and more; this test keeps the
links honest in every `make test` run, where MkDocs is not installed.
"""

import re
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"

FENCE = re.compile(r"^(```|~~~).*?^\1", re.M | re.S)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"(?<!!)\[[^\]\n]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)


def _pages():
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def _prose(text: str) -> str:
    return INLINE_CODE.sub("", FENCE.sub("", text))


def _slug(heading: str) -> str:
    """The anchor Python-Markdown's toc extension (MkDocs) gives a heading; GitHub's agrees for ASCII headings."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = text.replace("`", "").replace("*", "")  # code and emphasis marks are not part of the text
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _anchors(page: Path) -> set[str]:
    return {_slug(h) for h in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8")))}


def _links():
    for page in _pages():
        for target in LINK.findall(_prose(page.read_text(encoding="utf-8"))):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto: — not checked (no network)
                continue
            yield pytest.param(page, target, id=f"{page.relative_to(ROOT)}->{target}")


@pytest.mark.parametrize(("page", "target"), list(_links()))
def test_relative_link_resolves(page: Path, target: str):
    path, _, anchor = target.partition("#")
    dest = (page.parent / path).resolve() if path else page
    assert dest.exists(), f"{page.relative_to(ROOT)} links to {target!r}, which does not exist"
    if page.is_relative_to(DOCS):
        assert dest.is_relative_to(DOCS), (
            f"{page.relative_to(ROOT)} links to {target!r} outside docs/; MkDocs cannot resolve it "
            "(name the file as `code` instead)")
    if anchor:
        assert dest.suffix == ".md", f"{target!r}: an anchor into a file that is not Markdown"
        assert anchor in _anchors(dest), (
            f"{page.relative_to(ROOT)} links to {target!r}, but {dest.relative_to(ROOT)} has no heading "
            f"with that anchor")


def test_there_are_links_to_check():
    assert len(list(_links())) > 30


def test_every_docs_page_is_in_the_mkdocs_nav():
    nav = set(re.findall(r":\s*(\S+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M))
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert nav - pages == set(), "mkdocs.yml names pages that do not exist"
    assert pages - nav == set(), "pages missing from mkdocs.yml's nav"


def test_mkdocs_builds_offline():
    """Material's plugins that fetch from the network (social cards, privacy) stay off."""
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert re.search(r"^plugins:\s*\[\]\s*$", config, re.M), "mkdocs.yml must not enable plugins"
    assert re.search(r"^strict:\s*true\s*$", config, re.M)


def test_readme_stays_short():
    assert len((ROOT / "README.md").read_bytes()) <= 10 * 1024
