"""Kernelized learners: an explicit feature map followed by a linear AUC learner.

Nonlinear AUC maximization that scales (Khalid, "Scalable Large Margin Pairwise
Learning Algorithms", PhD dissertation, Colorado State University, 2019, Ch. 3, 5,
6, 7; Ding, Liu, Zhao & Hoi, "Large Scale Kernel Methods for Online AUC
Maximization", ICDM 2017): the rows are mapped once by random Fourier features
(Rahimi & Recht, "Random Features for Large-Scale Kernel Machines", NIPS 2007) or a
k-means Nystrom embedding (Zhang, Tsang & Kwok, "Improved Nystrom Low-Rank
Approximation and Error Analysis", ICML 2008), and a linear learner of this package
ranks the mapped rows. Each composition here is the map of :mod:`aucopt.features`
plus a learner class, no more: ``fit`` fits the map, then the learner on the mapped
rows; online compositions fix the map on the first ``partial_fit`` chunk, as the
papers fix it before the stream. The fitted map is ``feature_map_``; its state is
saved with the learner (``map_*`` attributes).
"""
import warnings

from aucopt._state import Array
import numpy as np

from aucopt.exceptions import InputLimitWarning
from aucopt.features import (AUTO_COMPONENTS, KMeansNystroem, Nystroem, RandomFourierFeatures,
                              _dense_copy)
from aucopt.learners.batch import BAM
from aucopt.learners.buffered import CBR, _BufferOGD
from aucopt.learners._common import document_weights
from aucopt.learners.stochastic import ASAM, PSAM
from aucopt.validation import check_state_bytes, finite_rows, order_stream

__all__ = ["NBAM", "FBAM", "NASAM", "FASAM", "NPSAM", "FCBR", "FOAM", "NOAM"]


def _renamed(field, rename):
    """``field`` with the dimension names of its shape renamed (arrays only)."""
    if not isinstance(field, Array):
        return field
    new = Array.__new__(Array)
    new.__dict__.update(field.__dict__)
    new.shape = tuple(rename.get(s, s) if isinstance(s, str) else s for s in field.shape)
    return new


class _Mapped:
    """Mixin: the learner (next in the MRO) learns on ``feature_map_`` of the rows.

    Subclasses set ``_map_class``, ``_map_params`` (their parameters that are the
    map's: a name, or a pair (the learner's name, the map's name)) and ``_map_fixed``
    (map parameters the composition fixes).
    """

    _map_class = None
    _map_params = ()
    _map_fixed = {}
    # Gaussian-kernel maps give rows of squared norm about k(x, x) = 1: the learner's
    # search space is in those units (see aucopt.learners._common.search_scale)
    _unit_rows = True
    # the inner learner's input limit concerns the mapped rows, not the input
    _max_features = None
    # what fit warns (InputLimitWarning) on rows wider than _max_features
    _wide_warning = None
    # the map is fitted on the first data (all of it for fit, the first chunk for a
    # stream), so a chunked stream equals fit only for a map fixed beforehand
    _stream = None
    # sample_weight: the map is fitted on the rows repeated by their weights (a
    # copy), so an integer weight k equals k copies of the row for the map too
    _repeats_input = True

    @classmethod
    def _state_spec(cls):
        spec = super()._state_spec()  # the learner's state: "d" = mapped features
        for key, field in cls._map_class._state.items():
            if key != "n_features_in_":
                spec["map_" + key] = _renamed(field, {"d": "d_in"})
        return spec

    def _state_dims(self):
        fmap = self._new_map()
        fmap.__dict__.update(self._map_attributes())
        dims = fmap._state_dims()
        return {**super()._state_dims(), **{k: v for k, v in dims.items() if k != "d"},
                "d": self.map_n_features_out_, "d_in": self.n_features_in_}

    def _check_state(self):
        super()._check_state()
        self.feature_map_._check_state()

    def _model_features(self):
        return self.map_n_features_out_

    def _map_attributes(self):
        attrs = {k[4:]: v for k, v in self.__dict__.items()
                 if k.startswith("map_") and k.endswith("_")}
        attrs["n_features_in_"] = self.n_features_in_
        return attrs

    def _new_map(self):
        params = {}
        for name in self._map_params:
            mine, theirs = name if isinstance(name, tuple) else (name, name)
            params[theirs] = getattr(self, mine)
        names = self._get_param_names()
        if "random_state" in names:
            params["random_state"] = self.random_state
        if "max_state_bytes" in names and self.max_state_bytes is not None:
            params["max_bytes"] = self.max_state_bytes  # the map's arrays count too
        return self._map_class(**params, **self._map_fixed)

    @property
    def feature_map_(self):
        """The fitted feature map (built from the ``map_*`` state)."""
        fmap = self.__dict__.get("_feature_map")
        if fmap is None:
            if "map_n_features_out_" not in self.__dict__:
                raise AttributeError(f"{type(self).__name__} has no feature_map_ before fit")
            fmap = self._new_map()
            fmap.__dict__.update(self._map_attributes())
            self.__dict__["_feature_map"] = fmap
        return fmap

    def _clear_fitted(self):
        super()._clear_fitted()
        self.__dict__.pop("_feature_map", None)

    def _check_params(self):
        super()._check_params()
        self._new_map()._check_params()

    def _merge_check(self, models, base):
        super()._merge_check(models, base)
        for model in models[1:] + ([base] if base is not None else []):
            mine, theirs = self._map_attributes(), model._map_attributes()
            if any(not np.array_equal(mine[k], theirs[k]) for k in mine):
                raise ValueError(f"cannot merge {type(self).__name__} models with different "
                                 "feature maps (each fitted its map on its own data): give "
                                 "the map's parameters (e.g. sigma) and one random_state")

    def _fit_map(self, X, y, stream):
        """The map fitted on the first data (a learner may collect it otherwise)."""
        fmap = self._new_map()
        if stream and fmap._auto_components():  # "auto": the stream's n is unknown
            fmap.n_components = AUTO_COMPONENTS[1]
        return fmap.fit(X)

    def _input_rows(self, X, fit_map, norms=True, y=None, stream=False):
        if fit_map:
            if self._max_features is not None and X.shape[1] > self._max_features:
                warnings.warn(self._wide_warning.format(name=type(self).__name__,
                                                        d=X.shape[1], limit=self._max_features),
                              InputLimitWarning, stacklevel=3)
            finite_rows(X)  # before any distance or bandwidth
            fmap = self._fit_map(X, y, stream)
            for key, value in fmap.__dict__.items():
                if key.endswith("_") and key != "n_features_in_":
                    setattr(self, "map_" + key, value)
            self.__dict__["_feature_map"] = fmap
        return finite_rows(self.feature_map_.transform(X), norms)


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
    """Mixin of the random-Fourier-feature learners: their declared input limit."""

    _max_features = _FOURIER_LIMIT
    _wide_warning = _FOURIER_WIDE


_NYSTROEM_PARAMS = """
    n_components : int or "auto", default="auto"
        Landmarks of the k-means Nystrom embedding (the dissertation's 1600; 3000,
        2800 and 400 on its largest sets), the embedding's dimension at most.""" + \
    _AUTO_COMPONENTS + """
    bandwidth : float or "auto", default="auto"
        ``s`` of the kernel ``exp(-||x - y||^2 / s)``; "auto" is the mean squared
        distance of the first 80,000 rows to their mean (the dissertation's rule).
    kmeans_iter : int, default=10
        Most Lloyd iterations of the k-means landmarks."""

_RFF_PARAMS = """
    n_components : int or "auto", default="auto"
        Random Fourier features (cos-with-phase, ``sqrt(2/D) cos(theta.x + b)``,
        the dissertation's eq. 3.2; it uses 1600).""" + _AUTO_COMPONENTS + """
    sigma : float or "auto", default="auto"
        Width of the Gaussian kernel ``exp(-||x - y||^2 / (2 sigma^2))``; "auto"
        matches the Nystrom rule (``2 sigma^2`` = the mean squared distance to the
        mean). The dissertation tunes it over {1, 10, 100} (FBAM) or {10, 20, 50,
        100} (FASAM) on standardised data."""

_PARAMETERS = """

    Parameters
    ----------"""

_COMPOSED = """{map_params}
    Other parameters: as :class:`{inner}`{extra}.

    Attributes
    ----------
    feature_map_ : {map}
        The fitted map (its state is saved with the model as ``map_*``).
    coef_ : ndarray of shape (n_mapped_features,)
        The linear model on the mapped rows.
    """


_MERGE = """    Merging: as {inner}, for models with the same fitted map (refused
    otherwise: a map fitted on each part's own data differs).
"""


def _merge_note(cls, inner):
    """Put the merge paragraph of a composition before its parameters."""
    name = "the buffered learners" if inner.__name__.startswith("_") \
        else f":class:`{inner.__name__}`"
    doc = cls.__doc__.rstrip() + "\n"
    at = doc.find("\n    Parameters\n")
    cls.__doc__ = (doc[:at + 1] + _MERGE.format(inner=name) + doc[at:] if at >= 0
                   else doc + "\n" + _MERGE.format(inner=name))


def _composed(inner, fmap, map_params, extra=""):
    def deco(cls):
        if inner._merge:
            _merge_note(cls, inner)
        doc = cls.__doc__.rstrip()
        if "\n    Parameters\n" not in doc:  # else the map's parameters join the class's own
            doc += _PARAMETERS
        cls.__doc__ = doc + _COMPOSED.format(
            map_params=map_params, inner=inner.__name__, map=fmap.__name__, extra=extra)
        return cls

    return deco


_SEED = "; ``random_state`` also seeds the map"


@_composed(BAM, KMeansNystroem, _NYSTROEM_PARAMS, "; ``random_state`` seeds the landmarks")
class NBAM(_Mapped, BAM):
    """NBAM: BAM (linear PRSVM+) on k-means Nystrom features.

    Khalid (2019), Ch. 3, Alg. 2: the batch AUC learner on the embedding of
    k-means landmarks (1600 in the dissertation; see ``n_components``), bandwidth
    from the first 80,000 rows.
    """

    _aucopt_name = "nbam"
    _family = "kernelized batch (Nystrom + Newton)"
    _limits = "dense or sparse in, n_components dense features; memory O(n D)"
    _map_class = KMeansNystroem
    _map_params = ("n_components", "bandwidth", ("kmeans_iter", "max_iter"))

    def __init__(self, n_components="auto", bandwidth="auto", kmeans_iter=10, C=1.0,
                 C_scaling="per_class", tol=1e-3, max_newton=50, max_cg=200, cg_tol=0.1,
                 line_search="exact", random_state=None, verbose=0, pos_label=None):
        self.n_components = n_components
        self.bandwidth = bandwidth
        self.kmeans_iter = kmeans_iter
        self.C = C
        self.C_scaling = C_scaling
        self.tol = tol
        self.max_newton = max_newton
        self.max_cg = max_cg
        self.cg_tol = cg_tol
        self.line_search = line_search
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label


@_composed(BAM, RandomFourierFeatures, _RFF_PARAMS, "; ``random_state`` seeds the frequencies")
class FBAM(_Fourier, _Mapped, BAM):
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
    _family = "kernelized batch (Fourier + Newton)"
    _limits = _FOURIER_LIMITS + ", n_components dense features; memory O(n D)"
    _map_class = RandomFourierFeatures
    _map_params = ("n_components", "sigma")
    _map_fixed = {"variant": "cos_phase"}

    def __init__(self, n_components="auto", sigma="auto", C=0.25, C_scaling="per_class",
                 tol=1e-3, max_newton=50, max_cg=200, cg_tol=0.1, line_search="exact",
                 random_state=None, verbose=0, pos_label=None):
        self.n_components = n_components
        self.sigma = sigma
        self.C = C
        self.C_scaling = C_scaling
        self.tol = tol
        self.max_newton = max_newton
        self.max_cg = max_cg
        self.cg_tol = cg_tol
        self.line_search = line_search
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label


class _MappedSGD(_Mapped):
    _family = "kernelized pairwise SGD"
    _limits = "dense or sparse in, n_components dense features; memory O(n D)"


@_composed(ASAM, KMeansNystroem, _NYSTROEM_PARAMS, _SEED)
class NASAM(_MappedSGD, ASAM):
    """NASAM: ASAM on k-means Nystrom features (Khalid 2019, Sec. 6.4, 6.6)."""

    _aucopt_name = "nasam"
    _map_class = KMeansNystroem
    _map_params = ("n_components", "bandwidth", ("kmeans_iter", "max_iter"))

    def __init__(self, n_components="auto", bandwidth="auto", kmeans_iter=10, lam="auto",
                 t0=None, rskip=16, askip=None, n_epochs="auto", tol=3e-3,
                 n_iter_no_change=2, max_epochs=50, random_state=None, verbose=0,
                 pos_label=None):
        self.n_components = n_components
        self.bandwidth = bandwidth
        self.kmeans_iter = kmeans_iter
        self.lam = lam
        self.t0 = t0
        self.rskip = rskip
        self.askip = askip
        self.n_epochs = n_epochs
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.max_epochs = max_epochs
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label


@_composed(ASAM, RandomFourierFeatures, _RFF_PARAMS, _SEED)
class FASAM(_Fourier, _MappedSGD, ASAM):
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
    _limits = _FOURIER_LIMITS + ", n_components dense features; memory O(n D)"
    _map_class = RandomFourierFeatures
    _map_params = ("n_components", "sigma")
    _map_fixed = {"variant": "cos_phase"}

    def __init__(self, n_components="auto", sigma="auto", lam="auto", t0=None, rskip=16,
                 askip=None, n_epochs="auto", tol=3e-3, n_iter_no_change=2, max_epochs=50,
                 random_state=None, verbose=0, pos_label=None):
        self.n_components = n_components
        self.sigma = sigma
        self.lam = lam
        self.t0 = t0
        self.rskip = rskip
        self.askip = askip
        self.n_epochs = n_epochs
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.max_epochs = max_epochs
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label


@_composed(PSAM, KMeansNystroem, _NYSTROEM_PARAMS, _SEED)
class NPSAM(_MappedSGD, PSAM):
    """NPSAM: PSAM on k-means Nystrom features (Khalid 2019, Sec. 7.4.3)."""

    _aucopt_name = "npsam"
    _map_class = KMeansNystroem
    _map_params = ("n_components", "bandwidth", ("kmeans_iter", "max_iter"))

    def __init__(self, n_components="auto", bandwidth="auto", kmeans_iter=10, lam="auto",
                 t0=None, rskip=16, askip=None, n_epochs="auto", tol=3e-3,
                 n_iter_no_change=2, max_epochs=50, random_state=None, verbose=0,
                 pos_label=None):
        self.n_components = n_components
        self.bandwidth = bandwidth
        self.kmeans_iter = kmeans_iter
        self.lam = lam
        self.t0 = t0
        self.rskip = rskip
        self.askip = askip
        self.n_epochs = n_epochs
        self.tol = tol
        self.n_iter_no_change = n_iter_no_change
        self.max_epochs = max_epochs
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label


_SINCOS_PARAMS = """
    n_components : int, default={m}
        Frequencies ``m`` of the sin/cos random Fourier features (``2m`` features,
        scaled by ``sqrt(1/m)`` so that their inner products estimate the kernel).
    sigma : float or "auto", default="auto"
        Width of the Gaussian kernel ``exp(-||x - y||^2 / (2 sigma^2))``; "auto"
        makes ``2 sigma^2`` the mean squared distance of the first rows to their
        mean. {sigma_note}"""


@_composed(CBR, RandomFourierFeatures, _SINCOS_PARAMS.format(
    m=150, sigma_note="The dissertation sets the width to 100 on standardised data."),
    "; ``random_state`` also seeds the frequencies; the map is fixed by ``fit`` or the "
    "first ``partial_fit`` chunk")
class FCBR(_Fourier, _Mapped, CBR):
    """FCBR: confidence-weighted bipartite ranking (CBR) on random Fourier features.

    Khalid (2019), Ch. 5, Alg. 8-9: CBR with a full covariance on the sin/cos
    random Fourier features of the rows (150 frequencies, 300 features); the
    buffers hold mapped rows. The dissertation's Prop. 3 halves the mean step
    (``alpha / 2``) while the covariance step uses the full ``alpha``, which breaks
    the consistency of the soft confidence-weighted update; the full ``alpha`` of
    CBR (Prop. 1) is used. Online: the map is fixed by ``fit`` or the first
    ``partial_fit`` chunk.

    ``C="auto"`` is ``2^-4`` times CBR's rule here, ``0.1 / (16 s)``: on the 16
    dense sets of our benchmarks, standardised, CBR's ``0.1 / s`` ranked up to 0.09
    test AUC below the best of ``search_space`` (german 0.72 against 0.80, pima,
    w8a and dna likewise), ``2^-4`` of it at most 0.013 below; on webkb's text it
    ranks 0.912 against 0.864.
    """

    _aucopt_name = "fcbr"
    _C0 = 0.1 / 16  # C="auto": 2^-4 of CBR's (see the docstring)
    _family = "kernelized online (Fourier + buffered SCW)"
    _limits = _FOURIER_LIMITS + ", 2 n_components dense features; O(M D^2) per row"
    _map_class = RandomFourierFeatures
    _map_params = ("n_components", "sigma")
    _map_fixed = {"variant": "sincos"}

    def __init__(self, n_components=150, sigma="auto", C="auto", eta=0.7, buffer_size=50,
                 buffer="fifo", beta_form="scw", shuffle=True, random_state=None, verbose=0,
                 pos_label=None, max_state_bytes=None):
        self.n_components = n_components
        self.sigma = sigma
        self.C = C
        self.eta = eta
        self.buffer_size = buffer_size
        self.buffer = buffer
        self.beta_form = beta_form
        self.shuffle = shuffle
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label
        self.max_state_bytes = max_state_bytes


@_composed(_BufferOGD, RandomFourierFeatures, _SINCOS_PARAMS.format(
    m=200, sigma_note="The paper tunes it; its Table II uses a common width."),
    "; ``random_state`` also seeds the frequencies; the map is fixed by ``fit`` or the "
    "first ``partial_fit`` chunk")
class FOAM(_Fourier, _Mapped, _BufferOGD):
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
        sets want smaller steps), this rule at most 0.0084 below it.
    buffer_size : int, default=100
    buffer : {"fifo", "reservoir"}, default="reservoir"
    """

    _aucopt_name = "foam"
    _auto_params = {"eta": lambda self, s, rows: self._C0 / s * min(
        1.0, 20.0 * self.buffer_size / max(rows.n_rows, 1))}
    _family = "kernelized online (Fourier + buffered OGD)"
    _limits = _FOURIER_LIMITS + ", 2 n_components dense features; O(M D) per row"
    _map_class = RandomFourierFeatures
    _map_params = ("n_components", "sigma")
    _map_fixed = {"variant": "sincos"}

    def __init__(self, n_components=200, sigma="auto", eta="auto", buffer_size=100,
                 buffer="reservoir", shuffle=True, random_state=None, verbose=0,
                 pos_label=None, max_state_bytes=None):
        self.n_components = n_components
        self.sigma = sigma
        self.eta = eta
        self.buffer_size = buffer_size
        self.buffer = buffer
        self.shuffle = shuffle
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label
        self.max_state_bytes = max_state_bytes


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


class NOAM(_Mapped, _BufferOGD):
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
    eta : float or "auto", default="auto"
        Step of both phases; "auto" is ``1 / s`` with ``s`` the mean squared norm of
        the mapped rows. The paper tunes it on 2^[-10:10].
    buffer_size : int, default=100
    buffer : {"fifo", "reservoir"}, default="reservoir"
    shuffle, random_state, verbose, pos_label, max_state_bytes
        As :class:`FOAM`.

    Attributes
    ----------
    feature_map_ : aucopt.features.Nystroem
        The Nystrom map of the collected landmarks (saved with the model).
    coef_ : ndarray of shape (n_mapped_features,)
    """

    _aucopt_name = "noam"
    _family = "kernelized online (Nystrom + buffered OGD)"
    _limits = ("dense or sparse in, d up to ~10k (wider rows: use nbam / npsam or a linear "
               "learner), 0.4 n_landmarks dense features; phase 1 O(Q M d)")
    _max_features = 10_000
    _wide_warning = (
        "{name} builds its Nystrom map from the n_landmarks support vectors of its first "
        "phase (200 by default, the paper's 100-200), too few to rank rows of {d} features "
        "well (declared limit ~{limit} features): test AUC on sector (55,197 TF-IDF "
        "features) 0.72 and news20 (130,108) 0.87 with defaults, sector max-abs scaled "
        "0.64 with 200 and 0.78 with 800 landmarks (18 times the fit time), against 0.98 / "
        "0.95 for NBAM. Use nbam / npsam (k-means landmarks of all rows) or a linear "
        "learner such as psam for data this wide.")
    _map_class = Nystroem
    _map_params = (("n_landmarks", "n_components"), "bandwidth")
    _map_fixed = {"n_eigen": 0.4}

    def __init__(self, n_landmarks=200, bandwidth="auto", eta="auto", buffer_size=100,
                 buffer="reservoir", shuffle=True, random_state=None, verbose=0,
                 pos_label=None, max_state_bytes=None):
        self.n_landmarks = n_landmarks
        self.bandwidth = bandwidth
        self.eta = eta
        self.buffer_size = buffer_size
        self.buffer = buffer
        self.shuffle = shuffle
        self.random_state = random_state
        self.verbose = verbose
        self.pos_label = pos_label
        self.max_state_bytes = max_state_bytes

    def _fit_map(self, X, y, stream):
        """Phase 1: collect the landmarks, build their map and the starting ``w``
        (on ``fit``'s rows in a random order with ``shuffle``, a chunk as given)."""
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
        fmap = Nystroem.from_landmarks(landmarks, bandwidth=bandwidth, n_eigen=0.4)
        fmap.n_components = int(self.n_landmarks)
        self._w0 = fmap.eigenvalues_ * (fmap.projection_.T @ alpha)
        return fmap

    def _init_state(self, n_features):
        super()._init_state(n_features)
        w0 = self.__dict__.pop("_w0", None)
        if w0 is not None:
            self._set_weights(w0)


_merge_note(NOAM, _BufferOGD)


for _learner in (NBAM, FBAM, NASAM, FASAM, NPSAM, FCBR, FOAM, NOAM):
    document_weights(_learner, """The map is fitted on the repeated rows (a copy of the
    input: landmarks, bandwidth and the number of components see the copies), then
    the mapped copies train the linear learner as its docstring says.""")
