"""``.. aucopt-defaults::``: the defaults of every built-in learner and the
measurements behind them, gathered from the learners' docstrings at build time.

For each learner (``aucopt.available()``, built-in ones) the directive lists the
parameters whose default is derived from the data (``"auto"``) or whose
description gives measurements (test AUCs, timings), with that description as the
docstring states it, and the paragraphs of the learner modules' docstrings that
explain a family's defaults. The docstrings stay the one source of the rules.
"""
import importlib
import inspect
import re

from docutils import nodes
from docutils.statemachine import StringList
from numpydoc.docscrape import ClassDoc
from sphinx.util.docutils import SphinxDirective

import aucopt
from aucopt.registry import BUILTIN, get_class

# a parameter description "with measurements": the word, AUCs to three decimals or
# more, speed-ups ("1.4x")
MEASURED = re.compile(r"[Mm]easure|\b0\.\d{3}|\b\d+(\.\d+)?x\b")
MODULES = ("stochastic", "square", "saddle", "buffered", "batch", "kernelized")


def _chosen(param):
    return '"auto"' in param.type or MEASURED.search(" ".join(param.desc)) is not None


def _family_paragraphs(module):
    """Paragraphs of a learner module's docstring about its defaults."""
    text = inspect.cleandoc(module.__doc__ or "")
    return [p for p in text.split("\n\n") if p.lstrip().startswith("Default")]


class Defaults(SphinxDirective):
    has_content = False

    def run(self):
        lines = []
        for name in MODULES:
            module = importlib.import_module(f"aucopt.learners.{name}")
            for paragraph in _family_paragraphs(module):
                first = inspect.cleandoc(module.__doc__).splitlines()[0].rstrip(".")
                lines += [f"**{first}.** " + paragraph.strip(), ""]
        names = [n for n, origin in aucopt.available().items() if origin == BUILTIN]
        for name in sorted(names):
            cls = get_class(name)
            doc = ClassDoc(cls, config={"show_class_members": False})
            params = [p for p in doc["Parameters"] if _chosen(p)]
            title = f"``{name}``: :class:`~aucopt.learners.{cls.__name__}`"
            lines += [title, "~" * len(title), ""]
            summary = " ".join(doc["Summary"])
            lines += [summary, ""]
            if not params:
                lines += ["Its defaults are the paper's (no data-derived or measured "
                          "default).", ""]
            for p in params:
                lines += [f"``{p.name}`` : {p.type}"]
                lines += ["    " + line for line in p.desc] + [""]
        container = nodes.section()
        container.document = self.state.document
        self.state.nested_parse(StringList(lines, source="aucopt-defaults"), self.content_offset,
                                container, match_titles=True)
        return container.children


def setup(app):
    app.add_directive("aucopt-defaults", Defaults)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
