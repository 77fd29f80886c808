"""What the optimizer infers about the memo's TVR groups, above the memo: the prover (facts and
proven-empty groups, from the arrival bounds of :mod:`tempura.tvr.bounds`) and the TVR estimator
(row counts and column statistics of snapshots, deltas and states)."""

from tempura.infer.estimate import TvrEstimator
from tempura.infer.prover import Prover

__all__ = ["Prover", "TvrEstimator"]
