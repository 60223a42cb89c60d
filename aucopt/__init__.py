"""aucopt: AUC maximization learners for imbalanced binary data.

Scoring functions that rank positives above negatives, learned online,
stochastically or in batch, on dense arrays or sparse CSR matrices.

    >>> import aucopt
    >>> clf = aucopt.get("sam", random_state=0)
    >>> aucopt.available()          # every registered learner, plugins included

Submodules (``metrics``, ``datasets``, ...) and the registry functions are
imported on first use, so ``import aucopt`` stays cheap for the command line.
"""
import importlib

from aucopt._version import __version__

_LAZY = {
    "get": ("aucopt.registry", "get"),
    "available": ("aucopt.registry", "available"),
    "register": ("aucopt.registry", "register"),
    "load": ("aucopt.persistence", "load"),
    "merge": ("aucopt.merging", "merge"),
    "PluginLoadError": ("aucopt.exceptions", "PluginLoadError"),
    "NotFittedError": ("aucopt.exceptions", "NotFittedError"),
}
_SUBMODULES = ("base", "cli", "dask", "datasets", "driver", "exceptions", "features",
               "learners", "merging", "metrics", "model_selection", "persistence", "plot",
               "registry", "testing", "traits", "validation")

__all__ = sorted(list(_LAZY) + list(_SUBMODULES) + ["__version__"])


def __getattr__(name):
    if name in _LAZY:
        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
    elif name in _SUBMODULES:
        value = importlib.import_module("aucopt." + name)
    else:
        raise AttributeError(f"module 'aucopt' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__():
    return __all__
