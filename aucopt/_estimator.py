"""Parameters by scikit-learn's conventions, shared by learners and feature maps.

An :class:`Estimator` subclass lists its parameters in ``__init__`` (which only
stores them); ``get_params`` / ``set_params`` / ``repr`` read that signature, so
``sklearn.base.clone``, ``Pipeline`` and ``GridSearchCV`` work without aucopt
importing scikit-learn.
"""
import difflib
import inspect
import weakref

from aucopt._state import state_spec

__all__ = ["Estimator"]

# The sorted ``__init__`` parameter names per class, read once (a class's signature
# is fixed when it is made; reading it costs about 0.2 ms, twice per ``fit``). Weak
# keys: classes made at run time (``kernelized.compose``, plugins) can still go.
_PARAM_NAMES = weakref.WeakKeyDictionary()


def _param_names(cls):
    names = _PARAM_NAMES.get(cls)
    if names is None:
        names = []
        for p in list(inspect.signature(cls.__init__).parameters.values())[1:]:
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise TypeError(f"{cls.__name__}.__init__ must list its parameters "
                                "explicitly (no *args/**kwargs)")
            names.append(p.name)
        names = _PARAM_NAMES[cls] = tuple(sorted(names))
    return names


class Estimator:
    """Parameter handling from the ``__init__`` signature (no ``*args``/``**kwargs``)."""

    @classmethod
    def _get_param_names(cls):
        return list(_param_names(cls))

    def get_params(self, deep=True):
        """Parameters of this object (the ``__init__`` arguments) as a dict."""
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params):
        """Set parameters by name; unknown names raise ``ValueError``. Returns self."""
        valid = self._get_param_names()
        for key, value in params.items():
            if key not in valid:
                raise ValueError(f"Invalid parameter {key!r} for {type(self).__name__}."
                                 f"{did_you_mean([key], valid)} Valid parameters are {valid}")
            setattr(self, key, value)
        return self

    @classmethod
    def _state_spec(cls):
        """The declared fitted state (:mod:`aucopt._state`), merged along the MRO."""
        return state_spec(cls)

    def _fitted_names(self):
        """Names of the fitted attributes (ending in ``_``)."""
        return [k for k in vars(self) if k.endswith("_") and not k.startswith("__")]

    def _clear_fitted(self):
        """Forget every fitted attribute (before a refit)."""
        for name in self._fitted_names():
            delattr(self, name)

    def __repr__(self):
        defaults = {p.name: p.default for p in
                    inspect.signature(type(self).__init__).parameters.values()}
        shown = []
        for name in self._get_param_names():
            value = getattr(self, name)
            default = defaults.get(name, inspect.Parameter.empty)
            if default is inspect.Parameter.empty or not _same(value, default):
                shown.append(f"{name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"


def _same(a, b):
    try:
        return bool(a == b) and type(a) is type(b)
    except (TypeError, ValueError):
        return a is b


def _edits(a, b):
    """Edits from ``a`` to ``b``: insertions, deletions, substitutions and swaps of
    two neighbours (the optimal string alignment distance)."""
    d = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            d[i][j] = min(d[i - 1][j] + 1, d[i][j - 1] + 1,
                          d[i - 1][j - 1] + (a[i - 1] != b[j - 1]))
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                d[i][j] = min(d[i][j], d[i - 2][j - 2] + 1)
    return d[len(a)][len(b)]


def closest(word, known):
    """The known name closest to a mistyped ``word``, or None when none is close:
    :mod:`difflib`'s close matches, ignoring case, the one of fewest edits first (so
    that a swap of two letters, ``pasm`` for ``psam``, wins)."""
    known = [str(k) for k in known]
    lower = {k.lower(): k for k in known}
    word = str(word).lower()
    close = difflib.get_close_matches(word, list(lower), n=5)
    if not close:
        return None
    return lower[min(close, key=lambda k: (_edits(word, k), close.index(k)))]


def did_you_mean(words, known):
    """`` Did you mean 'x'?`` for a list of one mistyped name, `` Did you mean 'x' for
    'y', ...?`` for several, ``""`` when none is close to a known name
    (:func:`closest`)."""
    pairs = [(closest(word, known), word) for word in words]
    if len(pairs) == 1 and pairs[0][0] is not None:
        return f" Did you mean {pairs[0][0]!r}?"
    pairs = [f"{best!r} for {word!r}" for best, word in pairs if best is not None]
    return f" Did you mean {', '.join(pairs)}?" if pairs else ""
