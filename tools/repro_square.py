"""Reproductions for the square-loss family (issue 5): O Table 2, N Tables 4.2, 5.2, 6.3/6.4.
O = Gao, Jin, Zhu & Zhou, One-Pass AUC Optimization, 2013; N = Natole, PhD thesis on
stochastic AUC maximization (SUNY Albany).

Only the datasets the project holds (SOURCES.md) are run; names are mapped to
the papers' (pima_diabetes = diabetes, german = german.numer_scale,
ijcnn1_val = the 14,990-row validation part of ijcnn1, flagged). Protocols
(the papers' experiment sections):

* ``opauc_table2`` (O Table 2): features scaled to [-1, 1] (min-max over the pooled
  set), 5 trials x 5-fold CV = 25 runs, training rows in random order (one-pass
  learners), ``eta``/``lam`` chosen by 5-fold CV on the training part. The paper's
  grid is eta in 2^[-12:10] x lam in 2^[-10:2] (299 points x 5 folds per run); we use
  eta in 2^[-12:10:2] x lam in 2^[-10:2:4] (48 points; ``--quick``: eta in
  {2^-8, 2^-4, 2^0}, lam = 2^-10, 3-fold inner CV, 1 trial). OPAUC and online
  Uni-Exp (O's baseline column).
* ``spam_table42`` (N Table 4.2): features scaled to [-1, 1], then rows normalised
  to unit length (centred first for the larger sets: N Sec. 3.5's garbled formula read as
  ``(x - mean)/||x||``), 80/20 splits, 20 runs; SPAM-L2 ``lam`` in 10^[-5:1],
  SPAM-NET ``lam1`` in 10^[-5:1] with SPAM-L2's ``lam`` (N does not report SPAM-NET's L2
  weight), regSOLAM
  ``eta`` (zeta) in {1:9:100} x ``lam`` in 10^[-5:1]; 5-fold inner CV (3 with --quick).
* ``spdam_table52`` (N Table 5.2 / 6.3 / 6.4): SPDAM ``lam`` in 10^[-5:1], batch 10%,
  80/20 splits, 20 runs (N Table 5.2 gives no run count; 6.3 says 25).

Every learner is run with the defaults of ``aucopt.learners.square`` apart from
the tuned parameters.
"""

import numpy as np

import aucopt
from aucopt.datasets import Scaler
from aucopt.metrics import roc_auc
from aucopt.model_selection import stratified_folds
from reprolib import experiment, mean_std, tuned
from tasks import load_pooled

# our task -> (paper name, note)
O_TABLE2 = {  # O Table 2: (OPAUC, online Uni-Exp) mean, std
    "pima_diabetes": ("diabetes", (.8309, .0350), (.8215, .0309)),
    "german": ("german", (.7978, .0347), (.7908, .0367)),
    "magic04": ("magic04", (.8383, .0077), (.8354, .0099)),
    "a9a": ("a9a", (.9002, .0047), (.9005, .0024)),
    "w8a": ("w8a", (.9633, .0035), (.7693, .0986)),
    "ijcnn1_val": ("ijcnn1 (val part)", (.9269, .0021), (.9264, .0035)),
}
N_TABLE42 = {  # N Table 4.2: SPAM-L2, SPAM-NET, regSOLAM
    "pima_diabetes": ("diabetes", (.8272, .0277), (.8085, .0431), (.8128, .0304)),
    "german": ("german", (.7942, .0388), (.7937, .0386), (.7778, .0373)),
    "a9a": ("a9a", (.8998, .0046), (.8980, .0047), (.8966, .0043)),
    "ijcnn1_val": ("ijcnn1 (val part)", (.9174, .0024), (.9155, .0024), (.9129, .0030)),
}
N_SPDAM = {  # N Table 5.2 (SPDAM, regSOLAM) or 6.3 / 6.4 (SPDAM, regSOLAM) where 5.2 lacks the set
    "pima_diabetes": ("diabetes", (.8275, .0302), (.8140, .0330)),
    "german": ("german", (.7959, .0265), (.7830, .0247)),
    "a9a": ("a9a", (.8967, .0032), (.8970, .0048)),
    "ijcnn1_val": ("ijcnn1 (val part)", (.9132, .0016), (.9108, .0030)),
    "ionosphere": ("ionosphere (6.3)", (.9292, .0364), (.8821, .0400)),
    "spambase": ("spambase (6.4)", (.7716, .0277), (.7295, .0268)),
}
LARGE = {"a9a", "ijcnn1_val", "w8a", "magic04"}


def _minmax(X):
    return Scaler("minmax").fit_transform(X.toarray())


def _unit_rows(X, centre):
    X = _minmax(X)  # the LIBSVM "_scale" versions N's sets come in, then N's normalisation
    if centre:
        X = Scaler("center").fit_transform(X)
    return Scaler("l2").fit_transform(X)


def _splits(n, y, runs, seed, scheme):
    """(train, test) index pairs: 5-fold trials or 80/20 random splits."""
    if scheme == "kfold":
        yield from stratified_folds(y, 5, max(1, runs // 5), random_state=seed)
        return
    rng = np.random.default_rng(seed)
    for _ in range(runs):
        perm = rng.permutation(n)
        cut = int(0.8 * n)
        yield np.sort(perm[:cut]), np.sort(perm[cut:])


def _run(X, y, learners, runs, seed, scheme, folds, log):
    """Mean/std test AUC per learner; hyper-parameters tuned per run on the training part.

    ``learners``: name -> (make(**params), grid). Training rows are shuffled per run.
    """
    rng = np.random.default_rng(seed + 1)
    aucs = {name: [] for name in learners}
    chosen = {name: [] for name in learners}
    for k, (tr, te) in enumerate(_splits(X.shape[0], y, runs, seed, scheme)):
        tr = rng.permutation(tr)
        for name, (make, grid) in learners.items():
            params = tuned(make, grid, X[tr], y[tr], n_folds=folds, seed=seed + k)
            model = make(**params).fit(X[tr], y[tr])
            aucs[name].append(roc_auc(y[te], model.decision_function(X[te])))
            chosen[name].append(params)
        log(f"    run {k + 1}: " + ", ".join(f"{n} {a[-1]:.4f}" for n, a in aucs.items()))
    return {n: (mean_std(a), chosen[n]) for n, a in aucs.items()}


def _fmt_params(chosen):
    keys = chosen[0].keys()
    return ", ".join(f"{k}~{np.median([c[k] for c in chosen]):.3g}" for k in keys)


def _log(msg):
    print(msg, flush=True)


@experiment("opauc_table2", "O Table 2: OPAUC and online Uni-Exp, [-1,1] scaling, 5x5-fold CV")
def opauc_table2(args):
    runs = args.runs or (5 if args.quick else 25)
    if args.quick:
        etas, lams, folds = [2.0 ** -8, 2.0 ** -4, 1.0], [2.0 ** -10], 3
    else:
        etas, lams, folds = [2.0 ** k for k in range(-12, 11, 2)], [2.0 ** k for k in (-10, -6, -2, 2)], 5
    learners = {
        "opauc": (lambda **p: aucopt.get("opauc", **p), {"eta": etas, "lam": lams}),
        "uni_exp": (lambda **p: aucopt.get("uni_exp", **p), {"eta": etas}),
    }
    rows = []
    for task, (paper_name, p_opauc, p_uni) in O_TABLE2.items():
        X, y = load_pooled(task)
        X = _minmax(X)
        _log(f"  {paper_name}: n={X.shape[0]} d={X.shape[1]}")
        res = _run(X, y, learners, runs, args.seed, "kfold", folds, _log)
        for name, paper in (("opauc", p_opauc), ("uni_exp", p_uni)):
            (mean, std), chosen = res[name]
            rows.append({"dataset": paper_name, "learner": name, "ours": (mean, std),
                         "paper": paper, "runs": runs, "params": _fmt_params(chosen)})
    return rows


def _n_learners(quick, with_spdam):
    lams = [10.0 ** k for k in range(-5, 2)]
    zetas = [1.0, 10.0, 19.0, 46.0, 100.0] if not quick else [1.0, 10.0, 100.0]
    if quick:
        lams = [1e-5, 1e-3, 1e-1]
    learners = {
        "regsolam": (lambda **p: aucopt.get("solam", **p), {"eta": zetas, "lam": lams}),
    }
    if with_spdam:
        learners["spdam"] = (lambda **p: aucopt.get("spdam", random_state=0, **p),
                             {"lam": lams})
    else:
        learners["spam_l2"] = (lambda **p: aucopt.get("spam", random_state=0, **p),
                               {"lam": lams})
    return learners


def _n_prepare(task):
    X, y = load_pooled(task)
    return _unit_rows(X, centre=task in LARGE), y


@experiment("spam_table42", "N Table 4.2: SPAM-L2, SPAM-NET, regSOLAM, unit rows, 80/20 x 20")
def spam_table42(args):
    runs = args.runs or (3 if args.quick else 20)
    folds = 3 if args.quick else 5
    rows = []
    for task, (paper_name, p_l2, p_net, p_sol) in N_TABLE42.items():
        X, y = _n_prepare(task)
        _log(f"  {paper_name}: n={X.shape[0]} d={X.shape[1]}")
        learners = _n_learners(args.quick, with_spdam=False)
        res = _run(X, y, learners, runs, args.seed, "split", folds, _log)
        # SPAM-NET: lam1 tuned with the median SPAM-L2 lam (N reports no L2 weight for it)
        lam = float(np.median([c["lam"] for c in res["spam_l2"][1]]))
        l1s = [1e-5, 1e-3, 1e-1] if args.quick else [10.0 ** k for k in range(-5, 2)]
        net = {"spam_net": (lambda **p: aucopt.get("spam", penalty="elasticnet", lam=lam,
                                                   random_state=0, **p), {"lam1": l1s})}
        res.update(_run(X, y, net, runs, args.seed, "split", folds, _log))
        for name, paper in (("spam_l2", p_l2), ("spam_net", p_net), ("regsolam", p_sol)):
            (mean, std), chosen = res[name]
            rows.append({"dataset": paper_name, "learner": name, "ours": (mean, std),
                         "paper": paper, "runs": runs, "params": _fmt_params(chosen)})
    return rows


@experiment("spdam_table52", "N Tables 5.2/6.3/6.4: SPDAM and regSOLAM, unit rows, 80/20 x 20")
def spdam_table52(args):
    runs = args.runs or (3 if args.quick else 20)
    folds = 3 if args.quick else 5
    rows = []
    for task, (paper_name, p_spdam, p_sol) in N_SPDAM.items():
        X, y = _n_prepare(task)
        _log(f"  {paper_name}: n={X.shape[0]} d={X.shape[1]}")
        res = _run(X, y, _n_learners(args.quick, with_spdam=True), runs, args.seed, "split",
                   folds, _log)
        for name, paper in (("spdam", p_spdam), ("regsolam", p_sol)):
            (mean, std), chosen = res[name]
            rows.append({"dataset": paper_name, "learner": name, "ours": (mean, std),
                         "paper": paper, "runs": runs, "params": _fmt_params(chosen)})
    return rows
