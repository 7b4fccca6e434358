"""Sphinx configuration of onnx-gather's documentation site (``nox -s docs``).

Pages are Markdown (MyST); the API reference is generated from the numpydoc docstrings
(autosummary); the operator figures are drawn from code at build time (``_ext/og_figures``).
The build treats every warning as an error (``-W`` in the nox session).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "_ext"))

import onnx_gather  # noqa: E402

project = "onnx-gather"
author = "the onnx-gather developers"
copyright = "2026, the onnx-gather developers"
release = onnx_gather.__version__
version = release

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "og_figures",
]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "campaign"]

# MyST: anchors for headings (links like page.md#a-heading), ::: fences, $ math.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]

# The API reference: one page per public function, its parameters from the docstring.
autosummary_generate = True
# The onnx2torch plug-in imports torch, which the docs session does not install (1 GB):
# autodoc reads its docstrings from a stand-in module.
autodoc_mock_imports = ["torch"]
autodoc_typehints = "none"  # (the numpydoc sections list the types)
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

html_theme = "pydata_sphinx_theme"
html_title = "onnx-gather"
html_static_path = ["_static"]
html_theme_options = {
    "navigation_depth": 2,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"**": ["sidebar-nav-bs"]}
