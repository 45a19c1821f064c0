"""The entailment regimes a query may be evaluated under (``rsp_jobs.reasoning.entailment``
computes them): a query option the planner decides by, so it is known without Spark."""

from __future__ import annotations

from rsp_jobs.errors import InputError

REGIMES = ("simple", "rdfs", "rdfs++")


def check_regime(regime: str, where: str = "entailment") -> str:
    if regime not in REGIMES:
        raise InputError(
            f"{where}: unknown entailment regime {regime!r}; use one of {', '.join(REGIMES)}"
        )
    return regime
