"""Built-in learners, one module per family.

Every public module here is imported, and every class in it that declares its
registry name (``_aucopt_name`` in its own body) is collected in :data:`BUILTINS`,
which :mod:`aucopt.registry` reads; a new family module needs no edit of this
file, and no learner module imports the registry. Each gets the attributes its
docstring shares with others (``n_retries_`` of a learner whose diverged default
fit is retried).
"""
import importlib
import pkgutil

from aucopt.learners._common import document_retries

BUILTINS = {}

for _module in pkgutil.iter_modules(__path__):
    if not _module.name.startswith("_"):
        _mod = importlib.import_module(f"{__name__}.{_module.name}")
        for _obj in vars(_mod).values():
            if isinstance(_obj, type) and "_aucopt_name" in vars(_obj) \
                    and _obj.__module__ == _mod.__name__:
                BUILTINS[_obj._aucopt_name] = _obj
                document_retries(_obj)
                globals()[_obj.__name__] = _obj

__all__ = ["BUILTINS"] + sorted(cls.__name__ for cls in BUILTINS.values())
