"""Off-policy estimators of a policy's expected gold label from labelled reference samples.

Everything works on one family's gold set (labels ``y``, log likelihood ratios ``log_w`` =
log pi_new(y|x) - log pi_ref(y|x), and a reward ``s`` of each response), with bootstrap
replicates drawn as count matrices so that thousands of replicates cost a few matrix products:

- SNIPS, the self-normalised importance-sampling mean sum(w y) / sum(w);
- doubly robust (DR): a gold-calibrated outcome model q = a + b s + c log w (the corrected
  reward s, kept within the gold set's range, and the log weight itself) averaged over fresh
  samples of the new policy, plus the SNIPS-weighted mean of the gold residual y - q;
  cross-fitted over folds, so that no gold label both fits q and reports its own residual.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rate.stats import percentile_interval, t_quantile

# Abstention. The ESS of n gold samples cannot exceed about n * exp(-KL(new || ref)) (the chi^2
# divergence that sets the weights' variance is at least the KL), so a policy that has moved far
# has too few effective samples whatever the sample ESS shows: the heavy weights that would pull
# the estimate are most likely absent from the sample, which makes the sample ESS look fine.
# Both floors were chosen on 60 gold sets of the default world's runs (seeds apart from the
# coverage study's): cells with a sample ESS of 8-12 covered the truth 64-69% of the time
# (most at 10-12 had n * exp(-KL) near 10); the cells both floors keep, 94%
# (experiments/RESULTS.md at commit 825f898).
ESS_MIN = 10.0
SUPPORT_MIN = 15.0
LEVEL = 0.95
COUNT_BLOCK = 2**20  # draws counted at once by bootstrap_counts: a few MB of indices and counts


def ess(log_w: np.ndarray) -> float:
    """Kish's effective sample size (sum w)^2 / sum w^2 of importance weights exp(log_w)."""
    w = np.exp(log_w - log_w.max())
    return float(w.sum() ** 2 / (w**2).sum())


def snips(y: np.ndarray, log_w: np.ndarray) -> float:
    """The self-normalised importance-sampling mean of ``y``."""
    w = np.exp(log_w - log_w.max())
    return float((w * y).sum() / w.sum())


def bootstrap_counts(n: int, reps: int, rng: np.random.Generator) -> np.ndarray:
    """(reps, n) multiplicities of n draws with replacement, one row per replicate."""
    idx = rng.integers(0, n, size=(reps, n))
    counts = np.empty((reps, n))
    # Counted a block of rows at a time by one bincount over the block's flattened indices
    # (np.add.at took 1.8 s for 2,000 x 25,600 draws, this 0.3 s; the counts are the same).
    block = max(1, COUNT_BLOCK // max(n, 1))
    for start in range(0, reps, block):
        rows = idx[start : start + block]
        offsets = (np.arange(len(rows)) * n)[:, None]
        counts[start : start + len(rows)] = np.bincount(
            (rows + offsets).ravel(), minlength=rows.size
        ).reshape(rows.shape)
    return counts


def snips_replicates(y: np.ndarray, log_w: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """SNIPS of each bootstrap replicate given by ``counts`` (reps, n)."""
    w = np.exp(log_w - log_w.max())
    den = counts @ w
    with np.errstate(invalid="ignore", divide="ignore"):
        return (counts @ (w * y)) / den


def folds_of(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """A random fold (0..k-1) for each of n samples, as equal in size as possible."""
    return rng.permutation(np.arange(n) % k)


def _least_squares(counts: np.ndarray, design: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per replicate (rows of ``counts``), the least-squares coefficients of y on the columns
    of ``design`` (R, p); the minimum-norm solution where they are collinear."""
    n, p = design.shape
    products = (design[:, :, None] * design[:, None, :]).reshape(n, p * p)
    gram = (counts @ products).reshape(-1, p, p)
    moments = counts @ (design * y[:, None])
    return (np.linalg.pinv(gram, rcond=1e-10, hermitian=True) @ moments[..., None])[..., 0]


def outcome_design(
    covariates: np.ndarray, fresh: np.ndarray, bounded: tuple[int, ...] = (0,)
) -> tuple[np.ndarray, np.ndarray]:
    """The outcome model's design on the gold set and on the fresh samples: an intercept and
    each covariate standardised on the gold set; a covariate constant there (the log weights
    of the reference against itself) is left out, since nothing can be learned of it.

    The covariates in ``bounded`` (by default the first: the corrected reward) are kept within
    their gold range on the fresh samples, so that the model is flat where no gold row stands.
    Why: a wrapper can be wrong in contexts the reference never writes. In the default world
    it subtracts eight single ``pa`` excesses from a response of eight ``pa``, which the RM
    pays less than that; a policy that writes them has fresh corrected rewards far below any
    gold row's (12-21% of dune's samples at kl05-s800, down to -1.9 against the gold's -0.3),
    and the line carried that error into the estimate (-0.086 in dune;
    experiments/RESULTS.md at commit 825f898).
    The log weight is not bounded: its trend is what carries the estimate to where a moved
    policy goes, and bounding it too brought back the low bias at the edge (the same study:
    91.9% coverage, against 94.6% with the reward alone bounded)."""
    x = covariates.reshape(len(covariates), -1)
    xf = fresh.reshape(len(fresh), -1).astype(float, copy=True)
    for c in bounded:
        if c < x.shape[1] and len(x):
            xf[:, c] = np.clip(xf[:, c], x[:, c].min(), x[:, c].max())
    mean, sd = x.mean(0), x.std(0)
    keep = sd > 1e-6
    scale = np.where(keep, sd, 1.0)
    columns = [(x - mean) / scale, (xf - mean) / scale]
    gold, new = (np.column_stack([np.ones(len(c)), c[:, keep]]) for c in columns)
    return gold, new


def dr_replicates(
    y: np.ndarray,
    log_w: np.ndarray,
    covariates: np.ndarray,
    fresh_covariates: np.ndarray,
    folds: np.ndarray,
    counts: np.ndarray,
    fresh_counts: np.ndarray,
    bounded: tuple[int, ...] = (0,),
) -> np.ndarray:
    """The cross-fitted doubly robust estimate of each replicate (``counts`` over the gold set,
    ``fresh_counts`` over the fresh samples; a row of ones each gives the point estimate).

    ``folds`` is one split of the gold set (n,) into folds 0..k-1 for every replicate, or one
    split per replicate (R, n): a bootstrap that draws its split anew for each replicate
    carries the split's own variance into the SE, which one fixed split leaves out.

    The outcome model is linear in ``covariates`` (n,) or (n, k), known on the gold set and on
    the new policy's fresh samples alike: the corrected reward, and the log weight itself
    (:func:`dr_covariates`); those in ``bounded`` are kept within their gold range
    (:func:`outcome_design`)."""
    w = np.exp(log_w - log_w.max())
    gold_x, fresh_x = outcome_design(covariates, fresh_covariates, bounded)
    fresh_mean = (fresh_counts @ fresh_x) / fresh_counts.sum(1, keepdims=True)  # (R, p)
    folds = np.broadcast_to(folds, counts.shape)  # (R, n)
    # The folds present, in order (np.unique hashed all R x n entries: 1.9 s at 2,000 x 25,600;
    # this, 0.03 s).
    top = int(folds.max()) if folds.size else -1
    present = [k for k in range(top + 1) if (folds == k).any()]
    total = np.zeros(counts.shape[0])
    # Two (R, n) buffers serve every fold: at 2,000 x 25,600 each is 410 MB, and fresh arrays
    # of that size come from new pages each time (more system time than arithmetic).
    counts_in, other = np.empty(counts.shape), np.empty(counts.shape)
    for k in present:
        inside = folds == k  # (R, n)
        np.multiply(counts, inside, out=counts_in)
        # Fitted on the other folds (counts are whole numbers, so the difference is exact).
        beta = _least_squares(np.subtract(counts, counts_in, out=other), gold_x, y)  # (R, p)
        cw = np.multiply(counts_in, w, out=other)  # (R, n): the fold's rows, weighted
        # The weighted sum of the fitted values, sum_j cw_rj (x_j . beta_r), as
        # (cw x)_r . beta_r: no (R, n) matrix of fitted values.
        fitted = ((cw @ gold_x) * beta).sum(1)
        with np.errstate(invalid="ignore", divide="ignore"):
            residual = (cw @ y - fitted) / cw.sum(1)
        share = inside.sum(1) / len(y)
        total += share * ((fresh_mean * beta).sum(1) + residual)
    return total


def split_folds(n: int, k: int, splits: int, rng: np.random.Generator) -> np.ndarray:
    """(splits, n): an independent split of n samples into k folds in each row, in the smallest
    integer type that holds k (the same draws as in int64, in an eighth of the memory: 51 MB
    at 2,000 x 25,600)."""
    labels = (np.arange(n) % k).astype(np.min_scalar_type(max(k - 1, 0)))
    return rng.permuted(np.tile(labels, (splits, 1)), axis=1)


def dr_covariates(s: np.ndarray, log_w: np.ndarray) -> np.ndarray:
    """The doubly robust estimate's covariates of each response: its corrected reward and its
    log weight log pi_new(y|x) - log pi_ref(y|x).

    Why the log weight: the corrected reward's calibration line, fitted on reference samples,
    underrates the responses the new policy moved towards (its residual rises with the weight:
    about -0.02 in the lower half of the reference's weights to +0.08-0.19 in their top 0.1%,
    measured at kl 0.1 in the default world), and a gold set of 100 rarely holds the heaviest
    weights, where a tenth of the new policy's mass lies. The weighted residual alone then runs
    low; with the log weight in the model, the fresh samples carry that trend to where the
    policy goes, and the residual corrects what is left."""
    return np.column_stack([s, log_w])


def pooled_half_width(ses: list[float], dfs: list[float], level: float = LEVEL) -> float:
    """The half-width of the interval of a mean of F independent estimates, each with its
    bootstrap SE and its own t degrees of freedom: each SE widened by its own t quantile, then
    summed in quadrature, sqrt(sum (t_f se_f)^2) / F.

    Why not Welch-Satterthwaite's t: its degrees of freedom assume that each SE is right on
    average and only noisy. Here a family's t (ESS - 1 degrees of freedom) stands in for a
    bootstrap SE that runs low on a weighted mean of a few dozen effective samples, a shortfall
    that does not average away over the families (the studentised error's SD is 1.05-1.2 on
    moved policies: experiments/release/README.md)."""
    widened = [t_quantile(level, df) * se for se, df in zip(ses, dfs, strict=True)]
    return float(np.sqrt(np.sum(np.square(widened)))) / len(widened)


@dataclass
class Interval:
    """A point estimate with its interval: a bootstrap percentile interval, or (``t``) the
    point plus or minus Student's t quantile times the bootstrap SE.

    The doubly robust estimate uses the second, with ESS - 1 degrees of freedom: a weighted
    mean of a few dozen effective samples is spread wider than its bootstrap shows (its
    studentised error had an SD of 1.15-1.2 in the calibration sets), and percentile intervals
    covered the truth about 93% of the time against 94-95% for these."""

    estimate: float
    low: float
    high: float

    @classmethod
    def of(cls, point: float, replicates: np.ndarray, level: float = LEVEL) -> Interval:
        r = replicates[np.isfinite(replicates)]
        if len(r) == 0:
            return cls(point, float("nan"), float("nan"))
        return cls(point, *percentile_interval(r, level))

    @classmethod
    def t(cls, point: float, replicates: np.ndarray, df: float, level: float = LEVEL) -> Interval:
        r = replicates[np.isfinite(replicates)]
        if len(r) < 2:
            return cls(point, float("nan"), float("nan"))
        half = t_quantile(level, df) * float(r.std(ddof=1))
        return cls(point, point - half, point + half)

    @classmethod
    def pooled(
        cls, point: float, replicates: list[np.ndarray], dfs: list[float], level: float = LEVEL
    ) -> Interval:
        """The mean of independent estimates (one bootstrap array and t degrees of freedom
        each): the point plus or minus :func:`pooled_half_width`."""
        ses = []
        for r in replicates:
            finite = r[np.isfinite(r)]
            if len(finite) < 2:
                return cls(point, float("nan"), float("nan"))
            ses.append(float(finite.std(ddof=1)))
        half = pooled_half_width(ses, dfs, level)
        return cls(point, point - half, point + half)

    def as_dict(self) -> dict:
        return {k: round(v, 6) for k, v in vars(self).items()}


def abstains(
    ess_value: float, n: int, kl: float, ess_min: float = ESS_MIN, support_min: float = SUPPORT_MIN
) -> str | None:
    """Why the weights cannot support an answer (None when they can)."""
    if ess_value < ess_min:
        return f"ESS {ess_value:.1f} < {ess_min:g}"
    supported = n * np.exp(-max(kl, 0.0))
    if supported < support_min:
        return f"KL {kl:.2f} to the reference: n*exp(-KL) = {supported:.1f} < {support_min:g}"
    return None


# A plan for more gold labels is read at this share: a gold set of the planned size passes a
# family's floors in at least 90% of simulated draws. It looks up to PLAN_MOST times the gold
# set it has.
PLAN_PASS = 0.9
PLAN_MOST = 64


def gold_needed(
    log_w_reference: np.ndarray,
    log_w_policy: np.ndarray,
    kl: float,
    n_now: int,
    rng: np.random.Generator,
    ess_min: float = ESS_MIN,
    support_min: float = SUPPORT_MIN,
    share: float = PLAN_PASS,
    sets: int = 400,
    most: int = PLAN_MOST,
    larger: bool = False,
) -> tuple[int | None, float]:
    """The fewest gold rows per family, on a grid n_now * 2^(k/2) up to ``most`` * n_now, at
    which this family's abstention floors would pass in ``share`` of gold sets; with
    ``larger``, above n_now only. Why: a family that abstains on the gold set at hand needs
    more rows, even where most simulated sets of its size would pass (the default world's
    ridge-R2 abstained on 25,600 rows per family whose plan read 25,600).

    A gold set is reference samples, whose weights w = pi_new / pi_ref are heavy where the new
    policy went and the reference rarely goes: a few thousand reference samples miss that
    tail. So the gold sets are simulated from unlabelled samples of both policies, pooled:
    each is drawn with probability pi_ref / q, q being the pool's mixture, i.e. proportional
    to 1 / (m_ref + m_new * w), which makes the draws reference samples (sampling-importance-
    resampling). ``log_w_reference``, ``log_w_policy``: log w of the family's reference
    samples and of the new policy's. The KL floor n * exp(-KL) >= ``support_min`` is
    arithmetic on ``kl``. No label is read. -> (rows, the share of simulated sets that pass
    both floors there), or (None, that share at the largest size) when no size passes."""
    draw = GoldDraws(log_w_reference, log_w_policy)
    size, passed = n_now, 0.0
    for k in range(int(larger), int(2 * np.log2(most)) + 1):
        size = int(round(n_now * 2 ** (k / 2)))
        passed = draw.pass_share(size, kl, rng, ess_min, support_min, sets)
        if passed >= share:
            return size, passed
    return None, passed


class GoldDraws:
    """Gold sets of any size simulated from unlabelled samples of both policies (see
    :func:`gold_needed`)."""

    def __init__(self, log_w_reference: np.ndarray, log_w_policy: np.ndarray) -> None:
        pooled = np.concatenate([log_w_reference, log_w_policy])
        m_ref, m_new = len(log_w_reference), len(log_w_policy)
        log_p = -np.logaddexp(np.log(m_ref), np.log(m_new) + pooled) if m_new else np.zeros(m_ref)
        self.p = np.exp(log_p - log_p.max())
        self.p /= self.p.sum()
        self.w = np.exp(pooled - pooled.max())

    def pass_share(
        self,
        size: int,
        kl: float,
        rng: np.random.Generator,
        ess_min: float = ESS_MIN,
        support_min: float = SUPPORT_MIN,
        sets: int = 400,
    ) -> float:
        """The share of ``sets`` simulated gold sets of ``size`` rows that pass both floors."""
        if size * np.exp(-max(kl, 0.0)) < support_min:
            return 0.0
        # A set's ESS depends only on how often it drew each pooled sample: (sets, pool)
        # counts, whatever the size.
        counts = rng.multinomial(size, self.p, size=sets)
        with np.errstate(invalid="ignore", divide="ignore"):
            sample_ess = (counts @ self.w) ** 2 / (counts @ self.w**2)
        return float(np.mean(sample_ess >= ess_min))
