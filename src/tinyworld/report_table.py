"""Plain-text tables of evaluation reports, for the terminal."""

from __future__ import annotations

from tinyworld.vocab import FAMILIES


def quality_table(reports: dict[str, dict]) -> str:
    """One block per policy: per-family and balanced true quality, proxy reward and KL."""
    header = (
        f"{'policy':<16} {'metric':<13}"
        + "".join(f"{f:>8}" for f in FAMILIES)
        + f"{'balanced':>10}"
    )
    lines = [header, "-" * len(header)]
    for name, rep in reports.items():
        metrics = [("true_quality", "true quality"), ("proxy_reward", "proxy reward"), ("kl", "KL")]
        for i, (key, label) in enumerate(metrics):
            if key not in rep["balanced"]:
                continue
            cells = "".join(f"{rep['per_family'][f][key]:>8.3f}" for f in FAMILIES)
            lines.append(
                f"{name if i == 0 else '':<16} {label:<13}{cells}{rep['balanced'][key]:>10.3f}"
            )
    return "\n".join(lines)
