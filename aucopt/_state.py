"""Declared model state: what a learner's fitted attributes are, checked on load.

Each learner class lists its fitted state in a class attribute ``_state`` (merged
along the class hierarchy by :func:`state_spec`): a name ending in ``_`` mapped to
an :class:`Array`, :class:`Scalar`, :class:`Labels`, :class:`Generator` or
:class:`Part` (a fitted sub-estimator, such as a learner's feature map) field.
Array shapes name dimensions (``"d"`` = ``n_features_in_``, ``"tau"``, ``"M"``, ...)
that the learner resolves in ``_state_dims()`` from its parameters and scalar state.
The declaration serves persistence (only declared names are written; a file is
refused unless every array has exactly the declared dtype and shape, checked
before its data are read) and documents the model.
"""
import numbers

import numpy as np

__all__ = ["Array", "Scalar", "Labels", "FeatureNames", "Generator", "Part", "state_spec",
           "shape_matches", "StateError"]

# Integer state must fit the kernels' C longs with room to count on.
MAX_INT = 2**62


class StateError(ValueError):
    """A value does not fit its declared state field."""


class Field:
    """Base of the state fields; ``optional`` fields may be absent."""

    kind = "scalar"

    def __init__(self, optional=False):
        self.optional = optional

    def stored(self, value):
        """The array a model file holds for an array field's ``value``."""
        return np.ascontiguousarray(value)


class Array(Field):
    """A numpy array of fixed dtype and a shape given by numbers and dimension names.

    Parameters
    ----------
    dtype : str
        ``"f8"`` (float64) or ``"i8"`` (int64).
    shape : tuple of int or str
        Sizes; a string names a dimension resolved by the learner, ``"*"`` is any
        size (the learner's ``_check_state`` then checks how it relates to the rest).
    finite : bool, default=True
        Float arrays must hold finite values.
    low, high : number or None
        Inclusive bounds on every value.
    """

    kind = "array"

    def __init__(self, dtype, shape, *, finite=True, low=None, high=None, optional=False):
        super().__init__(optional)
        self.dtype = np.dtype(dtype).newbyteorder("<")
        self.shape = tuple(shape)
        self.finite = finite
        self.low = low
        self.high = high

    def resolve(self, dims):
        """The concrete shape for the dimensions ``dims`` (``None`` for ``"*"``)."""
        try:
            return tuple(None if s == "*" else int(dims[s]) if isinstance(s, str) else int(s)
                         for s in self.shape)
        except KeyError as exc:
            raise StateError(f"unknown dimension {exc.args[0]!r}") from None

    def check(self, name, value, dims):
        if not isinstance(value, np.ndarray):
            raise StateError(f"{name} is {type(value).__name__}, expected an array")
        if value.dtype.kind != self.dtype.kind or value.dtype.itemsize != self.dtype.itemsize:
            raise StateError(f"{name} has dtype {value.dtype}, expected {self.dtype}")
        expected = self.resolve(dims)
        if not shape_matches(value.shape, expected):
            raise StateError(f"{name} has shape {value.shape}, expected {expected}")
        if value.size:
            if self.finite and value.dtype.kind == "f" and not np.isfinite(value).all():
                raise StateError(f"{name} holds NaN or infinity")
            if self.low is not None and value.min() < self.low:
                raise StateError(f"{name} holds values below {self.low}")
            if self.high is not None and value.max() > self.high:
                raise StateError(f"{name} holds values above {self.high}")
        return value


class Scalar(Field):
    """A number, bool or string.

    Parameters
    ----------
    type : {float, int, bool, str}
    low, high : number or None
        Inclusive bounds for numbers.
    choices : tuple or None
        Allowed values.
    none : bool, default=False
        ``None`` is allowed.
    """

    def __init__(self, type, *, low=None, high=None, choices=None, none=False,
                 optional=False):
        super().__init__(optional)
        self.type = type
        self.low = low
        self.high = high
        self.choices = choices
        self.none = none

    def check(self, name, value, dims=None):
        if value is None and self.none:
            return None
        t = self.type
        if t is bool:
            ok = isinstance(value, (bool, np.bool_))
        elif t is int:
            ok = isinstance(value, numbers.Integral) and not isinstance(value, bool)
        elif t is float:
            ok = isinstance(value, numbers.Real) and not isinstance(value, bool)
        else:
            ok = isinstance(value, t)
        if not ok:
            raise StateError(f"{name} is {type(value).__name__} {value!r}, expected {t.__name__}")
        value = t(value)
        if t is int and not -MAX_INT <= value <= MAX_INT:
            raise StateError(f"{name} = {value!r} is beyond +-2**62")
        if t is float and not np.isfinite(value):
            raise StateError(f"{name} is not finite")
        if self.low is not None and value < self.low:
            raise StateError(f"{name} = {value!r} is below {self.low}")
        if self.high is not None and value > self.high:
            raise StateError(f"{name} = {value!r} is above {self.high}")
        if self.choices is not None and value not in self.choices:
            raise StateError(f"{name} = {value!r} is not one of {self.choices}")
        return value


class Labels(Field):
    """``classes_``: two distinct labels (numbers, bools or short strings)."""

    kind = "array"
    shape = (2,)

    def resolve(self, dims):
        return (2,)

    def check(self, name, value, dims=None):
        if not isinstance(value, np.ndarray) or value.shape != (2,):
            raise StateError(f"{name} must be an array of two labels")
        if value.dtype.kind not in "biufU" or (value.dtype.kind == "U"
                                               and value.dtype.itemsize > 4096):
            raise StateError(f"{name} has dtype {value.dtype}; labels are numbers, bools "
                             "or strings")
        if value[0] == value[1]:
            raise StateError(f"{name} holds the same label twice")
        return value


class FeatureNames(Field):
    """``feature_names_in_``: one string per feature, held as an object array (as
    scikit-learn holds it) and stored as a fixed-width string array (no pickle)."""

    kind = "array"
    # one name per input feature (n_features_in_, which a learner's "d" need not be:
    # a kernelized learner's is its map's output; the learner's _check_state relates
    # the two)
    shape = ("*",)
    # the model reader's bound on a string array's item (4 bytes a character)
    MAX_CHARS = 1024

    def resolve(self, dims):
        return (None,)

    def check(self, name, value, dims=None):
        if not isinstance(value, np.ndarray) or value.ndim != 1 or not all(
                isinstance(v, str) for v in value.tolist()):
            raise StateError(f"{name} must be a 1-D array of strings")
        return value.astype(object)

    def stored(self, value):
        longest = max((len(v) for v in value.tolist()), default=0)
        if longest > self.MAX_CHARS:
            raise ValueError(f"cannot save feature names longer than {self.MAX_CHARS} "
                             f"characters (one has {longest})")
        return value.astype(str)


class Generator(Field):
    """A numpy ``Generator`` (stored as its bit generator's state, never pickled)."""

    def check(self, name, value, dims=None):
        if not isinstance(value, np.random.Generator):
            raise StateError(f"{name} is {type(value).__name__}, expected a Generator")
        return value


class Part(Field):
    """A fitted sub-estimator of class ``cls`` (e.g. a learner's feature map) that
    declares its own ``_state``: saved as its parameters plus its state under the
    names ``<name>.<field>``, and loaded into a new ``cls`` made from the saved
    parameters (checked by its ``_check_params``), its state checked against its
    own declaration and its ``_check_state``."""

    kind = "part"

    def __init__(self, cls, optional=False):
        super().__init__(optional)
        self.cls = cls

    def check(self, name, value, dims=None):
        if type(value) is not self.cls:
            raise StateError(f"{name} is {type(value).__name__}, expected "
                             f"{self.cls.__name__}")
        return value


def shape_matches(shape, expected):
    """Whether ``shape`` fits ``expected`` (``None`` entries match any size)."""
    return len(shape) == len(expected) and all(e is None or s == e
                                               for s, e in zip(shape, expected))


def state_spec(cls):
    """The merged ``_state`` declarations of ``cls`` and its bases (derived wins)."""
    spec = {}
    for klass in reversed(cls.__mro__):
        spec.update(vars(klass).get("_state", {}))
    return spec
