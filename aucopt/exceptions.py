"""Exceptions and warnings raised by aucopt."""
import sys


class NotFittedError(ValueError, AttributeError):
    """A learner was used for prediction before ``fit`` or ``partial_fit``.

    Subclasses both ``ValueError`` and ``AttributeError`` as scikit-learn's
    exception of the same name does, so code written for either catches it.
    """


_not_fitted_classes = {}


def not_fitted_error(message):
    """A :class:`NotFittedError`, which is also scikit-learn's when sklearn is loaded.

    aucopt never imports scikit-learn; but if the caller already has (it is in
    ``sys.modules``), the raised error also subclasses
    ``sklearn.exceptions.NotFittedError``, so ``except`` clauses and checks written
    for either library catch it.
    """
    sk = sys.modules.get("sklearn.exceptions")
    if sk is None:
        return NotFittedError(message)
    cls = _not_fitted_classes.get(sk.NotFittedError)
    if cls is None:
        cls = type("NotFittedError", (NotFittedError, sk.NotFittedError),
                   {"__module__": __name__, "__doc__": NotFittedError.__doc__})
        _not_fitted_classes[sk.NotFittedError] = cls
    return cls(message)


class PluginLoadError(ImportError):
    """A learner plugin (entry point in group ``aucopt.learners``) failed to load.

    Attributes
    ----------
    name : str
        The learner name the plugin registers.
    distribution : str
        ``"<distribution> <version>"`` that declared the entry point.
    """

    def __init__(self, message, name=None, distribution=None):
        super().__init__(message)
        self.name = name
        self.distribution = distribution


class DataConversionWarning(UserWarning):
    """Input was converted in a way the caller may not expect (e.g. a column-vector y)."""


class InputLimitWarning(UserWarning):
    """The input is beyond the learner's declared limit (``aucopt list``, column
    "input"): it trains, but the model is likely to rank poorly; the message names
    a learner for such data."""


class ConstantModelWarning(UserWarning):
    """Training ended with a model that scores every training row the same (AUC 0.5):
    the step size was too small or the regularisation too strong for the data's scale."""


class ReversedModelWarning(UserWarning):
    """Training ended with a model that ranks its own training rows well below chance
    (training AUC under 0.4, with at least 5 rows of each class): it points away from
    the positives. Seen on features as stored, far from centred and of very different
    scales: on scikit-learn's breast-cancer data with 40 of its malignant rows kept,
    Uni-Exp's training AUC was 0.10 and FSAUC's 0.01 (test AUC 0.99 for both with the
    features standardised); and with explicit steps too large for the data.
    Standardise the features."""


class FeatureScaleWarning(UserWarning):
    """One feature's scale dominates the training rows (``fit`` and a first
    ``partial_fit`` warn; see :func:`aucopt.validation.dominant_feature`).

    Every learner's default step sizes and regularisation follow the rows' squared
    norms, so when one feature holds most of them the others barely train. On
    spambase as stored (its ``capital_run_length_total`` column; 3-fold CV of the
    156-row task of ``tools/tabular.py``) PSAM's test AUC was 0.864 raw against
    0.935 standardised, and on wdbc 0.958 against 0.994; scikit-learn's
    ``SGDClassifier(average=True)`` behaves the same way (0.799 on the raw 80/20
    split of spambase, against 0.966 for ``LogisticRegression()``). Standardise the
    features first (:class:`aucopt.datasets.Scaler` or scikit-learn's
    ``StandardScaler``; on the command line ``aucopt scale``, whose default max-abs
    scaling took PSAM from 0.823 to 0.968 on that split)."""
