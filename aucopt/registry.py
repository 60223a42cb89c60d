"""Learner registry: names -> classes, built-ins plus entry-point plugins.

Built-in learners register themselves with :func:`register` when
``aucopt.learners`` is imported. Third-party packages add learners through the
entry-point group ``aucopt.learners``::

    # pyproject.toml of the plugin distribution
    [project.entry-points."aucopt.learners"]
    mylearner = "mypkg.module:MyLearner"

Plugins are listed from package metadata without importing them and imported
only when asked for by name. Rules:

* a plugin that fails to import, in any way (``SystemExit`` included), raises
  :class:`~aucopt.exceptions.PluginLoadError` naming the plugin and its
  distribution; every other name keeps working;
* a loaded object that is not a class satisfying :class:`aucopt.base.Learner` is
  refused with a message listing what it lacks, and so is a learner built on
  :class:`aucopt.base.BaseLearner` whose ``traits`` is not a
  :class:`~aucopt.traits.Traits` fitting the class (:func:`check_traits`);
* built-ins win a name clash, with a warning naming both; :func:`register` at
  run time cannot take a built-in's name;
* the same entry point seen twice (an editable and an installed copy of one
  distribution) counts once;
* ``AUCOPT_DISABLE_PLUGINS`` set to ``1``/``true``/``yes``/``on`` turns discovery
  off (``0``/``false``/``no``/``off`` or unset: on).

The registry stamps the name on each class it registers (``_aucopt_name``), which
is how a learner knows the name it saves itself under; built-in learners declare
it themselves and are collected by :mod:`aucopt.learners`, which never imports the
registry (no import circle).
"""
from __future__ import annotations

import importlib
import importlib.metadata
import os
import warnings
from typing import Any, Callable, TypeVar

from aucopt._estimator import did_you_mean
from aucopt.base import BaseLearner, Learner
from aucopt.exceptions import PluginLoadError
from aucopt.traits import Traits

__all__ = ["register", "get", "get_class", "available", "name_of", "reload_plugins",
           "check_traits", "ENTRY_POINT_GROUP"]

ENTRY_POINT_GROUP = "aucopt.learners"
BUILTIN = "built-in"

_REQUIRED = tuple(name for name in vars(Learner) if not name.startswith("_"))
_TRUE = ("1", "true", "yes", "on")
_FALSE = ("", "0", "false", "no", "off")

_registered = {}     # name -> (class, origin): built-ins and runtime registrations
_plugins = None      # name -> _Plugin, filled lazily by _discover()
_builtins_loaded = False


class _Plugin:
    """An entry point, not imported until :meth:`load` is called."""

    def __init__(self, entry_point, origin):
        self.entry_point = entry_point
        self.origin = origin
        self.cls = None

    def load(self, name):
        if self.cls is None:
            try:
                obj = self.entry_point.load()
            except (Exception, SystemExit) as exc:
                raise PluginLoadError(
                    f"plugin learner {name!r} from {self.origin} failed to import "
                    f"({self.entry_point.value}): {type(exc).__name__}: {exc}; fix or "
                    f"uninstall that distribution, or set AUCOPT_DISABLE_PLUGINS=1",
                    name=name, distribution=self.origin) from exc
            problem = _protocol_problem(obj)
            if not problem:
                try:
                    check_traits(obj)
                except (TypeError, ValueError) as exc:
                    problem = str(exc)
            if problem:
                raise PluginLoadError(
                    f"plugin learner {name!r} from {self.origin} "
                    f"({self.entry_point.value}) is not an aucopt Learner: {problem}",
                    name=name, distribution=self.origin)
            obj._aucopt_name = name
            self.cls = obj
        return self.cls


def _protocol_problem(obj):
    """Why ``obj`` is not a Learner class, or '' if it is one."""
    if not isinstance(obj, type):
        return f"expected a class, got {type(obj).__name__} {obj!r}"
    missing = [m for m in _REQUIRED if not callable(getattr(obj, m, None))]
    if missing:
        return f"class {obj.__qualname__} lacks {', '.join(missing)}"
    return ""


# The class attributes a Traits field replaced: a class that still sets one would be
# silently ignored, so registration refuses it and names the field.
RETIRED_KNOBS = {"_family": "family", "_limits": "limits", "_merge": "merge",
                 "_stream": "stream", "_shuffles": "shuffles", "_max_features": "max_features",
                 "_unit_rows": "unit_rows", "_repeats_input": "row_map",
                 "_weighs_rows": "weighs_rows", "_divergence_hint": "divergence_hint"}


def check_traits(cls):
    """Refuse a learner class whose ``traits`` do not fit it.

    A class built on :class:`~aucopt.base.BaseLearner` (or declaring ``traits``)
    needs a :class:`~aucopt.traits.Traits` (else TypeError); a declared stream
    needs ``partial_fit``, shuffling the ``shuffle`` and ``random_state``
    parameters, stream segments ``_segment_streams``, a merge kind the merge of
    :class:`~aucopt.base.BaseLearner` (else ValueError). A bare
    :class:`~aucopt.base.Learner` without ``traits`` declares nothing.
    """
    traits = getattr(cls, "traits", None)
    name = cls.__qualname__
    skeleton = issubclass(cls, BaseLearner)
    for knob, field in RETIRED_KNOBS.items():
        if any(knob in vars(k) for k in cls.__mro__):
            raise TypeError(f"{name} sets {knob}, which aucopt no longer reads: declare "
                            f"traits = aucopt.extend.Traits({field}=...) instead")
    if traits is None and not skeleton:
        return
    if not isinstance(traits, Traits):
        raise TypeError(f"{name}.traits must be an aucopt.traits.Traits, got "
                        f"{type(traits).__name__}")
    problem = None
    params = cls._get_param_names() if skeleton else ()
    missing = [p for p in ("shuffle", "random_state") if p not in params]
    if traits.stream is not None and not callable(getattr(cls, "partial_fit", None)):
        problem = f"declares traits.stream={traits.stream!r} but has no partial_fit"
    elif traits.shuffles and missing:
        problem = f"declares traits.shuffles but has no {' or '.join(missing)} parameter"
    elif traits.stream_segments and not callable(getattr(cls, "_segment_streams", None)):
        problem = "declares traits.stream_segments but has no _segment_streams(sizes)"
    elif traits.merge is not None and not skeleton:
        problem = (f"declares traits.merge={traits.merge!r} but is not built on "
                   "aucopt.base.BaseLearner, whose merge it needs")
    if problem:
        raise ValueError(f"{name} {problem}")


T = TypeVar("T", bound=type)


def register(name: str) -> Callable[[T], T]:
    """Class decorator: make a learner available as ``aucopt.get(name)``.

    Parameters
    ----------
    name : str
        Registry name (lower case by convention, e.g. ``"psam"``).

    Raises
    ------
    TypeError
        If the decorated object is not a class satisfying the Learner protocol.
    ValueError
        If ``name`` is already taken by another class (built-in names always are),
        or the class's ``traits`` do not fit it (a ``traits`` that is not a
        :class:`~aucopt.traits.Traits` is a TypeError).
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"learner name must be a non-empty string, got {name!r}")

    def decorator(cls):
        problem = _protocol_problem(cls)
        if problem:
            raise TypeError(f"cannot register {name!r}: {problem}")
        try:
            check_traits(cls)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"cannot register {name!r}: {exc}") from None
        _ensure_builtins()
        if name in _registered and _registered[name][0] is not cls:
            raise ValueError(f"learner name {name!r} is already registered to the "
                             f"{_registered[name][1]} {_registered[name][0].__qualname__}; "
                             "choose another name")
        cls._aucopt_name = name
        _registered[name] = (cls, f"runtime ({getattr(cls, '__module__', '?')})")
        return cls

    return decorator


def _ensure_builtins():
    global _builtins_loaded
    if not _builtins_loaded:
        from aucopt.learners import BUILTINS

        for name, cls in BUILTINS.items():
            check_traits(cls)  # a built-in that fails is a bug of aucopt itself
            _registered.setdefault(name, (cls, BUILTIN))
        _builtins_loaded = True


def _plugins_disabled():
    raw = os.environ.get("AUCOPT_DISABLE_PLUGINS", "").strip().lower()
    if raw in _TRUE:
        return True
    if raw not in _FALSE:
        warnings.warn(f"AUCOPT_DISABLE_PLUGINS={raw!r} is not understood (use 1/0, "
                      "true/false, yes/no, on/off); plugins stay enabled",
                      RuntimeWarning, stacklevel=4)
    return False


def _dist_label(ep):
    dist = getattr(ep, "dist", None)
    if dist is None:
        return "unknown distribution"
    return f"{dist.metadata['Name']} {dist.version}"


def _discover():
    global _plugins
    _ensure_builtins()
    if _plugins is not None:
        return _plugins
    _plugins = {}
    if _plugins_disabled():
        return _plugins
    seen = {}
    eps = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    for ep in sorted(eps, key=lambda e: (e.name, _dist_label(e))):
        if (ep.name, ep.value) in seen:
            continue  # the same entry point seen twice (editable + installed copy)
        seen[(ep.name, ep.value)] = True
        origin = _dist_label(ep)
        if ep.name in _registered:
            warnings.warn(f"plugin learner {ep.name!r} ({ep.value}, from {origin}) is "
                          f"shadowed by the {_registered[ep.name][1]} learner "
                          f"{_registered[ep.name][0].__qualname__}; the latter is used",
                          RuntimeWarning, stacklevel=3)
            continue
        if ep.name in _plugins:
            other = _plugins[ep.name]
            warnings.warn(f"plugin learner {ep.name!r} is declared by {other.origin} "
                          f"({other.entry_point.value}) and by {origin} ({ep.value}); "
                          f"using the one from {other.origin}", RuntimeWarning,
                          stacklevel=3)
            continue
        _plugins[ep.name] = _Plugin(ep, origin)
    return _plugins


def reload_plugins():
    """Forget discovered plugins and scan the entry points again (e.g. after an install)."""
    global _plugins
    _plugins = None
    importlib.invalidate_caches()
    return available()


def available() -> dict[str, str]:
    """Every learner name with its origin: ``"built-in"`` or ``"<distribution> <version>"``.

    Plugins are listed from their metadata; none is imported.

    Returns
    -------
    dict
        ``{name: origin}`` sorted by name.
    """
    plugins = _discover()
    names = {name: origin for name, (_, origin) in _registered.items()}
    names.update({name: plugin.origin for name, plugin in plugins.items()})
    return dict(sorted(names.items()))


def get_class(name: str) -> type:
    """The learner class registered as ``name`` (importing its plugin if needed)."""
    plugins = _discover()
    if isinstance(name, str) and name in _registered:
        return _registered[name][0]
    if isinstance(name, str) and name in plugins:
        return plugins[name].load(name)
    known = sorted(set(_registered) | set(plugins))
    raise ValueError(f"unknown learner {name!r}.{did_you_mean([str(name)], known)} Known "
                     f"learners: {', '.join(known)}")


def get(name: str, **params: Any) -> Learner:
    """Create the learner registered as ``name`` with the given parameters.

    Examples
    --------
    >>> clf = aucopt.get("sam", lam=1e-4, random_state=0)
    """
    cls = get_class(name)
    if hasattr(cls, "_get_param_names"):
        valid = cls._get_param_names()
        unknown = sorted(set(params) - set(valid))
        if unknown:
            raise ValueError(f"unknown parameter(s) {unknown} for learner {name!r}."
                             f"{did_you_mean(unknown, valid)} Valid parameters are {valid}")
    return cls(**params)


def name_of(cls):
    """The registry name of a learner class (``None`` if it is not registered)."""
    return vars(cls).get("_aucopt_name")
