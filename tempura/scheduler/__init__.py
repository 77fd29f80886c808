"""Running standing queries over time: the spec file and its time points, weights and sources.

``load_spec`` reads and validates a spec (the ``spec`` package: model, checks, schedule); the runner, run history and
re-optimisation hook build on the :class:`Spec` it returns.
"""

from tempura.scheduler.spec import SourceSpec, SpecError, Spec, load_spec

__all__ = ["SourceSpec", "SpecError", "Spec", "load_spec"]
