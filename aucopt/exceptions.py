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
