"""Sphinx configuration of the dplong documentation.

Build with ``sphinx-build -W --keep-going -b html docs docs/_build/html`` and check the site
with ``python .ci/check_docs.py docs/_build/html`` (both steps of ``.ci/run``). The vignettes in
``vignettes/`` are executed by sphinx-gallery; a rebuild reuses a vignette's output only while
both its source and the dplong package are unchanged, so a clean checkout runs them all.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import dplong

HERE = Path(__file__).resolve().parent

project = "dplong"
author = "the dplong developers"
copyright = "the dplong developers, BSD-3-Clause"  # no year: builds are reproducible
release = dplong.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "sphinx_gallery.gen_gallery",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "**/.ipynb_checkpoints", "auto_vignettes/*.ipynb"]
templates_path: list[str] = []
language = "en"
today_fmt = "%Y"  # no build date in the pages
nitpicky = False  # numpydoc type names (e.g. "array_like") are prose, not references

# -- HTML -------------------------------------------------------------------------------------
html_theme = "alabaster"
html_title = f"dplong {release}"
html_static_path: list[str] = []
html_last_updated_fmt = None
html_show_sourcelink = False
html_theme_options = {
    "description": "User-level differential privacy for longitudinal data",
    "fixed_sidebar": True,
    "page_width": "1100px",
    "sidebar_width": "240px",
}

# -- autodoc / autosummary / numpydoc ----------------------------------------------------------
# Every API page is written by hand (docs/api/*.rst); nothing is generated into the source tree.
autosummary_generate = False
autodoc_typehints = "none"  # types are in the numpydoc "Parameters" sections
autodoc_member_order = "bysource"
autodoc_default_options: dict[str, object] = {}  # members are listed on each page
autoclass_content = "class"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()
numpydoc_attributes_as_param_list = True

# -- MyST ---------------------------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

# -- sphinx-gallery: the vignettes ------------------------------------------------------------
# Their output goes to docs/auto_vignettes (ignored by docs/.gitignore). sphinx-gallery skips a
# vignette whose source matches the checksum stored beside its last successful output; that
# checksum does not see the package, so the package's own checksum is stamped there too, and
# while it differs every vignette is run again (``run_stale_examples``).
GALLERY = HERE / "auto_vignettes"
PACKAGE_STAMP = GALLERY / "dplong.md5"


def _package_md5() -> str:
    digest = hashlib.md5(usedforsecurity=False)
    root = Path(dplong.__file__).resolve().parent
    for path in sorted(root.rglob("*")):
        if path.is_file() and path.suffix in {".py", ".gz", ".rst"}:
            digest.update(str(path.relative_to(root)).encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()


PACKAGE_MD5 = _package_md5()
_stamped = PACKAGE_STAMP.read_text() if PACKAGE_STAMP.is_file() else None

sphinx_gallery_conf = {
    "examples_dirs": str(HERE.parent / "vignettes"),
    "gallery_dirs": "auto_vignettes",
    "filename_pattern": r"plot_",
    "within_subsection_order": "FileNameSortKey",
    "abort_on_example_error": True,
    "only_warn_on_example_error": False,
    "remove_config_comments": True,
    "download_all_examples": False,
    "plot_gallery": "True",
    "image_scrapers": ("matplotlib",),
    "backreferences_dir": None,
    "show_memory": False,
    "min_reported_time": 0,
    "capture_repr": ("_repr_html_", "__repr__"),
    "matplotlib_animations": False,
    "default_thumb_file": None,
    "run_stale_examples": _stamped != PACKAGE_MD5,
}


def _hide_constructor(
    app: Any, what: str, name: str, obj: Any, options: Any, signature: str, annotation: str
) -> tuple[str, str] | None:
    """Formula models are built with ``from_formula``: do not show the internal constructor."""
    if what == "class" and hasattr(obj, "from_formula"):
        return "", annotation
    return None


def _stamp_package(app: Any, exception: BaseException | None) -> None:
    """After a successful build, the vignettes' outputs are those of this package."""
    if exception is None and GALLERY.is_dir():
        PACKAGE_STAMP.write_text(PACKAGE_MD5)


def setup(app: Any) -> None:
    app.connect("autodoc-process-signature", _hide_constructor)
    app.connect("build-finished", _stamp_package)
