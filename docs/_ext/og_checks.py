"""Sphinx extension: what the ``-W`` build refuses beyond Sphinx's own warnings.

Each check is a warning, so ``nox -s docs`` (``-W``) fails on it:

* a code block (a page's example, a docstring's, a command) with a line wider than
  :data:`WIDTH` characters: the code box cuts it off;
* a page without a title, or two pages with the same title: the navigation and the
  search results would show "<no title>" or two entries that read alike;
* a built page whose primary sidebar holds no link: an empty navigation column.
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

from docutils import nodes
from sphinx.util import logging

if TYPE_CHECKING:
    from sphinx.application import Sphinx
    from sphinx.environment import BuildEnvironment

LOGGER = logging.getLogger(__name__)

#: The widest code line a page may show (the code box holds about 84 characters; a
#: terminal 80). tests/test_docs.py holds the Markdown sources to the same width.
WIDTH = 79

#: A navigation block of a built page's sidebar (pydata-sphinx-theme's "Section
#: Navigation", or ours), up to its end.
_SIDEBAR_NAV = re.compile(r'<nav class="bd-docs-nav[^"]*"(.*?)</nav>', re.S)


def _check_code_width(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for block in doctree.findall(
        lambda node: isinstance(node, (nodes.literal_block, nodes.doctest_block))
    ):
        wide = [len(line) for line in block.astext().splitlines() if len(line) > WIDTH]
        if wide:
            LOGGER.warning(
                f"code block with {len(wide)} line(s) wider than {WIDTH} characters "
                f"(widest {max(wide)}): the code box cuts them off",
                location=block,
                type="og",
                subtype="code_width",
            )


def _check_titles(app: Sphinx, env: BuildEnvironment) -> None:
    by_title: dict[str, list[str]] = defaultdict(list)
    for docname in sorted(env.found_docs):
        title = env.titles[docname].astext().strip() if docname in env.titles else ""
        if not title or title == "<no title>":
            LOGGER.warning("the page has no title", location=docname, type="og", subtype="title")
            continue
        by_title[title].append(docname)
    for title, docnames in by_title.items():
        if len(docnames) > 1:
            LOGGER.warning(
                f"{len(docnames)} pages are titled {title!r}: {', '.join(docnames)}",
                location=docnames[1],
                type="og",
                subtype="title",
            )


def _check_sidebars(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir)
    for docname in sorted(app.env.found_docs):
        page = out / app.builder.get_target_uri(docname)
        if not page.is_file():
            continue
        navs = _SIDEBAR_NAV.findall(page.read_text(encoding="utf-8"))
        if any("<a " not in nav for nav in navs):
            LOGGER.warning(
                "the page's navigation sidebar is empty",
                location=docname,
                type="og",
                subtype="sidebar",
            )


def setup(app: Sphinx) -> dict[str, Any]:
    """Register the checks with Sphinx."""
    app.connect("doctree-resolved", _check_code_width)
    app.connect("env-check-consistency", _check_titles)
    app.connect("build-finished", _check_sidebars)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
