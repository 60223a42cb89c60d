"""Kernelized learners: an explicit feature map followed by a linear AUC learner.

Nonlinear AUC maximization that scales (Khalid, "Scalable Large Margin Pairwise
Learning Algorithms", PhD dissertation, Colorado State University, 2019, Ch. 3, 5,
6, 7; Ding, Liu, Zhao & Hoi, "Large Scale Kernel Methods for Online AUC
Maximization", ICDM 2017): the rows are mapped once by random Fourier features
(Rahimi & Recht, "Random Features for Large-Scale Kernel Machines", NIPS 2007) or a
k-means Nystrom embedding (Zhang, Tsang & Kwok, "Improved Nystrom Low-Rank
Approximation and Error Analysis", ICML 2008), and a linear learner of this package
ranks the mapped rows. Each composition here is made by :func:`compose` from a map
of :mod:`aucopt.features` and a learner class, no more: its parameters are those of
both (a name both take, such as ``random_state`` or ``n_jobs``, goes to both);
``fit`` validates the rows once, fits the map, then the learner on the mapped rows;
online compositions fix the map on the first ``partial_fit`` chunk, as the papers
fix it before the stream. The fitted map is ``feature_map_``, saved with the model
as a part of it.
"""
import dataclasses
import inspect
import warnings
from dataclasses import replace

import numpy as np

from aucopt._docs import docstring, entries, fill
from aucopt._state import Part
from aucopt.exceptions import InputLimitWarning
from aucopt.features import (AUTO_COMPONENTS, KMeansNystroem, Nystroem, RandomFourierFeatures,
                              _dense_copy)
from aucopt.learners.batch import BAM
from aucopt.learners.buffered import CBR, _BufferOGD
from aucopt.learners._common import document_weights, repeated_passes
from aucopt.learners.stochastic import ASAM, PSAM
from aucopt.validation import check_state_bytes, finite_rows, order_stream, row_source

__all__ = ["compose", "Composition", "NBAM", "FBAM", "NASAM", "FASAM", "NPSAM", "FCBR",
           "FOAM", "NOAM"]


@dataclasses.dataclass(frozen=True)
class Composition:
    """What :func:`compose` built a class from: ``learner`` on the rows mapped by
    ``feature_map``; ``renamed`` maps a parameter of the map to the composition's
    name for it; ``shared`` lists the parameters both parts take."""

    learner: type
    feature_map: type
    renamed: dict
    shared: tuple


def _parameters(cls):
    return list(inspect.signature(cls.__init__).parameters.values())[1:]


def compose(learner, feature_map, *, renamed=None, defaults=None):
    """A learner class: ``learner`` trained on the rows mapped by ``feature_map``.

    Subclass the result (the registered class adds its docstring, name and
    declarations). Its ``__init__`` takes every parameter of both classes, by
    keyword: the map's (``renamed``: the map's name -> the composition's) and the
    learner's; a name both take (``random_state``, ``n_jobs``) is one parameter
    given to both. ``defaults`` replaces defaults of either (a name both take
    needs one where theirs differ). ``fit`` fits the map on the validated rows,
    then the learner on the mapped rows; the fitted map is ``feature_map_``, a part
    of the saved model.
    """
    renamed, defaults = dict(renamed or {}), dict(defaults or {})
    params = {}
    for p in _parameters(feature_map):
        name = renamed.get(p.name, p.name)
        params[name] = p.replace(name=name, kind=inspect.Parameter.KEYWORD_ONLY)
    shared = []
    for p in _parameters(learner):
        if p.name in params:
            if p.name in renamed.values():
                raise TypeError(f"{learner.__name__}'s parameter {p.name!r} is also the "
                                "new name of a parameter of the map")
            if params[p.name].default != p.default and p.name not in defaults:
                raise TypeError(f"{p.name!r} defaults to {p.default!r} in "
                                f"{learner.__name__} and {params[p.name].default!r} in "
                                f"{feature_map.__name__}: give its default")
            shared.append(p.name)
        params[p.name] = p.replace(kind=inspect.Parameter.KEYWORD_ONLY)
    unknown = sorted(set(defaults) - set(params))
    if unknown:
        raise TypeError(f"defaults for {unknown}, which are not parameters of either")
    params.update({k: params[k].replace(default=v) for k, v in defaults.items()})
    signature = inspect.Signature([inspect.Parameter(
        "self", inspect.Parameter.POSITIONAL_ONLY), *params.values()])

    def __init__(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        for key, value in list(bound.arguments.items())[1:]:
            setattr(self, key, value)

    name = f"{learner.__name__.lstrip('_')}On{feature_map.__name__}"
    __init__.__signature__ = signature
    __init__.__qualname__ = f"{name}.__init__"
    return type(name, (_Mapped, learner), {
        "__init__": __init__, "__module__": __name__,
        "_composition": Composition(learner, feature_map, renamed, tuple(shared)),
        "_state": {"feature_map_": Part(feature_map)}})


class _Mapped:
    """Base of the classes :func:`compose` builds: the learner (next in the MRO)
    learns on ``feature_map_`` of the rows."""

    _composition = None
    # what fit warns (InputLimitWarning) on rows wider than traits.max_features
    _wide_warning = None
    # a Parameters section of map parameters the composition documents its own way
    _map_doc = ""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if vars(cls).get("__doc__"):
            cls.__doc__ = _composed_doc(cls)

    def _state_dims(self):
        return {**super()._state_dims(), "d": self.feature_map_.n_features_out_}

    def _check_state(self):
        super()._check_state()
        if self.feature_map_.n_features_in_ != self.n_features_in_:
            raise ValueError(f"feature_map_ maps {self.feature_map_.n_features_in_} "
                             f"features, the model has {self.n_features_in_}")

    def _model_features(self):
        return self.feature_map_.n_features_out_

    def _new_map(self):
        """An unfitted map of the composition's parameters (``max_state_bytes``, the
        learner's cap, caps the map's arrays too)."""
        comp = self._composition
        params = {name: getattr(self, comp.renamed.get(name, name))
                  for name in comp.feature_map._get_param_names()}
        cap = self.__dict__.get("max_state_bytes")
        if cap is not None:
            params["max_bytes"] = min(params["max_bytes"], cap)
        return comp.feature_map(**params)

    def _check_params(self):
        super()._check_params()
        self._new_map()._check_params()

    def _merge_check(self, models, base):
        super()._merge_check(models, base)
        mine = self.feature_map_
        for model in models[1:] + ([base] if base is not None else []):
            theirs = model.feature_map_
            if any(not np.array_equal(mine.__dict__[k], theirs.__dict__.get(k))
                   for k in mine._state_spec() if k in mine.__dict__):
                raise ValueError(f"cannot merge {type(self).__name__} models with different "
                                 "feature maps (each fitted its map on its own data): give "
                                 "the map's parameters (e.g. sigma) and one random_state")

    def _fit_map(self, rows, y, stream):
        """The map fitted on the first data, ``rows`` (a RowSource of the validated
        rows, with finite norms; a learner may collect the map otherwise)."""
        fmap = self._new_map()
        if stream and fmap._auto_components():  # "auto": the stream's n is unknown
            fmap.n_components = AUTO_COMPONENTS[1]
        return fmap._fit_validated(rows.matrix)

    def _input_rows(self, X, fit_map, norms=True, y=None, stream=False):
        if fit_map:
            limit = self.traits.max_features
            if limit is not None and X.shape[1] > limit:
                warnings.warn(self._wide_warning.format(name=type(self).__name__,
                                                        d=X.shape[1], limit=limit),
                              InputLimitWarning, stacklevel=3)
            # the row norms are checked before any distance or bandwidth
            self.feature_map_ = self._fit_map(finite_rows(X), y, stream)
        # mapped rows are cosines or kernel values times the map's finite projection
        return row_source(self.feature_map_._transform_validated(X), norms)


_PARAMETERS = """
    Parameters
    ----------"""

_MERGE = """Merging: as {inner}, for models with the same fitted map (refused otherwise:
    a map fitted on each part's own data differs)."""

_ATTRIBUTES = """    feature_map_ : {map}
        The fitted map, saved with the model.
    coef_ : ndarray of shape (n_mapped_features,)
        The linear model on the mapped rows."""

_UNDOCUMENTED = """    {name}
        A parameter of :class:`{owner}`."""

_MAP_CAP = """The feature map's arrays count too: the map refuses more than this
    or its ``max_bytes``, the smaller."""


def _entry(text, names, value):
    """The parameter entry ``text`` under the names ``names``, with the default
    ``value`` if its header states one (a single name)."""
    head, _, rest = text.partition("\n")
    head = "    " + ", ".join(names) + head[head.index(" : "):] if " : " in head \
        else "    " + ", ".join(names)
    if len(names) == 1 and "default=" in head:
        head = head[:head.index("default=")] + "default=" + (
            f'"{value}"' if isinstance(value, str) else repr(value))
    return head + ("\n" + rest if rest else "")


def _composed_doc(cls):
    """The docstring of composition ``cls``: its own text and parameters, then every
    other parameter of its map and its learner from their docstrings (with the
    composition's defaults; a parameter both take says so), the attributes of both."""
    comp = cls._composition
    inner, fmap = comp.learner, comp.feature_map
    signature = dict(list(inspect.signature(cls.__init__).parameters.items())[1:])
    notes = {name: "Also the feature map's: " + text.split("\n", 1)[1]
             for names, text in entries(fmap.__doc__) for name in names
             if name in comp.shared and "\n" in text}
    notes["max_state_bytes"] = _MAP_CAP
    done, params = set(), []
    sources = [(entries(cls.__doc__), {}, False), (entries(cls._map_doc), comp.renamed, False),
               (entries(inner.__doc__), {}, True),
               (entries(fmap.__doc__), comp.renamed, False)]
    for found, rename, noted in sources:
        for names, text in found:
            names = tuple(rename.get(n, n) for n in names)
            if set(names) <= done or not set(names) <= set(signature):
                continue
            text = _entry(text, names, signature[names[0]].default)
            if noted and names[0] in notes:
                text += "\n" + fill(notes[names[0]], 8)
            params.append(text)
            done.update(names)
    params += [docstring(_UNDOCUMENTED, fields={"name": name, "owner": (
        inner if name in inner._get_param_names() else fmap).__name__})
        for name in signature if name not in done]
    name = "the buffered learners" if inner.__name__.startswith("_") \
        else f":class:`{inner.__name__}`"
    attributes = [docstring(_ATTRIBUTES, fields={"map": f"{fmap.__module__}.{fmap.__name__}"})]
    attributes += [text for names, text in entries(cls.__doc__, "Attributes")
                   + entries(inner.__doc__, "Attributes") if "coef_" not in names
                   and "feature_map_" not in names]
    own = cls.__doc__.split("\n    Parameters\n")[0].split("\n    Attributes\n")[0]
    merge = [docstring(_MERGE, fields={"inner": name})] if inner.traits.merge else ()
    return docstring(own, paragraphs=merge, parameters=params, attributes=attributes)


_AUTO_COMPONENTS = """
        "auto": ``ceil(4 sqrt(n))`` for the ``n`` rows of ``fit``, at least 256 and
        at most 1600, on rows of at most 1000 features; 1600 on wider rows (text:
        on webkb's 7,288 TF-IDF features FBAM's test AUC was 0.880 with ceil(4
        sqrt(n)) = 256 and 0.967 with 1600) and for a stream (``partial_fit``),
        whose length its first chunk does not tell. "auto" departs from the
        dissertation's 1600 for time: 1600 components cost more than an exact RBF
        SVC on 15,000 rows, while O(sqrt(n)) components keep the accuracy of the
        exact kernel method (Rudi, Camoriano & Rosasco, "Less is More: Nystrom
        Computational Regularization", NIPS 2015; Rudi & Rosasco, "Generalization
        Properties of Learning with Random Features", NIPS 2017). Measured with
        FASAM and NPSAM on magic04,
        letter_z and ijcnn1 (standardised, 12,000-16,000 training rows): 4 sqrt(n)
        components (439-506) ranked within 0.003 test AUC of 1600 in a quarter of
        the fit time (magic04, FASAM: 0.9238 in 0.31 s against 0.9264 in 1.21 s);
        2 sqrt(n) lost up to 0.008."""

# Random Fourier features of a Gaussian kernel on wide sparse rows (text) rank poorly
# at any affordable number of components (measured: see _FOURIER_WIDE)
_FOURIER_LIMIT = 10_000
_FOURIER_LIMITS = ("dense or sparse in, d up to ~10k (wider rows: use a Nystrom or linear "
                   "learner)")
_FOURIER_WIDE = (
    "{name} maps rows of {d} features by random Fourier features, which approximate a "
    "Gaussian kernel on such wide sparse rows too coarsely to rank well (declared limit "
    "~{limit} features): on news20 (130,108 TF-IDF features) FBAM reached test AUC 0.77 "
    "with 1600 components and sector (55,197) 0.83, against 0.94 / 0.90 for NBAM. Use "
    "nbam / npsam (k-means Nystrom landmarks adapt to the data) or a linear learner "
    "such as psam for data this wide.")


class _Fourier:
    """Mixin of the random-Fourier-feature learners: the warning beyond their
    declared input limit (``traits.max_features``, :data:`_FOURIER_LIMIT`)."""

    _wide_warning = _FOURIER_WIDE


# The width of FBAM, FASAM, NPSAM and FOAM: 8 times the "auto" rule
# (measured on the tabular tasks, see _WIDE_KERNEL)
WIDTH_FACTOR = 8.0

_WIDE_KERNEL = (
    'Multiplies the width that "auto" derives (``s``, or ``2 sigma^2``): the kernel is '
    "``exp(-||x - y||^2 / (8 s))`` by default, where two typical rows have similarity "
    "about ``exp(-1/4)`` instead of the ``exp(-2)`` of the \"auto\" rule "
    "(``width_factor=1``; the papers tune the width). A departure for small data: "
    "a narrow kernel fitted to a few tens of positives ranks far below a linear model, "
    "and a few hundred random features approximate it coarsely on rows of many features. "
    "On the 56 imbalanced tabular tasks of ``tools/tabular.py`` (100-5,000 "
    "rows, 1-10% positives, half with heavy-tailed rows; stratified 5-fold CV, rows "
    "standardised), {measured} (mean test AUC minus that of scikit-learn's "
    "``LogisticRegression()``, and the tasks more than 0.05 below it). NBAM and NASAM, "
    "whose k-means landmarks are all the rows of such small sets (an exact kernel), keep "
    "the factor 1: NBAM +0.0301 (1 task) with it and +0.0208 (1) with 8, NASAM +0.0224 "
    "(3) and +0.0199 (4). No effect on a numeric width.")


def _wide(measured):
    """The ``width_factor`` entry of a composition defaulting to :data:`WIDTH_FACTOR`,
    with its measurements."""
    return (f"\n    width_factor : float, default={WIDTH_FACTOR}\n"
            + fill(_WIDE_KERNEL.format(measured=measured), 8))


_NYSTROEM_PARAMS = _PARAMETERS + """
    n_components : int or "auto", default="auto"
        Landmarks of the k-means Nystrom embedding (the dissertation's 1600; 3000,
        2800 and 400 on its largest sets), the embedding's dimension at most.""" + \
    _AUTO_COMPONENTS + """
    bandwidth : float or "auto", default="auto"
        ``s`` of the kernel ``exp(-||x - y||^2 / s)``; "auto" is the mean squared
        distance of the first 80,000 rows to their mean (the dissertation's rule).
    kmeans_iter : int, default=10
        Most Lloyd iterations of the k-means landmarks."""

_RFF_PARAMS = _PARAMETERS + """
    n_components : int or "auto", default="auto"
        Random Fourier features (cos-with-phase, ``sqrt(2/D) cos(theta.x + b)``,
        the dissertation's eq. 3.2; it uses 1600).""" + _AUTO_COMPONENTS + """
    sigma : float or "auto", default="auto"
        Width of the Gaussian kernel ``exp(-||x - y||^2 / (2 sigma^2))``; "auto"
        matches the Nystrom rule (``2 sigma^2`` = the mean squared distance to the
        mean). The dissertation tunes it over {1, 10, 100} (FBAM) or {10, 20, 50,
        100} (FASAM) on standardised data.
    variant : {"cos_phase", "sincos"}, default="cos_phase"
        The map's form: the dissertation's learners use ``cos_phase``."""

_SINCOS_PARAMS = _PARAMETERS + """
    n_components : int, default=0
        Frequencies ``m`` of the sin/cos random Fourier features (``2m`` features,
        scaled by ``sqrt(1/m)`` so that their inner products estimate the kernel).
    sigma : float or "auto", default="auto"
        Width of the Gaussian kernel ``exp(-||x - y||^2 / (2 sigma^2))``; "auto"
        makes ``2 sigma^2`` the mean squared distance of the first rows to their
        mean. {sigma_note}
    variant : {{"cos_phase", "sincos"}}, default="sincos"
        The map's form: sine and cosine pairs, as the paper's."""

_KMEANS = {"max_iter": "kmeans_iter"}


def _mapped(inner, **fields):
    """The traits of ``inner`` on a feature map fitted on the first data (``fields``
    declare the composition's family, limits, ...).

    Gaussian-kernel maps give rows of squared norm about k(x, x) = 1 (the search
    space is in those units: ``unit_rows``); the inner learner's input limit
    concerns the mapped rows, not the input; the map is fitted on the first data
    (all of it for fit, the first chunk for a stream), so a chunked stream equals
    fit only for a map fixed beforehand (no ``stream``); ``sample_weight`` repeats
    the input rows (a copy), so that the map is fitted on the copies too.
    """
    return replace(inner.traits, **{"row_map": True, "unit_rows": True, "stream": None,
                                    "max_features": None, **fields})


class NBAM(compose(BAM, KMeansNystroem, renamed=_KMEANS,
                   defaults={"n_components": "auto", "C": 1.0})):
    """NBAM: BAM (linear PRSVM+) on k-means Nystrom features.

    Khalid (2019), Ch. 3, Alg. 2: the batch AUC learner on the embedding of
    k-means landmarks (1600 in the dissertation; see ``n_components``), bandwidth
    from the first 80,000 rows.
    """

    _aucopt_name = "nbam"
    traits = _mapped(BAM, family="kernelized batch (Nystrom + Newton)",
                     limits="dense or sparse in, n_components dense features; memory O(n D)")
    _map_doc = _NYSTROEM_PARAMS


class FBAM(_Fourier, compose(BAM, RandomFourierFeatures,
                             defaults={"n_components": "auto", "C": 0.25,
                                       "width_factor": WIDTH_FACTOR})):
    """FBAM: BAM (linear PRSVM+) on random Fourier features.

    Khalid (2019), Ch. 3, Alg. 3: the batch AUC learner on cos-with-phase random
    Fourier features of the Gaussian kernel (1600 in the dissertation; see
    ``n_components``).

    ``C`` defaults to 0.25 (BAM's rule ``1 / s`` would give 1 on the map's rows,
    whose squared norm is about 1; the dissertation tunes C): on the 16 dense sets
    of our benchmarks, standardised, C = 1 ranked up to 0.032 test AUC below the
    best of ``search_space`` (german 0.775 against 0.807: Fourier features of few
    rows need the stronger penalty), C = 0.25 at most 0.011 below it.
    """

    _aucopt_name = "fbam"
    traits = _mapped(BAM, family="kernelized batch (Fourier + Newton)",
                     limits=_FOURIER_LIMITS + ", n_components dense features; memory O(n D)",
                     max_features=_FOURIER_LIMIT)
    _map_doc = _RFF_PARAMS + _wide(
        "FBAM with the factor 1: +0.0111, 9 tasks (dna_ei, 180 features: -0.265); with "
        "2 / 4 / 8 / 16: +0.0163 / +0.0151 / +0.0108 / +0.0044 with 6 / 3 / 2 / 2 tasks")


_SGD_FAMILY = "kernelized pairwise SGD"
_SGD_LIMITS = "dense or sparse in, n_components dense features; memory O(n D)"


class NASAM(compose(ASAM, KMeansNystroem, renamed=_KMEANS, defaults={"n_components": "auto"})):
    """NASAM: ASAM on k-means Nystrom features (Khalid 2019, Sec. 6.4, 6.6)."""

    _aucopt_name = "nasam"
    traits = _mapped(ASAM, family=_SGD_FAMILY, limits=_SGD_LIMITS)
    _map_doc = NBAM._map_doc


class FASAM(_Fourier, compose(ASAM, RandomFourierFeatures,
                              defaults={"n_components": "auto", "width_factor": WIDTH_FACTOR})):
    """FASAM: ASAM on random Fourier features (Khalid 2019, Sec. 6.4, 6.7).

    ``lam="auto"`` is ``s / n`` here (``s`` the mean squared norm of the mapped
    rows, about 1; ``n`` the training rows), not ASAM's ``s min(1e-4, 1/n)``: on
    the 16 dense sets of our benchmarks, standardised, ASAM's rule ranked up to
    0.042 test AUC below the best of ``search_space`` on the smallest sets (german
    0.765 against 0.807, pima 0.795 against 0.832), ``s / n`` at most 0.016 below
    it (magic04 0.924, the same as before).
    """

    _aucopt_name = "fasam"
    _auto_params = {"lam": lambda self, s, rows: s / max(rows.n_rows, 1)}
    traits = _mapped(ASAM, family=_SGD_FAMILY,
                     limits=_FOURIER_LIMITS + ", n_components dense features; memory O(n D)",
                     max_features=_FOURIER_LIMIT)
    _map_doc = _RFF_PARAMS + _wide(
        "FASAM with the factor 1: +0.0064, 8 tasks (dna_ei: -0.285); with 4 / 8 / 16: "
        "+0.0153 / +0.0080 / +0.0026 with 3 / 1 / 2 tasks")


class NPSAM(compose(PSAM, KMeansNystroem, renamed=_KMEANS,
                    defaults={"n_components": "auto", "width_factor": WIDTH_FACTOR,
                              "sampling": "replacement", "min_steps": 0, "auc_tol": None,
                              "tol": 3e-3, "monitor": "rows"})):
    """NPSAM: PSAM on k-means Nystrom features (Khalid 2019, Sec. 7.4.3).

    Keeps PSAM's former pair draws and stopping rule (``sampling="replacement",
    tol=3e-3, min_steps=0, auc_tol=None, monitor="rows"``): PSAM's newer defaults
    were chosen on linear text rows and not measured on the mapped rows."""

    _aucopt_name = "npsam"
    traits = _mapped(PSAM, family=_SGD_FAMILY, limits=_SGD_LIMITS)
    _map_doc = _NYSTROEM_PARAMS + _wide(
        "NPSAM with the factor 1: +0.0284, 3 tasks (pima: -0.146); with 8: +0.0215, 2 "
        "tasks (pima: -0.071)")


class FCBR(_Fourier, compose(CBR, RandomFourierFeatures,
                             defaults={"n_components": 150, "variant": "sincos",
                                       "width_factor": WIDTH_FACTOR, "n_epochs": 3,
                                       "average_passes": True})):
    """FCBR: confidence-weighted bipartite ranking (CBR) on random Fourier features.

    Khalid (2019), Ch. 5, Alg. 8-9: CBR with a full covariance on the sin/cos
    random Fourier features of the rows (150 frequencies, 300 features); the
    buffers hold mapped rows. The dissertation's Prop. 3 halves the mean step
    (``alpha / 2``) while the covariance step uses the full ``alpha``, which breaks
    the consistency of the soft confidence-weighted update; the full ``alpha`` of
    CBR (Prop. 1) is used. Online: the map is fixed by ``fit`` or the first
    ``partial_fit`` chunk.

    Defaults for small data, which depart from the dissertation (one pass, ``C``
    and the width tuned): the wide kernel of FBAM, FASAM and NPSAM
    (``width_factor=8``), ``C="auto"`` = ``0.1 / (4 s)`` (``2^-2`` times CBR's
    rule; ``s`` the mean squared norm of the mapped rows, 1 for these features),
    and three passes (``n_epochs=3``, shuffled each time) whose model is the mean
    of the ranking vectors ``mu`` at the ends of the passes
    (``average_passes=True``). On the 56 imbalanced tabular tasks of
    ``tools/tabular.py`` (100-5,000 rows, 1-10% positives, half of them with
    heavy-tailed rows; stratified 5-fold CV, rows standardised), the mean test AUC
    minus that of scikit-learn's ``LogisticRegression()`` went from +0.0113 with the
    former defaults (factor 1, ``2^-4`` of CBR's rule, one pass; 5 tasks more than
    0.05 below it: spambase -0.104 and -0.077, pima -0.087, vehicle -0.067, ijcnn1
    -0.057) to +0.0162 (+0.0140 on the plain tasks, +0.0184 on the heavy-tailed
    ones), with 2 tasks more than 0.05 below it (vehicle -0.078, pendigits
    heavy-tailed -0.056) and 8 more than 0.02 below (14 before). The count moves
    with the seed on tasks of 6 training positives: with ``random_state`` 1 and 2
    instead of 0, 3 and 4 of the 12 riskiest tasks were more than 0.05 below
    (vehicle and pendigits each time), against 8 and 5 before. One change alone
    fell short: the wide kernel with ``2^-2`` and one pass gave +0.0080 with 3
    tasks below (german -0.059), factor 4 +0.0130 with 2 below and 5 more within
    0.01 of the line; three averaged passes with the former width and ``C`` left 4
    of 18 small tasks below, and CBR's stall-ruled passes without the mean
    ("auto") took pima to -0.163. A small set with a few positives wants a kernel
    close to linear (spambase, pima, ijcnn1) and more training than one pass at a
    small ``C`` (vehicle, german). Against the best ``C`` of ``search_space``
    (``tools/defaults_check.py``): on webkb's text the defaults rank 0.964 test AUC
    against 0.968 (0.912 before), and on 13 of its 16 dense sets standardised (all
    but a9a, w8a and shuttle, the largest) within 0.015 of it. The three passes
    cost three single ones, O(n M D^2) each on the ``D = 2 n_components`` mapped
    features: for large data ``n_epochs=1`` keeps the dissertation's single pass
    (and ``width_factor=1`` with a tuned ``C`` its setting).

    Parameters
    ----------
    C : float or "auto", default="auto"
        Penalty C of the SCW-I loss; tuned on ``2^[-10:10]`` by 3-fold CV (Khalid
        2019, Sec. 4.5.2). "auto" is ``0.1 / (4 s)``, ``2^-2`` of CBR's rule (see
        above).
    """

    _aucopt_name = "fcbr"
    _C0 = 0.1 / 4  # C="auto": 2^-2 of CBR's (see the docstring)
    traits = _mapped(CBR, family="kernelized online (Fourier + buffered SCW)",
                     limits=_FOURIER_LIMITS + ", 2 n_components dense features; O(M D^2) "
                     "per row", max_features=_FOURIER_LIMIT)
    _map_doc = docstring(_SINCOS_PARAMS, fields={
        "sigma_note": "The dissertation sets the width to 100 on standardised data."}) + _wide(
        "FCBR with its former defaults (factor 1, one pass, ``2^-4`` of CBR's ``C``): "
        "+0.0113, 5 tasks; with the factor 8, ``2^-2`` and three averaged passes (the "
        "defaults, see above): +0.0162, 2 tasks")


# The stall rule of FOAM's and NOAM's repeated passes (a sentence of their docstrings)
_OGD_STALL = (
    "The model is the mean of the passes' end iterates (``average_passes``); ``tol`` "
    "is 1e-2 (1e-3 kept the averaged model's training hinge loss falling for 11-25 "
    "passes on the larger tasks, at a pass's cost, O(n M D), each time).")


@repeated_passes("1e-2", "-0.0039", "+0.0124", 1, parameters=False, stall=(
    "Both with the wide kernel by default (``width_factor``): with ``width_factor=1`` "
    "the passes alone left 7-8 tasks more than 0.05 below it (3 / 6 / 10 passes: "
    "+0.0041 / +0.0061 / +0.0057); the one left is vehicle (-0.096); 3-21 passes, "
    "median 5. " + _OGD_STALL))
class FOAM(_Fourier, compose(_BufferOGD, RandomFourierFeatures,
                             defaults={"n_components": 200, "variant": "sincos",
                                       "width_factor": WIDTH_FACTOR})):
    """FOAM: Fourier online AUC maximization (mini-batch OGD over the buffer).

    Ding, Liu, Zhao & Hoi, "Large Scale Kernel Methods for Online AUC
    Maximization", ICDM 2017, Algs. 1-4: the rows are mapped by sin/cos random
    Fourier features; each arrival updates its class's reservoir buffer, then takes
    one gradient step of the mean pairwise hinge loss over the opposite buffer at
    the current ``w``::

        w <- w + (eta / |B|) sum_{z in B, y_t w.(z_t - z) < 1} y_t (z_t - z) / 2

    (the ``/ 2`` as printed; the paper's features carry no ``1/sqrt(m)`` factor,
    which only rescales ``eta``). Buffers of 100 rows per class, reservoir sampling.

    Parameters
    ----------
    eta : float or "auto", default="auto"
        Step; the paper tunes it on 2^[-10:10] by 5-fold CV. "auto" is
        ``min(1, 20 M / n) / s`` with ``s`` the mean squared norm of the mapped rows
        (1 for these features), ``M`` the buffer size and ``n`` the rows of the
        first training data (OAM_gra's form): on the 16 dense sets of our
        benchmarks, standardised, ``1 / s`` ranked up to 0.056 test AUC below the
        best of ``search_space`` (w8a, 39,799 rows: 0.884 against 0.940; the large
        sets want smaller steps), this rule at most 0.0084 below it (both measured
        with one pass and ``width_factor=1``).
    """

    _aucopt_name = "foam"
    _auto_params = {"eta": lambda self, s, rows: self._C0 / s * min(
        1.0, 20.0 * self.buffer_size / max(rows.n_rows, 1))}
    traits = _mapped(_BufferOGD, family="kernelized online (Fourier + buffered OGD)",
                     limits=_FOURIER_LIMITS + ", 2 n_components dense features; O(M D) per row",
                     max_features=_FOURIER_LIMIT)
    _map_doc = docstring(_SINCOS_PARAMS, fields={
        "sigma_note": "The paper tunes it; its Table II uses a common width."}) + _wide(
        "FOAM with the factor 1 and one pass: -0.0039, 8 tasks (dna_ei: -0.448); with "
        "repeated passes (5 of them) and the factor 4 / 8: +0.0136 / +0.0074 with 3 / 1 "
        "tasks")


# NOAM's first phase computes its rows' norms on dense blocks of at most this many values
NORM_BLOCK_FLOATS = 2**20


def _kernel_ogd_phase(X, y, order, Q, eta, bandwidth, buffer_size, rng):
    """NOAM's first phase (Ding et al. 2017, Alg. 5, lines 1-10) on the rows of ``X``
    in the order ``order``: buffered kernel OGD in dual form, ``f(x) = sum_i alpha_i
    k(x_i, x)``, until ``Q`` rows carry a nonzero coefficient (or the rows run out;
    the first arrival of the second class always adds two, as ``f = 0`` violates
    every pair).

    Each arrival enters its class's reservoir buffer (two uniforms drawn per
    arrival), then, with ``B`` the opposite buffer and the margins at the frozen
    ``f``, every ``x_i`` in ``B`` with ``1 - y_t (f(x_t) - f(x_i)) > 0`` moves
    ``alpha_t += eta y_t / (2 |B|)`` and ``alpha_i -= eta y_t / (2 |B|)`` (the
    kernel form of FOAM's step). Only the rows in the buffers or with a coefficient
    are held dense (at most ``Q`` plus two buffers plus one), so memory does not
    grow with ``n``. Returns the support rows (dense, in the order they joined) and
    their coefficients; rows of one class (a first ``partial_fit`` chunk of a stream
    sorted by label) make no support vector, and their buffer (a uniform sample of
    at most ``buffer_size`` rows) is returned with coefficients 0.
    """
    n = X.shape[0]
    sq = np.empty(n)
    step = max(1, NORM_BLOCK_FLOATS // max(X.shape[1], 1))
    for start in range(0, n, step):  # the dense rows' norms, in blocks of <= 8 MiB
        block = _dense_copy(X[start:start + step])
        sq[start:start + step] = np.einsum("ij,ij->i", block, block)
    dense = {}                             # row index -> dense row, for held rows
    coef = {}                              # row index -> alpha
    buffers = ([], [])                     # row indices per class (0 neg, 1 pos)
    seen = [0, 0]
    draws = rng.random((n, 2))

    def rows_of(index):
        for i in index:
            if i not in dense:
                dense[i] = _dense_copy(X[i:i + 1])[0]
        return np.array([dense[i] for i in index])

    def f(rows):
        if not coef:
            return np.zeros(len(rows))
        idx = np.fromiter(coef, dtype=np.int64)
        alpha = np.fromiter(coef.values(), dtype=np.float64)
        d2 = sq[rows][:, None] + sq[idx][None, :] - 2.0 * rows_of(rows) @ rows_of(idx).T
        return np.exp(-np.maximum(d2, 0.0) / bandwidth) @ alpha

    for pos in range(n):
        t = int(order[pos])
        cls = int(y[t] > 0)
        seen[cls] += 1
        own = buffers[cls]
        if len(own) < buffer_size:
            own.append(t)
        elif draws[pos, 0] < buffer_size / seen[cls]:
            own[min(int(draws[pos, 1] * buffer_size), buffer_size - 1)] = t
        opp = buffers[1 - cls]
        if opp:
            scores = f([t] + opp)
            margins = y[t] * (scores[0] - scores[1:])
            step = eta * y[t] / (2.0 * len(opp))
            for i, m in zip(opp, margins):
                if 1.0 - m > 0.0:
                    coef[t] = coef.get(t, 0.0) + step
                    coef[i] = coef.get(i, 0.0) - step
            coef = {i: a for i, a in coef.items() if a != 0.0}
            if len(coef) >= Q:
                break
        held = set(buffers[0]).union(buffers[1], coef)
        for i in [i for i in dense if i not in held]:
            del dense[i]
    support = list(coef)
    if not support:  # one class so far (a partial_fit chunk): its buffered rows
        support = buffers[0] + buffers[1]
    return rows_of(support), np.array([coef.get(i, 0.0) for i in support])


@repeated_passes("1e-2", "+0.0151", "+0.0229", 2, parameters=False, stall=(
    "Its 3 tasks more than 0.05 below it with one pass were pima_diabetes (-0.117), "
    "ijcnn1 with heavy-tailed rows (-0.092) and vehicle (-0.050); with the passes "
    "pima_diabetes (-0.114) and spambase (-0.050); 3-5 passes on most tasks. "
    + _OGD_STALL))
class NOAM(compose(_BufferOGD, Nystroem, renamed={"n_components": "n_landmarks"})):
    """NOAM: Nystrom online AUC maximization with landmarks collected online.

    Ding, Liu, Zhao & Hoi, "Large Scale Kernel Methods for Online AUC
    Maximization", ICDM 2017, Alg. 5. Phase 1 runs buffered kernel OGD in dual form
    (``f(x) = sum_i alpha_i k(x_i, x)``, Gaussian kernel) on the first rows until
    ``Q = n_landmarks`` rows carry a nonzero coefficient; these support vectors are
    the landmarks of a Nystrom map keeping the top ``k = 0.4 Q`` eigenpairs,
    ``z(x) = D_k^{-1/2} V^T [k(x_1, x), ..., k(x_Q, x)]``. Phase 2 is FOAM's
    buffered OGD on ``z(x)`` (:class:`FOAM`), started from ``w = D_k^{1/2} V^T
    alpha`` (the paper prints ``alpha (D_k^{-1/2} V^T)^{-1}``, the inverse of a
    non-square matrix; this is the least-squares form, ``sum_i alpha_i z(x_i)``).

    The map is fixed by ``fit`` or the first ``partial_fit`` chunk, as for the other
    compositions: phase 1 runs on those rows (in their order, after ``fit``'s
    shuffle draw), and phase 2 then passes over all of them (the paper continues
    the stream instead; a first chunk shorter than the collection keeps the support
    vectors it found, and a first chunk of one class, which gives none, takes its
    buffered rows, a uniform sample of at most ``buffer_size``, as landmarks and
    starts phase 2 from ``w = 0``).

    Parameters
    ----------
    n_landmarks : int, default=200
        ``Q``, the support vectors collected (the paper varies it from 100 to 200).
        Too few for wide sparse rows: on text (sector, 55,197 features) the test
        AUC is 0.72 with 200 and 0.78 with 800 (at 18 times the fit time), against
        0.98 for :class:`NBAM`; ``fit`` warns (``InputLimitWarning``) on rows of
        more than about 10,000 features.
    bandwidth : float or "auto", default="auto"
        ``s`` of the kernel ``exp(-||x - y||^2 / s)``; "auto" is the mean squared
        distance of the first rows to their mean (the paper's Gaussian of width
        ``sigma`` is ``s = 2 sigma^2``).
    n_eigen : int, float in (0, 1] or None, default=0.4
        Eigenpairs of the landmarks' kernel matrix kept: ``0.4`` is the paper's
        ``k = 0.4 Q``.
    eta : float or "auto", default="auto"
        Step of both phases; "auto" is ``1 / s`` with ``s`` the mean squared norm of
        the mapped rows. The paper tunes it on 2^[-10:10].
    """

    _aucopt_name = "noam"
    traits = _mapped(_BufferOGD, family="kernelized online (Nystrom + buffered OGD)",
                     limits="dense or sparse in, d up to ~10k (wider rows: use nbam / npsam "
                     "or a linear learner), 0.4 n_landmarks dense features; phase 1 O(Q M d)",
                     max_features=10_000)
    _wide_warning = (
        "{name} builds its Nystrom map from the n_landmarks support vectors of its first "
        "phase (200 by default, the paper's 100-200), too few to rank rows of {d} features "
        "well (declared limit ~{limit} features): test AUC on sector (55,197 TF-IDF "
        "features) 0.72 and news20 (130,108) 0.87 with defaults, sector max-abs scaled "
        "0.64 with 200 and 0.78 with 800 landmarks (18 times the fit time), against 0.98 / "
        "0.95 for NBAM. Use nbam / npsam (k-means landmarks of all rows) or a linear "
        "learner such as psam for data this wide.")
    def _fit_map(self, rows, y, stream):
        """Phase 1: collect the landmarks, build their map and the starting ``w``
        (on ``fit``'s rows in a random order with ``shuffle``, a chunk as given)."""
        X = rows.matrix
        held = int(self.n_landmarks) + 2 * int(self.buffer_size) + 1  # dense rows held
        check_state_bytes(8 * held * X.shape[1], f"NOAM's first phase ({held} dense rows of "
                          f"{X.shape[1]} features)", self.max_state_bytes,
                          "lower n_landmarks or buffer_size, drop the columns no row uses, "
                          "or raise max_state_bytes")
        fmap = self._new_map()
        bandwidth = fmap._bandwidth(X)
        eta = 1.0 if self.eta == "auto" else float(self.eta)
        rng = order_stream(self.random_state)
        shuffled = self.shuffle and not stream
        order = rng.permutation(X.shape[0]) if shuffled else np.arange(X.shape[0])
        landmarks, alpha = _kernel_ogd_phase(X, y, order, int(self.n_landmarks), eta,
                                             bandwidth, int(self.buffer_size), rng)
        fmap._fit_landmarks(landmarks, bandwidth)
        self._w0 = fmap.eigenvalues_ * (fmap.projection_.T @ alpha)
        return fmap

    def _init_state(self, n_features):
        super()._init_state(n_features)
        w0 = self.__dict__.pop("_w0", None)
        if w0 is not None:
            self._set_weights(w0)


for _learner in (NBAM, FBAM, NASAM, FASAM, NPSAM, FCBR, FOAM, NOAM):
    document_weights(_learner, """The map is fitted on the repeated rows (a copy of the
    input: landmarks, bandwidth and the number of components see the copies), then
    the mapped copies train the linear learner as its docstring says.""")
