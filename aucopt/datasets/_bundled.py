"""Small real data sets shipped with aucopt (see data/SOURCES.md)."""
from __future__ import annotations

import os

import numpy as np
import scipy.sparse as sp

from ._preprocessing import binarize
from ._svmlight import load_svmlight

__all__ = ["load", "list_datasets", "DATA_DIR"]

DATA_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")

# name -> file, n, d, nnz, positive labels of the file, description of the task.
# Counts are checked by the tests; the binary tasks follow the project-wide
# table in SOURCES.md (+1 class as stated, "stratified 80/20, seed 0").
_REGISTRY = {
    "spambase": dict(
        file="spambase.svm.bz2", n=4601, d=57, nnz=59231, positive=(1,),
        title="Spambase (UCI): e-mail word/char frequencies",
        task="+1 = spam"),
    "ionosphere": dict(
        file="ionosphere.svm.bz2", n=351, d=34, nnz=10513, positive=(1,),
        title="Ionosphere (UCI): radar returns",
        task="+1 = good"),
    "dna_ei": dict(
        file="dna_ei.svm.bz2", n=3186, d=180, nnz=144902, positive=(1,),
        title="DNA / StatLog splice junctions (UCI): 180 binary indicators",
        task="+1 = exon/intron boundary (ei)"),
}

_POS_PERCENT = {"spambase": 39.40, "ionosphere": 64.10, "dna_ei": 24.07}


def list_datasets() -> dict[str, str]:
    """Names and short descriptions of the bundled data sets.

    Returns
    -------
    dict
        ``name -> description`` (source, n, d, share of the +1 class, task).

    Examples
    --------
    >>> sorted(list_datasets())
    ['dna_ei', 'ionosphere', 'spambase']
    """
    return {
        name: (f"{m['title']}; n={m['n']}, d={m['d']}, "
               f"{_POS_PERCENT[name]:.2f}% positive ({m['task']})")
        for name, m in _REGISTRY.items()
    }


def load(name: str) -> tuple[sp.csr_matrix, np.ndarray]:
    """Load a bundled real data set as a binary task.

    Parameters
    ----------
    name : str
        One of :func:`list_datasets` (``"spambase"``, ``"ionosphere"``,
        ``"dna_ei"``).

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features), float64
        ``n_features`` is the data set's full dimension.
    y : numpy.ndarray of shape (n_samples,), float64
        Labels in ``{-1.0, +1.0}``.

    Raises
    ------
    ValueError
        For an unknown name (the message lists the known ones).

    See Also
    --------
    split : the stratified 80/20 split (seed 0) used by the benchmarks.

    Examples
    --------
    >>> X, y = load("ionosphere")
    >>> X.shape, y.tolist().count(1.0)
    ((351, 34), 225)
    """
    meta = _REGISTRY.get(name) if isinstance(name, str) else None
    if meta is None:
        raise ValueError(f"unknown data set {name!r}; bundled data sets are: "
                         + ", ".join(sorted(_REGISTRY)))
    X, y = load_svmlight(os.path.join(DATA_DIR, meta["file"]),
                         n_features=meta["d"], zero_based=False)
    labels = np.unique(y)
    if not (labels.size == 2 and labels[0] == -1.0 and labels[1] == 1.0
            and tuple(meta["positive"]) == (1,)):
        y = binarize(y, meta["positive"])
    return X, y
