"""Scaling out: a 2-worker Dask cluster against one process, and streaming from disk
under a memory limit, on the rcv1-shaped task of ``tools/synth_rcv1.py``.

Usage (one command; ``--rows`` smaller for a quick run)::

    PYTHONPATH=. python tools/scaleout.py [--rows 804414] [--epochs auto,5,10] [--tau 50]
        [--stream-gib 2] [--limit-mib 1024] [--skip-cluster] [--skip-stream]

Part 1, cluster. The training rows (``--rows``, default all 804,414) and 50,000 test
rows come from the generator; the one process holds them in memory, the
``distributed.LocalCluster`` (2 worker processes, 1 thread each) makes its blocks of
50,000 rows on the workers and keeps them there (not timed, as the one process's
data are not). Timed: ``psam`` by ``fit`` against :func:`aucopt.dask.fit` for each
``n_epochs`` of ``--epochs`` (rounds of parameter mixing: as many, or with "auto",
the learner's default, until the objective stalls, each side by its own rule), and
``opaucr`` by
``fit(shuffle=False)`` + ``solve(X, y)`` against :func:`aucopt.dask.fit` (the same
model, to rounding). Criterion: the cluster takes at most 0.7x the single-process
wall time, at a test AUC within 0.002.

Part 2, streaming. An svmlight file of at least ``--stream-gib`` GiB of rcv1-shaped
rows is written once (``tools/out/rcv1_stream.svm``, reused). Child processes run
under ``resource.setrlimit(RLIMIT_AS, --limit-mib)`` -- less address space than the
file's size -- and report their peak RSS: reading the file with
``iter_svmlight(chunk_size=50_000)`` (criterion: peak RSS < 300 MB, and the rows,
compared by per-chunk digests, equal those of ``load_svmlight`` run in a child
without the limit), then training ``opaucr`` and ``psam`` by ``partial_fit`` chunk by
chunk (test AUC on 50,000 generated rows held apart).

The machine is shared: timings are noisy; the ratios are measured side by side.
"""
import argparse
import hashlib
import json
import logging
import os
import resource
import subprocess
import sys
import time

import numpy as np
import scipy.sparse as sp

import synth_rcv1  # this script's folder is first on sys.path

HERE = os.path.dirname(os.path.abspath(__file__))

TEST_ROWS = 50_000
CHUNK = 50_000
RATIO_LIMIT = 0.7
AUC_GAP = 0.002
RSS_LIMIT_MB = 300


def _test_set(first_row):
    """The ``TEST_ROWS`` rows of the generator from row ``first_row`` on (whole
    blocks after the training rows: never trained on)."""
    start = -(-first_row // synth_rcv1.BLOCK)
    parts = [synth_rcv1.block(start + k) for k in range(-(-TEST_ROWS // synth_rcv1.BLOCK))]
    return sp.vstack([p[0] for p in parts], format="csr"), np.concatenate([p[1] for p in parts])


def _timed(fn):
    start = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - start


def _cpu_seconds():
    """CPU seconds of this process, children included (BLAS threads count too)."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _costs(client, fn):
    """``(result, wall seconds, [CPU seconds of each worker], client CPU seconds)``."""
    before = client.run(_cpu_seconds)
    mine = _cpu_seconds()
    out, wall = _timed(fn)
    after = client.run(_cpu_seconds)
    return out, wall, [after[w] - before[w] for w in sorted(after)], _cpu_seconds() - mine


# --------------------------------------------------------------------------- cluster


def cluster_part(args):
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster, wait

    import aucopt
    import aucopt.dask as ad

    n, d = args.rows, synth_rcv1.N_FEATURES
    sizes = [min(synth_rcv1.BLOCK, n - s) for s in range(0, n, synth_rcv1.BLOCK)]
    print(f"generating {n:,} training rows in one process ...", flush=True)
    X, y = synth_rcv1.generate(n)
    X_te, y_te = _test_set(n)
    print(f"  {X.shape[0]:,} x {d:,}, {X.nnz:,} non-zeros; test {y_te.size:,} rows",
          flush=True)
    results = {}
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                      dashboard_address=None, silence_logs=logging.CRITICAL) as cluster, \
            Client(cluster) as client:
        start = time.perf_counter()
        # each half of the blocks made on the worker aucopt.dask.fit gives that half to
        workers = sorted(client.nthreads())
        made = []
        for k, run in enumerate(np.array_split(np.arange(len(sizes)), len(workers))):
            made += client.persist([dask.delayed(synth_rcv1.block, pure=True)(b, sizes[b])
                                    for b in run], workers=[workers[k]])
        Xd = da.concatenate([da.from_delayed(dask.delayed(lambda p: p[0])(m), (k, d),
                                             dtype=float, meta=sp.csr_matrix((0, d)))
                             for m, k in zip(made, sizes)])
        yd = da.concatenate([da.from_delayed(dask.delayed(lambda p: p[1])(m), (k,),
                                             dtype=float) for m, k in zip(made, sizes)])
        Xd, yd = client.persist([Xd, yd])
        wait([Xd, yd])
        print(f"{len(sizes)} blocks made on the 2 workers and kept there "
              f"({time.perf_counter() - start:.1f} s)", flush=True)
        psam = [(f"psam n_epochs={e}",
                 lambda e=e: aucopt.get("psam", n_epochs=e, random_state=0).fit(X, y),
                 lambda e=e: ad.fit(aucopt.get("psam", n_epochs=e, random_state=0), Xd, yd,
                                    client=client)) for e in args.epochs]
        runs = psam + [
            ("opaucr", lambda: aucopt.get("opaucr", tau=args.tau, shuffle=False,
                                          random_state=0).fit(X, y).solve(X, y),
             lambda: ad.fit(aucopt.get("opaucr", tau=args.tau, random_state=0), Xd, yd,
                            client=client)),
        ]
        for name, single, distributed in runs:
            cpu = _cpu_seconds()
            one, t_one = _timed(single)
            cpu = _cpu_seconds() - cpu
            two, t_two, workers, client_cpu = _costs(client, distributed)
            auc_one, auc_two = one.score(X_te, y_te), two.score(X_te, y_te)
            ok = t_two <= RATIO_LIMIT * t_one and abs(auc_two - auc_one) <= AUC_GAP
            results[f"cluster {name}"] = ok
            print(f"{name}\n        one process {t_one:6.2f} s, AUC {auc_one:.4f}, "
                  f"{one.n_passes_} passes | 2 workers {t_two:6.2f} s, AUC {auc_two:.4f}, "
                  f"{two.n_passes_} rounds | ratio {t_two / t_one:.2f}, AUC gap "
                  f"{auc_two - auc_one:+.4f} -> {'PASS' if ok else 'FAIL'}", flush=True)
            # on a loaded machine the wall ratio says little: the CPU seconds say what
            # a quiet one would do (the slower worker, plus the client's own work)
            print(f"        CPU s: one process {cpu:.2f}; workers "
                  f"{', '.join(f'{w:.2f}' for w in workers)}; client {client_cpu:.2f} -> "
                  f"(slower worker + client) / one process = "
                  f"{(max(workers) + client_cpu) / cpu:.2f}", flush=True)
            if name == "opaucr":
                online = aucopt.get("opaucr", tau=args.tau, random_state=0).fit(X, y)
                print(f"        (for reference: the online iterate of fit, shuffled, "
                      f"test AUC {online.score(X_te, y_te):.4f}; the solved model "
                      f"differs from it by {np.abs(one.coef_ - online.coef_).max():.3g} "
                      f"in max |coef|)", flush=True)
                gap = np.abs(two.coef_ - one.coef_).max() / np.abs(one.coef_).max()
                print(f"        opaucr cluster vs one process: max relative coef "
                      f"difference {gap:.2e}", flush=True)
    return results


# --------------------------------------------------------------------------- stream


def stream_file(gib):
    """An svmlight file of at least ``gib`` GiB (written once) and its row count."""
    path = os.path.join(HERE, "out", "rcv1_stream.svm")
    meta = path + ".json"
    if os.path.exists(meta):
        with open(meta) as f:
            info = json.load(f)
        if info["bytes"] == os.path.getsize(path) and info["bytes"] >= gib * 2**30:
            return path, info["rows"]
    from aucopt.datasets import atomic_write, dump_svmlight

    os.makedirs(os.path.dirname(path), exist_ok=True)
    rows, start = 0, time.perf_counter()
    with atomic_write(path) as f:
        while f.tell() < gib * 2**30:
            X, y = synth_rcv1.block(rows // synth_rcv1.BLOCK)
            dump_svmlight(X, y, f)
            rows += y.size
            print(f"  writing {path}: {f.tell() / 2**30:.2f} GiB, {rows:,} rows "
                  f"({time.perf_counter() - start:.0f} s)", flush=True)
    with atomic_write(meta) as f:
        f.write(json.dumps({"bytes": os.path.getsize(path), "rows": rows}).encode())
    return path, rows


def _digest(X, y):
    """A digest of a chunk's rows (structure, values, labels)."""
    h = hashlib.sha1()
    for a in (np.diff(X.indptr).astype(np.int64), X.indices.astype(np.int64),
              X.data.astype(np.float64), np.asarray(y, dtype=np.float64)):
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


def child(task, path, n_rows, limit_mib):
    """In a child process: the memory limit, then one task; prints a JSON line."""
    if limit_mib:
        limit = limit_mib * 2**20
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    import aucopt
    from aucopt.datasets import iter_svmlight, load_svmlight

    start = time.perf_counter()
    out = {"task": task}
    if task == "load":
        X, y = load_svmlight(path, n_features=synth_rcv1.N_FEATURES, zero_based=False)
        out["digests"] = [_digest(X[s:s + CHUNK], y[s:s + CHUNK])
                          for s in range(0, y.size, CHUNK)]
        out["rows"] = int(y.size)
    else:
        chunks = iter_svmlight(path, chunk_size=CHUNK, n_features=synth_rcv1.N_FEATURES,
                               zero_based=False)
        model = None if task == "read" else aucopt.get(task, random_state=0)
        digests, rows = [], 0
        for X, y in chunks:
            rows += y.size
            if model is None:
                digests.append(_digest(X, y))
            else:
                model.partial_fit(X, y, classes=[-1.0, 1.0])
        out["rows"] = rows
        out["digests"] = digests
        if model is not None:
            out["auc"] = float(model.score(*_test_set(n_rows)))
    out["seconds"] = time.perf_counter() - start
    out["peak_rss_mb"] = _peak_rss_mb()
    print(json.dumps(out), flush=True)


def _peak_rss_mb():
    """Peak resident set of this process (VmHWM: unlike ru_maxrss, not inherited
    from the parent through exec)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _run_child(task, path, rows, limit_mib):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1")
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", task, path,
                           str(rows), str(limit_mib)], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        return {"task": task, "error": (proc.stderr.strip().splitlines() or ["?"])[-1]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def stream_part(args):
    print(f"streaming file of at least {args.stream_gib} GiB ...", flush=True)
    path, rows = stream_file(args.stream_gib)
    size = os.path.getsize(path)
    print(f"  {path}: {size / 2**30:.2f} GiB, {rows:,} rows; children limited to "
          f"RLIMIT_AS = {args.limit_mib} MiB ({args.limit_mib * 2**20 / size:.2f}x the file)",
          flush=True)
    results = {}
    read = _run_child("read", path, rows, args.limit_mib)
    load = _run_child("load", path, rows, 0)
    if "error" in read or "error" in load:
        print(f"  read: {read.get('error', 'ok')}; load: {load.get('error', 'ok')}")
        return {"iter_svmlight": False}
    same = read["rows"] == load["rows"] and read["digests"] == load["digests"]
    ok = same and read["peak_rss_mb"] < RSS_LIMIT_MB
    results["iter_svmlight"] = ok
    print(f"iter_svmlight: {read['rows']:,} rows in {read['seconds']:.1f} s, peak RSS "
          f"{read['peak_rss_mb']:.0f} MB (limit {RSS_LIMIT_MB}); rows equal to "
          f"load_svmlight's ({load['rows']:,} rows, peak RSS {load['peak_rss_mb']:.0f} MB "
          f"without a limit): {same} -> {'PASS' if ok else 'FAIL'}", flush=True)
    for task in ("opaucr", "psam"):
        fitted = _run_child(task, path, rows, args.limit_mib)
        if "error" in fitted:
            print(f"{task:7s} partial_fit stream under the limit: {fitted['error']}")
            results[f"stream {task}"] = False
            continue
        results[f"stream {task}"] = True
        print(f"{task:7s} partial_fit over {fitted['rows']:,} streamed rows under the limit: "
              f"{fitted['seconds']:.1f} s, peak RSS {fitted['peak_rss_mb']:.0f} MB, test AUC "
              f"{fitted['auc']:.4f}", flush=True)
    return results


def _epochs(text):
    return [e if e == "auto" else int(e) for e in text.split(",")]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=synth_rcv1.N_ROWS,
                    help=f"training rows of the cluster part (default {synth_rcv1.N_ROWS:,})")
    ap.add_argument("--epochs", type=_epochs, default="auto,5,10",
                    help="psam's n_epochs (rounds) to compare, comma-separated integers or "
                         "'auto' (default auto,5,10)")
    ap.add_argument("--tau", type=int, default=50, help="opaucr sketch rank (default 50)")
    ap.add_argument("--stream-gib", type=float, default=2.0,
                    help="size of the streamed file in GiB (default 2)")
    ap.add_argument("--limit-mib", type=int, default=1024,
                    help="RLIMIT_AS of the streaming children in MiB (default 1024)")
    ap.add_argument("--skip-cluster", action="store_true")
    ap.add_argument("--skip-stream", action="store_true")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        task, path, rows, limit = args.child
        child(task, path, int(rows), int(limit))
        return 0
    results = {}
    if not args.skip_cluster:
        results.update(cluster_part(args))
    if not args.skip_stream:
        results.update(stream_part(args))
    print("verdicts: " + ", ".join(f"{k} {'PASS' if v else 'FAIL'}" for k, v in results.items()))
    return 0 if all(results.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
