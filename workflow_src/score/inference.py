"""The tests a claim's checks are decided by (`workflow_src/report/claims.py`), on the evidence of
`workflow_src/score/evidence.py`. With d the claimed difference (ours(row) - ours(than) + margin,
turned so that d > 0 is the claim; on log values for a `factor`):

- BLEU, perplexity, F1, METEOR (units: test sentences or blocks of test tokens, one set per seed):
  a paired bootstrap over the units (`RESAMPLES`, the draw of sacrebleu's paired bootstrap, the
  same for both rows), nested with a draw of each row's seeds with replacement, so that both the
  test set's and the seeds' variance count; on each resample a row scores the mean over its drawn
  seeds. With one seed it is Koehn's (2004) paired bootstrap, and measures the test set's variance
  only.

      p = (1 + #{resamples: d_r <= 0}) / (1 + R)

- Values (timings over repeats; per-seed numbers: convergence times, distances, accuracies):
  Welch's t on the replicates (a threshold has no variance), one-sided p from Student's t.
- Counts (a layer's parameters): exact, so no test: p = 0 where d holds strictly, 1 where not.

A gap (d of one check less d of another, `claims.gap_outcome`) is decided on the two checks'
bootstrap resamples (units), or by Welch's t on the four cells' variances (values, `difference_by_t`).

A `parity` check (the same within ±parity) is two one-sided tests on the log ratio. Over a claim's
checks, `holm` corrects the reverse tests; `power` is a one-sided test's chance to find a gap.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from workflow_src.paper_records import Check
from workflow_src.score import evidence, meteor, significance
from workflow_src.score.evidence import Cell

ALPHA = 0.05
RESAMPLES = significance.RESAMPLES
UNIT_KINDS = {
    "bleu": "test sentences",
    "perplexity": f"blocks of {evidence.BLOCK_TOKENS} test tokens",
    "f1": "test sentences",
    "meteor": "test sentences",
    "mean": "test sentences",
    "probability": f"blocks of {evidence.BLOCK_TOKENS} test tokens",
}


@dataclasses.dataclass(frozen=True)
class Spread:
    """How d's standard error depends on the runs (seeds or timed repeats) S behind each cell:
    se(S)^2 = fixed + per_run / S. `fixed` is the test set's variance (it does not shrink with more
    seeds); `per_run` the runs' (None: not measured, one run)."""

    fixed: float
    per_run: float | None
    runs: int
    run_kind: str  # "seed" or "timed repeat"

    @classmethod
    def of_bootstrap(cls, d_r: np.ndarray, d_fixed: np.ndarray, seeds: int) -> "Spread":
        """From a bootstrap's d with the seeds redrawn (`d_r`) and held (`d_fixed`): the latter's
        variance is the test set's, the rest the seeds' (unmeasured at one seed). A resample whose
        d is not finite (a ratio with a 0 score) leaves both unmeasured: `se` is then None."""
        if not (np.isfinite(d_r).all() and np.isfinite(d_fixed).all()):
            return cls(math.nan, None, seeds, "seed")
        fixed, total = float(np.var(d_fixed, ddof=1)), float(np.var(d_r, ddof=1))
        return cls(fixed, max(total - fixed, 0.0) * seeds if seeds > 1 else None, seeds, "seed")

    def se(self, runs: int | None = None) -> float | None:
        runs = runs or self.runs
        if math.isnan(self.fixed):
            return None
        if self.per_run is None:
            return math.sqrt(self.fixed) if runs == self.runs else None
        return math.sqrt(self.fixed + self.per_run / runs)


@dataclasses.dataclass(frozen=True)
class Test:
    """A check's test: d on the check's scale (positive: the claim), the one-sided p of the claim
    and of the opposite, and what decided it; a bootstrap's d on each resample (for pooling), with
    the seeds redrawn and with the seeds held."""

    d: float
    p_claim: float
    p_opposite: float
    method: str
    spread: Spread
    resampled: np.ndarray | None = None
    resampled_fixed: np.ndarray | None = None
    # Welch's t: (v, q) with v = sum of var_i / n_i over its cells, q = sum of (var_i / n_i)^2 / (n_i - 1)
    welch: tuple[float, float] | None = None


def score(kind: str, totals: np.ndarray, parameters: dict | None = None) -> np.ndarray:
    """The number a unit kind gives from summed unit statistics (R x k) -> R; METEOR (in %) with
    its cell's `parameters` (`meteor.meteor_score` of `meteor.vector_statistics`)."""
    if kind == "bleu":
        return bleu_scores(totals)
    if kind == "perplexity":
        return np.exp(totals[:, 0] / totals[:, 1])
    if kind == "f1":
        return np.divide(
            2 * totals[:, 0],
            totals[:, 1] + totals[:, 2],
            out=np.zeros(len(totals)),
            where=totals[:, 1] + totals[:, 2] > 0,
        )
    if kind == "meteor":
        p = meteor.MeteorParameters(**{**parameters, "weights": tuple(parameters["weights"])})
        return np.array([100 * meteor.meteor_score(meteor.vector_statistics(t), p)["score"] for t in totals])
    if kind in ("mean", "probability"):
        return totals[:, 0] / totals[:, 1]
    raise ValueError(f"no unit score for kind {kind!r}")


def bleu_scores(totals: np.ndarray) -> np.ndarray:
    """sacrebleu's corpus BLEU (its defaults: 4-grams, "exp" smoothing) of each row of summed
    statistics (R x 10: lengths, matches, totals), for all rows at once:

        BLEU = BP exp(mean_n log p_n),  p_n = 100 m_n / t_n, or 100 / (2^k t_n) for the k-th order with no match,
        BP = exp(1 - ref / sys) where sys < ref (0 where sys = 0),

    and 0 where no n-gram matches or an order has no n-grams (sacrebleu's log of 0)."""
    totals = np.asarray(totals, dtype=float)
    sys_len, ref_len, matches, counts = totals[:, 0], totals[:, 1], totals[:, 2:6], totals[:, 6:10]
    with np.errstate(divide="ignore", invalid="ignore"):
        brevity = np.where(sys_len < ref_len, np.where(sys_len > 0, np.exp(1 - ref_len / sys_len), 0.0), 1.0)
        unmatched = np.cumsum(matches == 0, axis=1)
        precisions = np.where(matches > 0, 100 * matches / counts, 100 / (2.0**unmatched * counts))
        scores = brevity * np.exp(np.log(precisions).mean(axis=1))
    return np.where((matches.sum(axis=1) > 0) & (counts > 0).all(axis=1), scores, 0.0)


def draw_counts(units: int, resamples: int = RESAMPLES) -> np.ndarray:
    """R x n: how often each unit is drawn on each resample (sacrebleu's draw)."""
    indices = significance.resample_indices(units, resamples) + units * np.arange(resamples)[:, None]
    return np.bincount(indices.ravel(), minlength=resamples * units).reshape(resamples, units).astype(float)


def seed_scores(cell: Cell, counts: np.ndarray) -> np.ndarray:
    """R x S: each seed's number on each resample of the units (the all-ones row: the observed)."""
    return np.stack(
        [score(cell.kind, counts @ np.asarray(units, dtype=float), cell.parameters) for units in cell.replicates],
        axis=1,
    )


def redraw_seeds(per_seed: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """R: the mean over a draw (with replacement) of the seeds' numbers (R x S), on each resample."""
    draw = rng.integers(per_seed.shape[1], size=per_seed.shape)
    return np.take_along_axis(per_seed, draw, axis=1).mean(axis=1)


def observed(cell: Cell) -> float:
    if cell.kind in ("value", "count"):
        return float(np.mean(cell.replicates))
    return float(seed_scores(cell, np.ones((1, len(cell.replicates[0])))).mean())


def on_scale(check: Check, values):
    """Ratios (a factor, a parity) are compared as logs, everything else as it is. A resample on
    which a score is 0 gives -inf (the ratio 0 or infinite), and one on which both are 0 gives NaN in
    `difference`: `resample_p` counts that resample against both sides."""
    if check.factor is None and check.parity is None:
        return np.asarray(values, dtype=float)
    with np.errstate(divide="ignore"):
        return np.log(values)


def difference(check: Check, a, b):
    """d on the check's scale (`on_scale`), positive in the claim's direction; a parity check's is
    the log ratio itself."""
    with np.errstate(invalid="ignore"):  # -inf - -inf: no ratio on that resample (`on_scale`)
        if check.parity is not None:
            return a - b
        sign = -1 if check.lower_is_better else 1
        if check.factor is not None:
            return sign * (a - b - math.log(check.factor))
    return sign * (a - b) + check.margin


def resample_p(holds: np.ndarray) -> float:
    """p = (1 + #{resamples on which the claim does not hold}) / (1 + R); a NaN d (no ratio on that
    resample, `on_scale`) holds nothing, so it counts against every side."""
    return float((1 + np.sum(~holds)) / (1 + len(holds)))


def parity_ps(check: Check, d_r: np.ndarray) -> tuple[float, float]:
    """(p of being inside ±parity, p of being outside) of a parity check's resampled log ratios."""
    bound = math.log(1 + check.parity)
    return (
        max(resample_p(d_r < bound), resample_p(d_r > -bound)),
        min(resample_p(d_r > bound), resample_p(d_r < -bound)),
    )


def run_kind(cell: Cell) -> str:
    if cell.kind == "count":
        return "count"
    return "timed repeat" if cell.labels and cell.labels[0].startswith("repeat") else "seed"


def by_bootstrap(check: Check, a: Cell, b: Cell | None) -> Test:
    """The nested paired bootstrap (module docstring); a parity check's p are those of being
    inside, and of being outside, its bounds."""
    if b is not None and len(a.replicates[0]) != len(b.replicates[0]):
        raise ValueError(
            f"{check.artefact}: {check.row} and {check.compared_name} were scored on different units "
            f"({len(a.replicates[0])} and {len(b.replicates[0])})"
        )
    units = len(a.replicates[0])
    counts = draw_counts(units)
    rng = np.random.default_rng(2019)
    per_seed_a = seed_scores(a, counts)
    a_r = redraw_seeds(per_seed_a, rng)
    if b is not None:
        per_seed_b = seed_scores(b, counts)
        b_r, b_fixed = redraw_seeds(per_seed_b, rng), per_seed_b.mean(axis=1)
    else:
        b_r = b_fixed = np.full(RESAMPLES, check.threshold)
    reference = observed(b) if b is not None else check.threshold
    d = float(difference(check, on_scale(check, observed(a)), on_scale(check, reference)))
    d_r = difference(check, on_scale(check, a_r), on_scale(check, b_r))
    d_fixed = difference(check, on_scale(check, per_seed_a.mean(axis=1)), on_scale(check, b_fixed))
    seeds = min(len(a.replicates), len(b.replicates) if b is not None else len(a.replicates))
    seeds_too = ", seeds resampled too" if max(len(a.replicates), len(b.replicates) if b else 1) > 1 else ""
    method = (
        f"paired bootstrap over the {units} {UNIT_KINDS[a.kind]}{seeds_too} ({RESAMPLES} resamples; {runs_of(a, b)})"
    )
    spread = Spread.of_bootstrap(d_r, d_fixed, seeds)
    p_claim, p_opposite = (
        parity_ps(check, d_r) if check.parity is not None else (resample_p(d_r > 0), resample_p(d_r < 0))
    )
    return Test(d, p_claim, p_opposite, method, spread, d_r, d_fixed)


def one_sided_p(excess: float, se: float, df: float) -> float:
    """p of "the true difference exceeds 0", given the estimate `excess` with standard error `se`."""
    if se == 0:
        return 0.0 if excess > 0 else 1.0
    from scipy import stats  # here, not at the top: the workflow's DAG imports this module

    return float(stats.t.sf(excess / se, df))


def by_t(check: Check, a: Cell, b: Cell | None) -> Test | str:
    """Welch's t on the replicates (on the check's scale), or the reason there is no spread to
    decide by."""
    values_a = on_scale(check, a.replicates)
    values_b = on_scale(check, b.replicates) if b is not None else None
    for cell, values in ((a, values_a), (b, values_b)):
        if values is not None and len(values) < 2:
            return f"only one run of {cell.row} ({', '.join(cell.labels)}): no spread to decide by"
    var_a = np.var(values_a, ddof=1) / len(values_a)
    var_b = np.var(values_b, ddof=1) / len(values_b) if values_b is not None else 0.0
    se = math.sqrt(var_a + var_b)
    q = var_a**2 / (len(values_a) - 1) + (var_b**2 / (len(values_b) - 1) if values_b is not None else 0.0)
    if values_b is None:
        df, method = len(values_a) - 1, f"t-test of {runs_of(a, b)} against the threshold"
    else:
        df = len(values_a) + len(values_b) - 2 if se == 0 else welch_df(var_a + var_b, q)
        method = f"t-test (Welch's) over {runs_of(a, b)}"
    reference = np.mean(values_b) if values_b is not None else on_scale(check, check.threshold)
    d = float(difference(check, np.mean(values_a), reference))
    n = min(len(values_a), len(values_b) if values_b is not None else len(values_a))
    spread = Spread(0.0, se**2 * n, n, run_kind(a))
    if check.parity is not None:
        bound = math.log(1 + check.parity)
        inside = max(one_sided_p(d + bound, se, df), one_sided_p(bound - d, se, df))
        outside = min(one_sided_p(d - bound, se, df), one_sided_p(-bound - d, se, df))
        return Test(d, inside, outside, method, spread)
    welch = (float(var_a + var_b), float(q))
    return Test(d, one_sided_p(d, se, df), one_sided_p(-d, se, df), method, spread, welch=welch)


def welch_df(v: float, q: float) -> float:
    """Welch-Satterthwaite degrees of freedom, v^2 / q (`Test.welch`)."""
    return v**2 / q


def difference_by_t(wider: Test, narrower: Test) -> Test:
    """Welch's t of d_wider - d_narrower, two t-tests' differences over independent cells:
    variance v_w + v_n, degrees of freedom (v_w + v_n)^2 / (q_w + q_n)."""
    v, q = wider.welch[0] + narrower.welch[0], wider.welch[1] + narrower.welch[1]
    d, se = wider.d - narrower.d, math.sqrt(v)
    df = welch_df(v, q) if q > 0 else 1.0
    runs = min(wider.spread.runs, narrower.spread.runs)
    method = f"t-test (Welch's) of the difference of the two d ({wider.method}; {narrower.method})"
    return Test(
        d,
        one_sided_p(d, se, df),
        one_sided_p(-d, se, df),
        method,
        Spread(0.0, v * runs, runs, wider.spread.run_kind),
        welch=(v, q),
    )


def by_count(check: Check, a: Cell, b: Cell | None) -> Test:
    """Exact counts: d itself decides, p_claim = 0 where d > 0 (else 1), p_opposite = 0 where
    d < 0 (else 1); their spread is none. A d within float rounding of 0 is on the bar."""
    reference = observed(b) if b is not None else check.threshold
    d = float(difference(check, on_scale(check, observed(a)), on_scale(check, reference)))
    d = 0.0 if abs(d) < 1e-12 else d
    return Test(d, float(d <= 0), float(d >= 0), "exact counts, no spread", Spread(0.0, 0.0, 1, "count"))


def runs(cell: Cell) -> str:
    """How many runs a cell's numbers come from, in words: "3 seeds", "5 timed repeats", "counted"."""
    if cell.kind == "count":
        return "counted"
    return f"{len(cell.replicates)} {run_kind(cell)}{'s' if len(cell.replicates) > 1 else ''}"


def runs_of(a: Cell, b: Cell | None) -> str:
    """The runs of a check's two cells (or its one), in words: "3 seeds each", "2 seeds and 3 seeds"."""
    if b is None:
        return runs(a)
    return f"{runs(a)} each" if runs(a) == runs(b) else f"{runs(a)} and {runs(b)}"


def holm(p_values: list[float], alpha: float = ALPHA) -> list[bool]:
    """Holm's step-down correction: which of the hypotheses are rejected at family-wise level
    alpha. In ascending order, p_(i) is rejected while p_(j) < alpha / (m - j + 1) for every j <= i."""
    order = sorted(range(len(p_values)), key=lambda i: p_values[i])
    rejected = [False] * len(p_values)
    for rank, i in enumerate(order):
        if p_values[i] >= alpha / (len(p_values) - rank):
            break
        rejected[i] = True
    return rejected


def power(gap: float, se: float | None) -> float | None:
    """The chance that a one-sided test at ALPHA finds a true difference `gap` whose estimate has
    standard error `se` (normal approximation)."""
    if se is None:
        return None
    if se == 0:
        return 1.0 if gap > 0 else 0.0
    from scipy import stats

    return float(stats.norm.cdf(gap / se - stats.norm.ppf(1 - ALPHA)))
