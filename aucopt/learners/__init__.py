"""Built-in learners; importing this package registers them by name.

One module per family (DESIGN.md), each registering its classes with
``aucopt.register``; every public module here is imported, so a new family
module needs no edit of this file.
"""
import importlib
import pkgutil

from aucopt.learners.stochastic import SAM

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_module.name}")

__all__ = ["SAM"]
