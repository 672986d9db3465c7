"""Where KL-regularised RL is heading, forecast from gold labels by reweighting.

The optimum of E[r] - beta * KL(pi || pi_ref) is pi_beta ~ pi_ref * exp(r / beta). Gold rows are
responses sampled from pi_ref with an expert label, so self-normalised importance weights
w_i = exp(r_i / beta) turn their labels into an estimate of pi_beta's true quality:

    forecast = sum_i w_i y_i / sum_i w_i,   change = forecast - mean_i y_i,

with Kish's effective sample size ESS = (sum w)^2 / sum w^2. The weights tilt the family's
whole (prompt, response) distribution, prompts included, since a gold row has one response per
prompt; the acceptance harness (tinyworld.studies.tilt) estimates the same tilt from the truth.
"""

from __future__ import annotations

import math

import numpy as np

from rate.stats import percentile_interval, z_quantile
from tinyworld.certify.estimators import SUPPORT_MIN
from tinyworld.tilt.hill import weight_tail_index

# Abstain below this many effective responses. With ESS = 10 the forecast averages about ten
# gold responses: its standard error is about sd(label) / sqrt(10), ~0.05 for the tiny world's
# label spread (0.15), the size of the changes to be forecast; and the bootstrap interval,
# which can only resample the few heavy responses it was given, understates the error there.
ESS_MIN = 10.0
# The weights' tail index (Hill on exp(r / beta)) above which the reweighted mean is unreliable:
# xi > 0.7 is Pareto-smoothed importance sampling's rule (Vehtari et al. 2024), past which the
# estimate's error shrinks too slowly to be trusted at any practical sample size.
XI_MAX = 0.7
# Abstain too when more than this share of pi_beta's mass, estimated on many reference samples
# scored by the reward model, lies at rewards above the largest one among the gold rows: there
# the forecast has no label to reweight, and the gold rows' verdict is an extrapolation.
BEYOND_MAX = 0.5


def tilt_weights(r: np.ndarray, beta: float) -> np.ndarray:
    """exp(r / beta) scaled so that the largest weight is 1 (the scale cancels in every use)."""
    if not beta > 0:
        raise ValueError(f"beta must be > 0, got {beta}")
    r = np.asarray(r, dtype=np.float64)
    return np.exp((r - r.max()) / beta)


def ess(w: np.ndarray) -> float:
    """Kish's effective sample size (sum w)^2 / sum w^2."""
    w = np.asarray(w, dtype=np.float64)
    return float(w.sum() ** 2 / np.square(w).sum())


def reweighted_mean(y: np.ndarray, w: np.ndarray) -> float:
    return float(np.dot(w, y) / w.sum())


def ratio_se(y: np.ndarray, w: np.ndarray) -> float:
    """Delta-method standard error of the ratio sum(w y) / sum(w) for i.i.d. draws."""
    w = np.asarray(w, dtype=np.float64)
    m = reweighted_mean(y, w)
    return float(math.sqrt(np.sum(np.square(w * (np.asarray(y) - m)))) / w.sum())


def tilt_forecast(
    r: np.ndarray,
    y: np.ndarray,
    beta: float,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
) -> dict:
    """The forecast for one family and beta: pi_beta's quality, its change against the gold mean,
    the ESS, a percentile bootstrap interval of the change (rows resampled), the weights' tail
    index, whether to abstain (ESS below :data:`ESS_MIN`) and whether the weights' tail is too
    heavy to trust (Hill's xi above :data:`XI_MAX`, a warning beside the abstention)."""
    r, y = np.asarray(r, dtype=np.float64), np.asarray(y, dtype=np.float64)
    if r.shape != y.shape or r.ndim != 1 or r.size < 2:
        raise ValueError(f"rewards and labels must be two 1-d arrays of one length >= 2, got "
                         f"{r.shape} and {y.shape}")  # fmt: skip
    w = tilt_weights(r, beta)
    forecast = reweighted_mean(y, w)
    n_eff = ess(w)
    rng = np.random.default_rng([seed, 0x7117])
    idx = rng.integers(0, r.size, size=(n_boot, r.size))
    wb, yb = w[idx], y[idx]  # (n_boot, n)
    changes = (wb * yb).sum(1) / wb.sum(1) - yb.mean(1)
    lo, hi = percentile_interval(changes, level)
    try:
        tail = weight_tail_index(r, beta).as_dict()
    except ValueError:  # fewer rows than Hill's k needs
        tail = None
    return {
        "beta": beta,
        "n": int(r.size),
        "gold_mean": round(float(y.mean()), 6),
        "forecast": round(forecast, 6),
        "change": round(forecast - float(y.mean()), 6),
        "interval": [round(float(lo), 6), round(float(hi), 6)],
        "se": round(ratio_se(y, w), 6),
        "ess": round(n_eff, 3),
        "max_weight_share": round(float(w.max() / w.sum()), 6),
        "weight_tail": tail,
        "abstain": bool(n_eff < ESS_MIN),
        "heavy_weights": bool(tail is not None and tail["xi"] > XI_MAX),
    }


def mass_beyond(r_ref: np.ndarray, r_max: float, beta: float) -> float:
    """The share of the tilt's mass on reference samples ``r_ref`` at rewards above ``r_max``."""
    r_ref = np.asarray(r_ref, dtype=np.float64)
    w = tilt_weights(r_ref, beta)
    return float(w[r_ref > r_max].sum() / w.sum())


def add_coverage(fc: dict, r_ref: np.ndarray, r_gold: np.ndarray) -> dict:
    """``fc`` with the tilt's mass beyond the gold rewards, abstaining when it is too large."""
    beyond = mass_beyond(r_ref, float(np.max(r_gold)), fc["beta"])
    return {
        **fc,
        "mass_beyond_gold": round(beyond, 6),
        "abstain": bool(fc["abstain"] or beyond > BEYOND_MAX),
    }


def sign(x: float) -> int:
    """-1, 0 or 1."""
    return int(np.sign(x))


def calibration_line(s: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Least-squares y ~ a + b s (b = 0 when s does not vary)."""
    s, y = np.asarray(s, dtype=np.float64), np.asarray(y, dtype=np.float64)
    var = float(np.square(s - s.mean()).mean())
    b = float(((s - s.mean()) * (y - y.mean())).mean() / var) if var > 1e-12 else 0.0
    return float(y.mean() - b * s.mean()), b


def model_forecast(
    y_gold: np.ndarray,
    s_gold: np.ndarray,
    s_tilt: np.ndarray,
    w_tilt: np.ndarray,
    s_ref: np.ndarray,
    beta: float,
    n_boot: int = 2000,
    seed: int = 0,
    level: float = 0.95,
    kl: float | None = None,
) -> dict:
    """pi_beta's quality by a quality model instead of reweighted labels.

    The model is the gold-calibrated corrected reward q(s) = a + b s, kept inside the gold
    labels' range (a line fitted on the reference's rewards is no evidence beyond them). It is
    averaged over samples of pi_beta (``s_tilt`` with weights ``w_tilt``, e.g. from
    :mod:`tinyworld.tilt.guided`) and over reference samples ``s_ref``; the change is the
    difference. Its interval adds two errors in quadrature: the line's (a bootstrap over the
    gold rows) and the samples' (the delta method of the weighted mean). It does not cover
    the model's own error: where pi_beta's corrected rewards lie outside the gold's range
    (``share_outside_gold``), the answer is the line's extrapolation, and a reward that pays
    more than the wrapper removes in pi_beta's contexts moves it unseen.

    ``kl`` (KL(pi_beta || pi_ref), e.g. :meth:`TiltSamples.kl_to_reference`) says whether the
    gold rows can check the model where pi_beta goes: about n * exp(-KL) of them fall there,
    and below certification's floor (:data:`tinyworld.certify.estimators.SUPPORT_MIN`) the answer
    is ``unchecked``: the model's word alone.
    """
    y, s = np.asarray(y_gold, dtype=np.float64), np.asarray(s_gold, dtype=np.float64)
    s_tilt, s_ref = np.asarray(s_tilt, dtype=np.float64), np.asarray(s_ref, dtype=np.float64)
    w = np.asarray(w_tilt, dtype=np.float64)
    if y.shape != s.shape or y.size < 3 or s_tilt.shape != w.shape or s_ref.size < 2:
        raise ValueError("model_forecast: need >= 3 gold rows with rewards, one weight per "
                         "tilt sample and >= 2 reference samples")  # fmt: skip
    lo_y, hi_y = float(y.min()), float(y.max())

    def change_of(a: float, b: float) -> tuple[float, float, float]:
        q_tilt = np.clip(a + b * s_tilt, lo_y, hi_y)
        q_ref = np.clip(a + b * s_ref, lo_y, hi_y)
        tilt, ref = reweighted_mean(q_tilt, w), float(q_ref.mean())
        se = math.hypot(ratio_se(q_tilt, w), float(q_ref.std()) / math.sqrt(q_ref.size))
        return tilt, ref, se

    a, b = calibration_line(s, y)
    tilt, ref, se_samples = change_of(a, b)
    rng = np.random.default_rng([seed, 0x7118])
    changes = []
    for _ in range(n_boot):
        idx = rng.integers(0, y.size, y.size)
        t, r, _ = change_of(*calibration_line(s[idx], y[idx]))
        changes.append(t - r)
    se_line = float(np.std(changes, ddof=1)) if n_boot > 1 else 0.0
    se = math.hypot(se_line, se_samples)
    z = z_quantile(level)
    change = tilt - ref
    outside = float(w[(s_tilt < s.min()) | (s_tilt > s.max())].sum() / w.sum())
    return {
        "beta": beta,
        "line": [round(a, 6), round(b, 6)],
        "forecast": round(tilt, 6),
        "reference": round(ref, 6),
        "change": round(change, 6),
        "interval": [round(change - z * se, 6), round(change + z * se, 6)],
        "se_line": round(se_line, 6),
        "se_samples": round(se_samples, 6),
        "ess": round(ess(w), 1),
        "n": int(w.size),
        "share_outside_gold": round(outside, 6),
        **gold_support(y.size, kl),
    }


def gold_support(n_gold: int, kl: float | None) -> dict:
    """How many gold rows stand where pi_beta goes (n * exp(-KL)) and whether that is enough
    to check a model there (certification's floor); nothing without a KL."""
    if kl is None:
        return {}
    support = n_gold * math.exp(-max(kl, 0.0))
    return {
        "kl": round(kl, 4),
        "gold_support": round(support, 3),
        "unchecked": bool(support < SUPPORT_MIN),
    }
