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
from aucopt._state import Array
from aucopt.features import KMeansNystroem, RandomFourierFeatures
from aucopt.learners.batch import BAM
from aucopt.learners.stochastic import ASAM, PSAM
from aucopt.validation import row_source

__all__ = ["NBAM", "FBAM", "NASAM", "FASAM", "NPSAM"]


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
        if "random_state" in self._get_param_names():
            params["random_state"] = self.random_state
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

    def _input_rows(self, X, fit_map, norms=True):
        if fit_map:
            fmap = self._new_map().fit(X)
            for key, value in fmap.__dict__.items():
                if key.endswith("_") and key != "n_features_in_":
                    setattr(self, "map_" + key, value)
            self.__dict__["_feature_map"] = fmap
        rows = row_source(self.feature_map_.transform(X), norms)
        if norms:
            rows.check_finite_norms()
        return rows


_NYSTROEM_PARAMS = """
    n_components : int, default=1600
        Landmarks of the k-means Nystrom embedding (the dissertation's 1600; 3000,
        2800 and 400 on its largest sets), the embedding's dimension at most.
    bandwidth : float or "auto", default="auto"
        ``s`` of the kernel ``exp(-||x - y||^2 / s)``; "auto" is the mean squared
        distance of the first 80,000 rows to their mean (the dissertation's rule).
    kmeans_iter : int, default=10
        Most Lloyd iterations of the k-means landmarks."""

_RFF_PARAMS = """
    n_components : int, default=1600
        Random Fourier features (cos-with-phase, ``sqrt(2/D) cos(theta.x + b)``,
        the dissertation's eq. 3.2).
    sigma : float or "auto", default="auto"
        Width of the Gaussian kernel ``exp(-||x - y||^2 / (2 sigma^2))``; "auto"
        matches the Nystrom rule (``2 sigma^2`` = the mean squared distance to the
        mean). The dissertation tunes it over {1, 10, 100} (FBAM) or {10, 20, 50,
        100} (FASAM) on standardised data."""

_COMPOSED = """

    Parameters
    ----------{map_params}
    Other parameters: as :class:`{inner}`{extra}.

    Attributes
    ----------
    feature_map_ : {map}
        The fitted map (its state is saved with the model as ``map_*``).
    coef_ : ndarray of shape (n_mapped_features,)
        The linear model on the mapped rows.
    """


def _composed(inner, fmap, map_params, extra=""):
    def deco(cls):
        cls.__doc__ = cls.__doc__.rstrip() + _COMPOSED.format(
            map_params=map_params, inner=inner.__name__, map=fmap.__name__, extra=extra)
        return cls

    return deco


_SEED = "; ``random_state`` also seeds the map"


@_composed(BAM, KMeansNystroem, _NYSTROEM_PARAMS, "; ``random_state`` seeds the landmarks")
class NBAM(_Mapped, BAM):
    """NBAM: BAM (linear PRSVM+) on k-means Nystrom features.

    Khalid (2019), Ch. 3, Alg. 2: the batch AUC learner on the embedding of
    1600 k-means landmarks, bandwidth from the first 80,000 rows.
    """

    _aucopt_name = "nbam"
    _family = "kernelized batch (Nystrom + Newton)"
    _limits = "dense or sparse in, n_components dense features; memory O(n D)"
    _map_class = KMeansNystroem
    _map_params = ("n_components", "bandwidth", ("kmeans_iter", "max_iter"))

    def __init__(self, n_components=1600, bandwidth="auto", kmeans_iter=10, C=1.0,
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
class FBAM(_Mapped, BAM):
    """FBAM: BAM (linear PRSVM+) on random Fourier features.

    Khalid (2019), Ch. 3, Alg. 3: the batch AUC learner on 1600 cos-with-phase
    random Fourier features of the Gaussian kernel.
    """

    _aucopt_name = "fbam"
    _family = "kernelized batch (Fourier + Newton)"
    _limits = "dense or sparse in, n_components dense features; memory O(n D)"
    _map_class = RandomFourierFeatures
    _map_params = ("n_components", "sigma")
    _map_fixed = {"variant": "cos_phase"}

    def __init__(self, n_components=1600, sigma="auto", C=1.0, C_scaling="per_class",
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

    def __init__(self, n_components=1600, bandwidth="auto", kmeans_iter=10, lam="auto",
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
class FASAM(_MappedSGD, ASAM):
    """FASAM: ASAM on random Fourier features (Khalid 2019, Sec. 6.4, 6.7)."""

    _aucopt_name = "fasam"
    _map_class = RandomFourierFeatures
    _map_params = ("n_components", "sigma")
    _map_fixed = {"variant": "cos_phase"}

    def __init__(self, n_components=1600, sigma="auto", lam="auto", t0=None, rskip=16,
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

    def __init__(self, n_components=1600, bandwidth="auto", kmeans_iter=10, lam="auto",
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
