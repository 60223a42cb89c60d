"""Sphinx configuration of the aucopt documentation.

Build (from the repository root, after ``pip install ".[docs]"``)::

    sphinx-build -W --keep-going -b html docs docs/_build/html
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "_ext"))

import aucopt  # noqa: E402

project = "aucopt"
author = "the aucopt developers"
copyright = "2026, the aucopt developers"
version = release = aucopt.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "aucopt_defaults",
]

root_doc = "index"
exclude_patterns = ["_build", "auto_examples/*.ipynb", "auto_examples/*.py",
                    "auto_examples/*.zip", "auto_examples/*.md5", "sg_execution_times.rst"]
templates_path = ["_templates"]
html_theme = "alabaster"
html_theme_options = {"description": "AUC maximization for imbalanced binary data",
                      "fixed_sidebar": True, "page_width": "1100px", "sidebar_width": "230px"}
html_static_path = []

autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": False,
                           "show-inheritance": True}
autodoc_typehints = "none"  # the numpydoc sections state the types
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

sphinx_gallery_conf = {
    "examples_dirs": "examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    "download_all_examples": False,
    "remove_config_comments": True,
    "within_subsection_order": "FileNameSortKey",
    "matplotlib_animations": False,
}

# the learners' docstrings quote formulas and code in ``...``: no default role
default_role = None
nitpicky = False
