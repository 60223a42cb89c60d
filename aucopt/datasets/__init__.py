"""Data sets and data handling for aucopt.

Reading and writing svmlight / LIBSVM files
    :func:`load_svmlight`, :func:`iter_svmlight` (chunks in bounded memory),
    :func:`dump_svmlight`
Writing any file so that a failure leaves the previous one
    :func:`atomic_write` (what every file aucopt writes goes through)
Preparing a binary task
    :func:`binarize`, :class:`Scaler`, :func:`scale`, :func:`split`
Bundled real data sets (a few hundred KB, see ``data/SOURCES.md``)
    :func:`load`, :func:`list_datasets`

Examples
--------
>>> from aucopt import datasets
>>> X, y = datasets.load("spambase")
>>> X_train, X_test, y_train, y_test = datasets.split(X, y)   # stratified 80/20, seed 0
>>> X_train = datasets.scale(X_train, "maxabs")
"""
from aucopt._atomic import atomic_write

from ._bundled import list_datasets, load
from ._preprocessing import Scaler, binarize, scale, split
from ._svmlight import choose_index_dtype, dump_svmlight, iter_svmlight, load_svmlight

__all__ = [
    "load_svmlight",
    "iter_svmlight",
    "dump_svmlight",
    "binarize",
    "Scaler",
    "scale",
    "split",
    "load",
    "list_datasets",
    "choose_index_dtype",
    "atomic_write",
]
