"""``FULL``: whether the long forms of the suite's slowest tests run
(``AUCOPT_FULL_TESTS=1``, CI's second step): scikit-learn's estimator checks on every
built-in learner (``test_estimator_checks.py``), and the svmlight parser's fuzzing
with three times its default examples (``test_svmlight_robust.py``)."""
import os

FULL = os.environ.get("AUCOPT_FULL_TESTS", "").lower() not in ("", "0", "false", "no")
