"""Sphinx configuration of jisu's documentation site (``python docs/site/build.py``)."""

from __future__ import annotations

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, "_ext"))
sys.path.insert(0, ROOT)  # the checkout's jisu, installed or not

import jisu  # noqa: E402

project = "jisu"
author = "the jisu authors"
copyright = "the jisu authors, Apache-2.0"
release = version = jisu.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.napoleon",
    "sphinx.ext.viewcode",
    "myst_parser",
    "jisu_api",  # _ext/jisu_api.py: every public name, documented once
]
source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
exclude_patterns = ["_build"]
root_doc = "index"

# -- autodoc and napoleon: the code's docstrings are Google style ------------------------------
autodoc_member_order = "bysource"
autodoc_class_signature = "mixed"
autodoc_typehints = "signature"
autodoc_typehints_format = "short"
autodoc_preserve_defaults = True  # show ``prefetch_size=None``, not the evaluated default
autodoc_inherit_docstrings = False  # a torch.nn.Module method's torch docstring is not ours
napoleon_google_docstring = True
napoleon_numpy_docstring = False
napoleon_use_rtype = False
napoleon_attr_annotations = True
python_maximum_signature_line_length = 88  # one parameter per line beyond this
add_module_names = False
toc_object_entries_show_parents = "hide"

# -- MyST: the markdown guides, docs/*.md included into them, the README's Quick start ---------
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence"]

# -- HTML --------------------------------------------------------------------------------------
html_theme = "furo"
html_title = f"jisu {release}"
html_short_title = "jisu"
html_copy_source = False
html_show_sourcelink = False
html_theme_options = {
    "navigation_with_keys": True,
    "top_of_page_buttons": [],
}


# -- Links in included text --------------------------------------------------------------------
# The front page (index.md) includes the README's Quick start, so that the commands CI runs are
# written once. The README's links are relative to the repository's root (they work on
# GitHub); on the site the same text sits in index.md, in docs/site/, so they are pointed at
# the pages there.
README_LINKS = {
    "](docs/site/guides/": "](guides/",
    "](docs/porting.md)": "](guides/porting.md)",
    "](docs/scale-out.md)": "](guides/scale-out.md#what-was-measured-and-what-limits-100-nodes)",
    "](docs/benchmarks.md)": "](guides/benchmarks.md)",
}


def _point_readme_links_at_guides(app, relative_path, parent_docname, content) -> None:
    if os.path.basename(str(relative_path)) == "README.md":
        for old, new in README_LINKS.items():
            content[0] = content[0].replace(old, new)


# -- Docstring mistakes worked around until the code is fixed ----------------------------------
# (object, text as it stands, text to render). Each is a reST error in a docstring that makes
# the -W build fail (or garbles the page). An entry whose text is gone (the docstring was
# fixed) does nothing and can be deleted.
DOCSTRING_FIXES: list[tuple[str, str, str]] = []


def _fix_docstrings(app, what, name, obj, options, lines) -> None:
    for fixed_name, old, new in DOCSTRING_FIXES:
        if name == fixed_name:
            lines[:] = [line.replace(old, new) for line in lines]


_ATTRIBUTE_DOCSTRINGS: dict[str, list[str]] = {}


def _keep_attribute_docstring(app, what, name, obj, options, lines) -> None:
    """Before napoleon (priority 400 < its 500): keep a property's docstring as written."""
    if what in ("attribute", "property"):
        _ATTRIBUTE_DOCSTRINGS[name] = list(lines)


def _undo_inline_attribute_type(app, what, name, obj, options, lines) -> None:
    """After napoleon: napoleon reads a property's first line as ``type: description`` (a
    Google-style convention jisu does not use; its properties carry return annotations), so
    "The train step (a callable: ...)" came out as the type "The train step (a callable".
    Where napoleon found such a type, the docstring is put back as written."""
    original = _ATTRIBUTE_DOCSTRINGS.pop(name, None)
    if original is not None and any(line.startswith(":type:") for line in lines):
        lines[:] = original


def setup(app):
    app.connect("include-read", _point_readme_links_at_guides)
    app.connect("autodoc-process-docstring", _fix_docstrings)
    app.connect("autodoc-process-docstring", _keep_attribute_docstring, priority=400)
    app.connect("autodoc-process-docstring", _undo_inline_attribute_type, priority=600)
