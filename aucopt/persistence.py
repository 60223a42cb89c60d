"""Loading saved models: the file is untrusted until every value has been checked.

:func:`load` reads a file written by ``learner.save(path)`` (format:
:mod:`aucopt._format`) and rebuilds the learner:

1. the metadata (JSON, size-capped) must name a registered learner and only its
   parameters, which must pass the learner's own parameter checks;
2. scalar state must match the learner's declared state (:mod:`aucopt._state`):
   names, types, ranges; every declared field must be present unless optional,
   and nothing undeclared may be;
3. each array's ``.npy`` header is checked against the declared dtype and the
   shape implied by the parameters and scalars (``n_features_in_``, ``tau``,
   buffer sizes, ...) before its data are read;
4. the learner's ``_check_state`` checks relations no single field shows (e.g.
   buffer slots pointing inside their pool, column indices below ``d``).

Nothing is unpickled and nothing named in the file is imported except through
the registry. Every failure is ``ValueError("malformed model file: <what>")``.
"""
from __future__ import annotations

import os
from typing import IO

from aucopt._format import MalformedModel, ModelReader, from_json
from aucopt._state import StateError
from aucopt.base import BaseLearner
from aucopt.registry import get_class

__all__ = ["load"]


def load(path: str | os.PathLike | IO[bytes]) -> BaseLearner:
    """Load a learner written by ``save``; never unpickles, checks every value.

    Parameters
    ----------
    path : str, os.PathLike or binary file object

    Returns
    -------
    learner
        A fitted learner of the registered class named in the file (plugin
        learners load once their distribution is installed).

    Raises
    ------
    ValueError
        ``"malformed model file: ..."`` for anything that does not match the
        learner's declared state, or a message saying the file is not an aucopt
        model or needs another aucopt version.
    """
    with ModelReader(path) as reader:
        meta = reader.meta
        try:
            cls = get_class(meta["learner"])
        except ValueError as exc:
            raise MalformedModel(f"learner {meta['learner']!r} is not available "
                                 f"({str(exc).splitlines()[0]})") from None
        learner = _with_params(cls, meta["params"])
        spec = cls._state_spec()
        names = set(meta["attributes"]) | set(meta["arrays"])
        unknown = sorted(names - set(spec))
        if unknown:
            raise MalformedModel(f"{unknown} are not state of {cls.__name__}")
        missing = sorted(k for k, f in spec.items() if not f.optional and k not in names)
        if missing:
            raise MalformedModel(f"state {missing} of {cls.__name__} is missing")
        try:
            for key, raw in meta["attributes"].items():
                field = spec[key]
                if field.kind == "array":
                    raise StateError(f"{key} must be stored as an array member")
                setattr(learner, key, field.check(key, from_json(raw, key)))
            dims = learner._state_dims()
            for key in meta["arrays"]:
                field = spec[key]
                if field.kind != "array":
                    raise StateError(f"{key} must be stored in the metadata")
                value = reader.array(key, getattr(field, "dtype", None), field.resolve(dims),
                                     labels=not hasattr(field, "dtype"))
                setattr(learner, key, field.check(key, value, dims))
            learner._check_state()
        except MalformedModel:
            raise
        except (StateError, ValueError, TypeError, KeyError, AttributeError,
                OverflowError) as exc:
            raise MalformedModel(str(exc)) from None
    return learner


def _with_params(cls, raw):
    valid = set(cls._get_param_names())
    unknown = sorted(set(raw) - valid)
    if unknown:
        raise MalformedModel(f"{unknown} are not parameters of {cls.__name__}")
    params = {k: from_json(v, f"parameter {k!r}") for k, v in raw.items()}
    try:
        learner = cls(**params)
        learner._check_params()
    except (ValueError, TypeError) as exc:
        raise MalformedModel(f"invalid parameters ({exc})") from None
    return learner
