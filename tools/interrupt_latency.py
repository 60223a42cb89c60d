#!/usr/bin/env python
"""How fast Ctrl-C stops a long fit, and whether the model is left as it was.

    python tools/interrupt_latency.py [NAME ...] [--after 0.5] [--repeat 3] [--n-jobs N]

For each learner (default: every registered one) a model is first fitted on small
data, then a long training call on generated data (dense or CSR, sized so that it
runs for several seconds) is started: ``fit``, and on odd repeats of an online
learner one ``partial_fit`` pass; after ``--after`` seconds (a fifth of it for the
pass) a timer thread sends SIGINT to the process. Reported per learner: the latency from the signal to
the ``KeyboardInterrupt`` reaching the caller (worst of ``--repeat``), and whether
every fitted attribute (arrays bit for bit, scalars, the random stream) is as it was
before the interrupted call. The kernels poll for signals every few milliseconds of
work (aucopt/_kernels/_interrupt.pxd); the target is 0.2 s. With ``--n-jobs`` the
learners that have ``n_jobs`` train on that many threads (the signal reaches the
main thread's kernel, which halts the others).
"""
import argparse
import os
import signal
import sys
import threading
import time

import numpy as np
import scipy.sparse as sp

import aucopt
from aucopt.testing import assert_same_state, fitted_state

# learner -> (n rows, n features, dense, extra params) of a call that runs for seconds
LONG_CALLS = {
    "opauc": (60_000, 600, True, {}),
    "adaoam": (60_000, 600, True, {}),
    "cbr": (20_000, 400, True, {}),
    "spdam": (200_000, 2_000, False, {"n_epochs": 200}),
    "fsauc": (400_000, 20_000, False, {"n_passes": 20}),  # one pass takes 0.3 s
}
DEFAULT_CALL = (400_000, 20_000, False, {"n_epochs": 50})


def _data(n, d, dense, seed=0):
    rng = np.random.default_rng(seed)
    if dense:
        X = rng.standard_normal((n, d)) / np.sqrt(d)
    else:
        nnz = 30
        ind = np.sort(rng.integers(0, d, size=(n, nnz)), axis=1)
        X = sp.csr_matrix((rng.standard_normal(n * nnz) / np.sqrt(nnz), ind.ravel(),
                           np.arange(0, n * nnz + 1, nnz)), shape=(n, d))
        X.sum_duplicates()
    w = rng.standard_normal(d)
    y = (X @ w + 0.3 * rng.standard_normal(n) > 0).astype(int)
    return X, y


def _learner(name, extra):
    names = aucopt.get(name).get_params()
    params = {k: v for k, v in extra.items() if k in names}
    if "random_state" in names:
        params["random_state"] = 0
    return aucopt.get(name, **params)


def measure(name, after, repeat, n_jobs=None):
    n, d, dense, extra = LONG_CALLS.get(name, DEFAULT_CALL)
    extra = dict(extra, n_jobs=n_jobs)
    X, y = _data(n, d, dense)
    worst, intact = 0.0, True
    for r in range(repeat):
        model = _learner(name, extra).fit(X[:500], y[:500])
        before = fitted_state(model)
        sent = {}

        def fire():
            sent["t"] = time.perf_counter()
            os.kill(os.getpid(), signal.SIGINT)

        # odd repeats interrupt one partial_fit pass, which is shorter: a fifth of the delay
        chunk = hasattr(model, "partial_fit") and r % 2
        timer = threading.Timer(after / 5 if chunk else after, fire)
        start = time.perf_counter()
        timer.start()
        try:
            if chunk:
                model.partial_fit(X, y)
            else:
                model.fit(X, y)
        except KeyboardInterrupt:
            caught = time.perf_counter()
        except FloatingPointError:  # a clear refusal before the signal: no latency
            timer.cancel()
            return None, None, time.perf_counter() - start
        else:
            timer.cancel()
            return None, None, time.perf_counter() - start
        timer.join()
        worst = max(worst, caught - sent["t"])
        try:
            assert_same_state(before, fitted_state(model), name)
        except AssertionError:
            intact = False
    return worst, intact, None


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("names", nargs="*")
    ap.add_argument("--after", type=float, default=0.5)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--n-jobs", type=int, default=None, help="threads for learners with n_jobs")
    args = ap.parse_args(argv)
    # a shell starts background jobs with SIGINT ignored; Python then installs no
    # handler and the timer's signal would be lost
    signal.signal(signal.SIGINT, signal.default_int_handler)
    names = args.names or sorted(aucopt.available())
    print("| learner | worst latency [s] | model unchanged |")
    print("|---|---|---|")
    for name in names:
        latency, intact, finished = measure(name, args.after, args.repeat, args.n_jobs)
        if latency is None:
            print(f"| {name} | finished (or refused) in {finished:.2f} s before the signal "
                  "| - |")
        else:
            print(f"| {name} | {latency:.4f} | {'yes' if intact else 'NO'} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
