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
   buffer slots pointing inside their pool, column indices below ``d``);
5. a fitted part of the model (a kernelized learner's feature map) is made from
   its saved parameters, which must pass its own checks, and its state (stored
   under ``<attribute>.``) goes through steps 2-4 against its own declaration.

Nothing is unpickled and nothing named in the file is imported except through
the registry. Every failure is ``ValueError("malformed model file: <what>")``.
"""
from __future__ import annotations

import os
from typing import IO

from aucopt._format import PARTS_FORMAT, MalformedModel, ModelReader, from_json
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
        parts = [k for k, f in cls._state_spec().items() if f.kind == "part"]
        if parts and meta["format_version"] < PARTS_FORMAT:
            raise ValueError(
                f"this {cls.__name__} was saved by aucopt {meta.get('aucopt_version')!r} in "
                f"model-file format {meta['format_version']}, which stored its "
                f"{', '.join(parts)} as copies of its attributes; this aucopt reads it from "
                f"format {PARTS_FORMAT} on: refit the model and save it again")
        learner = _with_params(cls, meta["params"])
        try:
            _read_state(reader, learner, "")
        except MalformedModel:
            raise
        except (StateError, ValueError, TypeError, KeyError, AttributeError,
                OverflowError) as exc:
            raise MalformedModel(str(exc)) from None
    return learner


def _read_state(reader, obj, prefix):
    """Set the declared state of ``obj`` from the file's entries named ``prefix +
    field`` (a part's own: ``prefix + part + "." + field``, read into a new part made
    from its saved parameters), checking every value against the declaration, then
    the relations between them (``_check_state``)."""
    meta = reader.meta
    spec = type(obj)._state_spec()
    stored, nested = {}, set()  # field -> how it is stored; parts holding entries
    for how in ("attributes", "arrays", "parts"):
        for key in meta[how]:
            if key.startswith(prefix):
                head, dot, _ = key[len(prefix):].partition(".")
                if dot:
                    nested.add(head)
                elif stored.setdefault(head, how) != how:
                    raise MalformedModel(f"{prefix + head} is stored twice")
    unknown = sorted(set(stored) - set(spec) | {h for h in nested if stored.get(h) != "parts"})
    if unknown:
        raise MalformedModel(f"{[prefix + k for k in unknown]} are not state of "
                             f"{type(obj).__name__}")
    missing = sorted(k for k, f in spec.items() if not f.optional and k not in stored)
    if missing:
        raise MalformedModel(f"state {[prefix + k for k in missing]} of "
                             f"{type(obj).__name__} is missing")
    for key, how in stored.items():
        expected = {"array": "arrays", "part": "parts"}.get(spec[key].kind, "attributes")
        if how != expected:
            raise StateError(f"{prefix + key} must be stored in the {expected!r}")
    for key in [k for k, how in stored.items() if how == "attributes"]:
        setattr(obj, key, spec[key].check(prefix + key, from_json(
            meta["attributes"][prefix + key], prefix + key)))
    for key in [k for k, how in stored.items() if how == "parts"]:
        part = _with_params(spec[key].cls, meta["parts"][prefix + key], prefix + key + ".")
        _read_state(reader, part, prefix + key + ".")
        setattr(obj, key, part)
    dims = obj._state_dims()
    for key in [k for k, how in stored.items() if how == "arrays"]:
        field = spec[key]
        value = reader.array(prefix + key, getattr(field, "dtype", None), field.resolve(dims),
                             labels=not hasattr(field, "dtype"))
        setattr(obj, key, field.check(prefix + key, value, dims))
    obj._check_state()


def _with_params(cls, raw, prefix=""):
    valid = set(cls._get_param_names())
    unknown = sorted(prefix + k for k in set(raw) - valid)
    if unknown:
        raise MalformedModel(f"{unknown} are not parameters of {cls.__name__}")
    params = {k: from_json(v, f"parameter {prefix + k!r}") for k, v in raw.items()}
    try:
        learner = cls(**params)
        learner._check_params()
    except (ValueError, TypeError) as exc:
        raise MalformedModel(f"invalid parameters ({exc})") from None
    return learner
