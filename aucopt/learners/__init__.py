"""Built-in learners; importing this package registers them by name.

One module per family (DESIGN.md): ``stochastic`` holds the pairwise SGD learners.
"""
from aucopt.learners.stochastic import SAM

__all__ = ["SAM"]
