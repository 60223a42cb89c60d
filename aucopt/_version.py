"""The package version (one place; ``aucopt.__version__`` and saved models read it)."""
__version__ = "0.1.0"
