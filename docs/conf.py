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
    "sphinx.ext.viewcode",  # the [source] links: the code, highlighted, in the site itself
    "numpydoc",
    "og_figures",
    "og_checks",
]
templates_path = ["_templates"]
source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
# programs.md is the generator's output, without a title: programs-page.md includes it.
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "campaign", "programs.md"]

# MyST: anchors for headings (links like page.md#a-heading), ::: fences.
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

#: What each API page shows beside its docstring (_templates/autosummary/function.rst):
#: the label of the operator's page (or section; "what" says what it holds, if not the
#: operator's rule), the figure drawn for it, and a "See also" for the functions whose
#: docstrings have none. The operator functions' docstrings
#: carry their own See Also.
OG_API: dict[str, dict[str, object]] = {
    "onnx_gather.gather": {"page": "op-gather", "figure": "gather_axis0"},
    "onnx_gather.gather_elements": {
        "page": "op-gather-elements",
        "figure": "gather_elements_axis1",
    },
    "onnx_gather.gather_nd": {"page": "op-gather-nd", "figure": "gather_nd_elements"},
    "onnx_gather.scatter_elements": {
        "page": "op-scatter-elements",
        "figure": "scatter_elements_duplicates",
    },
    "onnx_gather.scatter_nd": {"page": "op-scatter-nd", "figure": "scatter_nd_rows"},
    "onnx_gather.scatter": {"page": "op-scatter"},
    "onnx_gather.tensor_scatter": {
        "page": "op-tensor-scatter",
        "figure": "tensor_scatter_linear",
    },
    "onnx_gather.openvino.gather": {
        "page": "op-openvino-gather",
        "figure": "openvino_gather8_out_of_range",
    },
    "onnx_gather.openvino.gather_nd": {"page": "op-openvino-gather-nd"},
    "onnx_gather.openvino.gather_elements": {"page": "op-openvino-gather-elements"},
    "onnx_gather.openvino.scatter_update": {"page": "op-openvino-scatter-update"},
    "onnx_gather.openvino.scatter_elements_update": {"page": "op-openvino-scatter-elements-update"},
    "onnx_gather.openvino.scatter_nd_update": {"page": "op-openvino-scatter-nd-update"},
    "onnx_gather.run_node": {
        "page": "for-converters",
        "what": "how converter and runtime authors use it",
        "see_also": ["onnx_gather.reference_ops", "onnx_gather.gather"],
    },
    "onnx_gather.reference_ops": {
        "page": "for-converters",
        "what": "how converter and runtime authors use it",
        "see_also": ["onnx_gather.run_node"],
    },
}
for _name in ("register", "unregister", "registered", "flatten"):
    _others = [f"onnx_gather.integrations.onnx2torch.{n}" for n in ("register", "unregister")]
    OG_API[f"onnx_gather.integrations.onnx2torch.{_name}"] = {
        "page": "converters",
        "what": "what the plug-ins fix, operator by operator",
        "see_also": [n for n in _others if not n.endswith(f".{_name}")],
    }
for _name in ("register", "unregister", "registered"):
    _others = [f"onnx_gather.integrations.jaxonnxruntime.{n}" for n in ("register", "unregister")]
    OG_API[f"onnx_gather.integrations.jaxonnxruntime.{_name}"] = {
        "page": "converters",
        "what": "what the plug-ins fix, operator by operator",
        "see_also": [n for n in _others if not n.endswith(f".{_name}")],
    }
autosummary_context = {"og_api": OG_API}

html_theme = "pydata_sphinx_theme"
html_title = "onnx-gather"
html_static_path = ["_static"]
html_css_files = ["og.css"]
html_theme_options = {
    "navigation_depth": 2,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
    # The header: the site's name and version, then Getting started, Guides, Operators,
    # Semantics and API reference; the rest under "More".
    "navbar_start": ["navbar-logo", "og-version"],
    "header_links_before_dropdown": 5,
    "navbar_persistent": ["search-button"],
}
# The whole site in the sidebar of every page (the theme's own sidebar shows only the
# current section, which is empty on a page without children).
html_sidebars = {"**": ["og-site-nav"]}
