#!/usr/bin/env python3
"""tools/interval_methods.py — leave-one-source-out (LOSO) coverage of candidate 80% prediction intervals for
the tokens/s/GPU error of a run from a source the models have not seen (issue 37, branch pi17).

Reads `fsdpx validate FILE --format json` reports and, for each file, scores each method as fsdpx does
(simulator/prediction_interval.cpp): every source's runs against the band drawn from the other sources only; a run
with an unsure input (error_range_pct) counts when its error range meets the band. Methods:
  pooled     10th-90th percentile of the other sources' pooled errors (Hyndman & Fan def. 7): what ships today
  shift      equal-weight source means plus the pooled within-source residuals (an empirical random-effects
             model: Davison & Hinkley 1997, Bootstrap Methods, sec. 3.8)
  stratified the same percentiles of the equal-weight mixture of the other sources' empirical distributions
             (each source counts once, not by its run count)
  re-dl      random-effects predictive interval for one run of a new source (Higgins, Thompson & Spiegelhalter
             2009, J. R. Stat. Soc. A 172(1):137-159, sec. 3.5): mu +/- t_{k-2,0.9} sqrt(tau^2 + SE(mu)^2 +
             sigma_w^2), tau^2 by DerSimonian & Laird (1986), sigma_w^2 the pooled within-source variance
  re-reml    the same with tau^2 by REML
  re-dl-noSE, re-dl-z  variants (without SE(mu)^2 as the brief writes it; with the normal quantile instead of t)
Pure Python (no numpy on the helper VM).  Usage: interval_methods.py [--simulate=N] [--log] REPORT.json [...]
(--log: bands on 100 ln(predicted / measured), printed on that scale)
"""
import bisect
import json
import math
import random
import sys


def quantile7(xs, q):
    xs = sorted(xs)
    h = (len(xs) - 1) * q
    lo = math.floor(h)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (h - lo) * (xs[hi] - xs[lo])


def t_cdf_abs(t, nu):
    """A(t|nu) = P(|T| < t) for integer nu (Abramowitz & Stegun 26.7.3 and 26.7.4)."""
    th = math.atan(t / math.sqrt(nu))
    c, s = math.cos(th), math.sin(th)
    if nu % 2 == 1:
        if nu == 1:
            return 2 * th / math.pi
        term, acc = c, c
        for k in range(3, nu - 1, 2):  # terms cos^k with coefficients 2*4*../(1*3*..)
            term *= c * c * (k - 1) / k
            acc += term
        return 2 / math.pi * (th + s * acc)
    term, acc = 1.0, 1.0
    for k in range(2, nu - 1, 2):
        term *= c * c * (k - 1) / k
        acc += term
    return s * acc


def t_quantile(p, nu):
    target = 2 * p - 1  # P(|T| < t) for the upper quantile p > 0.5
    lo, hi = 0.0, 1e6
    for _ in range(200):
        mid = (lo + hi) / 2
        if t_cdf_abs(mid, nu) < target:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


Z90 = 1.2815515655446004


def mixture_quantile(groups, q):
    """Quantile of the equal-weight mixture of each group's def-7 (piecewise-linear) empirical distribution."""
    def cdf_one(xs, x):
        n = len(xs)
        if x < xs[0]:
            return 0.0
        if x >= xs[-1]:
            return 1.0
        i = bisect.bisect_right(xs, x) - 1  # xs[i] <= x < xs[i + 1]
        return (i + (x - xs[i]) / (xs[i + 1] - xs[i])) / (n - 1)
    gs = [sorted(g) for g in groups]
    lo = min(g[0] for g in gs) - 1
    hi = max(g[-1] for g in gs) + 1
    for _ in range(200):
        mid = (lo + hi) / 2
        if sum(cdf_one(g, mid) for g in gs) / len(gs) < q:
            lo = mid
        else:
            hi = mid
    return hi


def shift_quantile(groups, q):
    """Empirical random effects: a source mean drawn with equal weight plus a residual drawn from the pooled
    within-source residuals (every (mean, residual) pair, each source's pairs weighted 1/k)."""
    means = [sum(g) / len(g) for g in groups]
    res = [x - m for g, m in zip(groups, means) for x in g]
    return mixture_quantile([[m + r for r in res] for m in means], q)


def within_var(groups):
    ss = sum(sum((x - sum(g) / len(g)) ** 2 for x in g) for g in groups)
    dof = sum(len(g) - 1 for g in groups)
    return ss / dof


def re_fit(groups, reml):
    k = len(groups)
    s2 = within_var(groups)
    y = [sum(g) / len(g) for g in groups]
    v = [s2 / len(g) for g in groups]
    w = [1 / vi for vi in v]
    mu_f = sum(wi * yi for wi, yi in zip(w, y)) / sum(w)
    q = sum(wi * (yi - mu_f) ** 2 for wi, yi in zip(w, y))
    tau2 = max(0.0, (q - (k - 1)) / (sum(w) - sum(wi * wi for wi in w) / sum(w)))  # DerSimonian & Laird
    if reml:
        for _ in range(500):
            ws = [1 / (vi + tau2) for vi in v]
            mu = sum(wi * yi for wi, yi in zip(ws, y)) / sum(ws)
            new = sum(wi * wi * ((yi - mu) ** 2 - vi) for wi, yi, vi in zip(ws, y, v)) / sum(wi * wi for wi in ws) \
                + 1 / sum(ws)
            new = max(0.0, new)
            if abs(new - tau2) < 1e-12:
                tau2 = new
                break
            tau2 = new
    ws = [1 / (vi + tau2) for vi in v]
    mu = sum(wi * yi for wi, yi in zip(ws, y)) / sum(ws)
    se2 = 1 / sum(ws)
    return mu, tau2, se2, s2


def band(method, groups):
    allx = [x for g in groups for x in g]
    if method == "pooled":
        return quantile7(allx, 0.1), quantile7(allx, 0.9)
    if method == "stratified":
        return mixture_quantile(groups, 0.1), mixture_quantile(groups, 0.9)
    if method == "shift":
        return shift_quantile(groups, 0.1), shift_quantile(groups, 0.9)
    k = len(groups)
    mu, tau2, se2, s2 = re_fit(groups, reml=method.startswith("re-reml"))
    if method.endswith("-z"):
        mult = Z90
    else:
        if k < 3:
            return None
        mult = t_quantile(0.9, k - 2)
    var = tau2 + s2 + (0 if method.endswith("noSE") else se2)
    half = mult * math.sqrt(var)
    return mu - half, mu + half


METHODS = ["pooled", "stratified", "shift", "re-dl", "re-reml", "re-dl-noSE", "re-dl-z", "re-reml-z"]


def load(path, log=False):
    """Per source: (error, low, high) of each run with a tokens/s error; with log, 100 ln(1 + e / 100) (the log of
    predicted / measured, symmetric in over- and under-prediction; monotone, so coverage is the same either way)."""
    rep = json.load(open(path))
    f = (lambda e: 100 * math.log1p(e / 100)) if log else (lambda e: e)
    by = {}
    for c in rep["cases"]:
        e = c["error_pct"]["tokens_per_s_per_gpu"]
        if e is None:
            continue
        rng = c.get("error_range_pct", {}).get("tokens_per_s_per_gpu", [e, e])
        by.setdefault(c["source"], []).append((f(e), f(rng[0]), f(rng[1])))
    loso = rep["interval"]["leave_one_source_out"]
    return rep["file"], by, (loso["covered"], loso["runs"])


def score(by, method):
    out, cov, runs = {}, 0, 0
    for s in by:
        others = [[e for e, _, _ in by[o]] for o in by if o != s]
        if not others:
            continue
        b = band(method, others)
        if b is None:
            out[s] = None
            continue
        c = sum(1 for _, lo, hi in by[s] if hi >= b[0] and lo <= b[1])
        out[s] = (c, len(by[s]), b)
        cov += c
        runs += len(by[s])
    return cov, runs, out


def simulate(by, reps, seed=1):
    """LOSO coverage of each method on data drawn from the random-effects model fitted (DerSimonian-Laird) to
    the file, with the file's source sizes: how far LOSO coverage scatters when only this many sources exist."""
    rnd = random.Random(seed)
    sizes = [len(v) for v in by.values()]
    mu, tau2, _, s2 = re_fit([[e for e, _, _ in v] for v in by.values()], False)
    print(f"   simulated from mu {mu:+.2f} tau {math.sqrt(tau2):.2f} sigma_w {math.sqrt(s2):.2f}, sizes {sizes}, "
          f"{reps} replicates: LOSO coverage mean [10th, 90th percentile]")
    for m in ["pooled", "stratified", "shift", "re-dl", "re-dl-z"]:
        covs = []
        for _ in range(reps):
            fake = {}
            for i, n in enumerate(sizes):
                u = rnd.gauss(mu, math.sqrt(tau2))
                fake[str(i)] = [(e, e, e) for e in (u + rnd.gauss(0, math.sqrt(s2)) for _ in range(n))]
            cov, runs, per = score(fake, m)
            if any(v is None for v in per.values()):
                break
            covs.append(100 * cov / runs)
        if covs:
            print(f"  {m:11s} {sum(covs)/len(covs):5.1f}% [{quantile7(covs, 0.1):.1f}, {quantile7(covs, 0.9):.1f}]")


def check_t_quantiles():
    # Student t 90% and 97.5% points, Abramowitz & Stegun table 26.10 (nu = 1, 2, 3, 10).
    for nu, p, t in [(1, .9, 3.078), (2, .9, 1.886), (3, .9, 1.638), (10, .9, 1.372), (2, .975, 4.303)]:
        assert abs(t_quantile(p, nu) - t) < 1e-3, (nu, p, t_quantile(p, nu))


def main():
    check_t_quantiles()
    args = sys.argv[1:]
    reps, log = 0, False
    while args and args[0].startswith("--"):
        opt = args.pop(0)
        if opt.startswith("--simulate="):
            reps = int(opt.split("=")[1])
        elif opt == "--log":
            log = True
        else:
            sys.exit(f"unknown option {opt}")
    for path in args:
        name, by, shipped = load(path, log)
        pooled = score(by, "pooled")[:2]
        if pooled != shipped:  # the pooled method must be fsdpx's own (simulator/prediction_interval.cpp)
            sys.exit(f"{path}: pooled LOSO {pooled} is not fsdpx's {shipped}")
        groups = [[e for e, _, _ in v] for v in by.values()]
        print(f"== {name}: {sum(map(len, groups))} runs, sources " +
              ", ".join(f"{s} {len(v)} (mean {sum(e for e,_,_ in v)/len(v):+.1f})" for s, v in by.items()))
        mu, tau2, se2, s2 = re_fit(groups, False)
        print(f"   DL all: mu {mu:+.2f} tau {math.sqrt(tau2):.2f} se {math.sqrt(se2):.2f} sigma_w {math.sqrt(s2):.2f}")
        for m in METHODS:
            b = band(m, groups) if (len(groups) >= 3 or not m.startswith("re") or m.endswith("-z")) else None
            cov, runs, per = score(by, m)
            ball = f"{b[0]:+.1f}..{b[1]:+.1f}" if b else "n/a"
            pct = f"{100*cov/runs:.1f}% ({cov}/{runs})" if runs and all(v is not None for v in per.values()) else \
                "n/a (k-2 < 1 with a source held out)"
            parts = "; ".join(f"{s} {v[0]}/{v[1]} in {v[2][0]:+.1f}..{v[2][1]:+.1f}" if v else f"{s} n/a"
                              for s, v in per.items())
            print(f"  {m:11s} band(all) {ball:14s} LOSO {pct}\n      {parts}")
        if reps:
            simulate(by, reps)


if __name__ == "__main__":
    main()
