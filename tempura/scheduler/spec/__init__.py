"""The YAML spec of a standing query: its file format, validation, and the values read from it.

A spec names the query, its sources, the schedule and the objective::

    name: gross_by_category
    query: |                          # or query_file: query.sql (relative to this file)
      SELECT category, SUM(price) AS gross FROM sales GROUP BY category
    dialect: spark                    # optional; any sqlglot dialect
    sources:
      sales:
        path: data/sales              # relative: from this file's folder, and inside it; or an
                                      # absolute path, or any URI Spark reads (_check_paths)
        format: parquet               # parquet | csv | json | orc
        options: {}                   # optional, passed to Spark's reader
        schema: {o_id: string}        # optional; or strict (the default) | add_columns: how a
                                      # new file's columns may differ from the committed ones
        arrival: {column: arrived_at} # the column holding each row's arrival time
                                      # (with: {orders: o_id}: each row lands with the row of
                                      # orders whose key it holds in o_id; within: 12h:
                                      # with it or at most 12 hours after it)
        key: s_id                     # optional: each value of s_id lands once in a cycle
        changes:                      # optional: change data
          op_column: _op
          insert_values: ["I"]        # the default; no value both inserts and deletes
          delete_values: ["D"]        # the default
          deletes: strict             # strict: deleting a row that is not there is an error;
                                      # lenient: such deletions are counted and dropped
        expected: [0.5, 0.5]          # optional: share of the rows per interval (sum <= 1),
                                      # or {rows: [1000, 1200]}
    schedule:
      at: ["2026-11-22T06:00:00", "2026-11-22T12:00:00"]
      # or: start: "2026-11-22T00:00:00", every: 6h, points: 4  (t_i = start + i*every)
      # or: start: "2026-11-22", at: ["06:00", "24:00"]          (daily, at those times of day)
      # or: start: "2026-11-22T00:00:00", target_lag: 2h, deadline: "2026-11-23T00:00:00"
      #     (tempura chooses the points: more cost more work, fewer leave results older;
      #     lag_weight: 1.0 is the seconds of work one second of age past the target is worth)
      deliver: last                   # last | every | [1-based indices]
      allow_many_points: false        # more than 10,000 time points in a cycle are an error
                                      # unless this is true
    objective:
      preset: deadline                # deadline | total; or weights: [0.1, 0.1, 1]
      margin: 0.1                     # optional: the share of recomputation's objective an
                                      # incremental plan must save for auto to take it
    state_budget: 10GB                # optional: the most bytes of kept states alive at once
                                      # (B, kB, MB, GB, TB: powers of 1000; KiB, MiB, GiB, TiB: of 1024)
    integrity: enforced               # enforced: keys and arrival 'with' are checked as rows land;
                                      # trusted: taken as declared, unchecked
    cost: {stage: 1e9, executors: 8}  # optional: cost model constants for this query's planning
                                      # (a stage cost set here is not fitted to the run history)
    output: {path: out, format: parquet, mode: snapshot}  # optional: where deliveries go (not
                                      # the spec's folder, nor a source's, nor around either)
    max_catch_up: 1                   # how many cycles a normal run may catch up on (>= 1)
    allow_empty: false                # whether an empty delivery may replace a non-empty one
    nondeterministic: refuse          # refuse | recompute: a query reading rand(), uuid(), ...
                                      # (current_timestamp(), now() and current_date() are the
                                      # time point's time: such a query is recomputed at every point)

pydantic checks each key's shape (unknown keys are errors, with the closest known key
suggested; a key given twice is an error); the rules that tie keys together (one query,
increasing time points, one weight per time point, …) are checked after it. Every error is a
:class:`SpecError` whose one-line message names the file, the line and the key path.
:meth:`Spec.missing_paths` lists the local paths that do not exist, for ``validate``.

The package holds the keys' shapes (``model``), the schedule's time points (``schedule``), the
rules of paths (``paths``), the validated spec (``validated``) and loading with the checks that
tie keys together (``checks``).
"""

from tempura.scheduler.spec.checks import load_spec
from tempura.scheduler.spec.model import (
                                          DEADLINE_EPSILON,
                                          MAX_TIME_POINTS,
                                          ArrivalColumn,
                                          ChangeColumns,
                                          HooksSpec,
                                          ObjectiveSpec,
                                          OutputSpec,
                                          RangeSpec,
                                          ScheduleSpec,
                                          SourceSpec,
                                          SparkSpec,
                                          SpecError,
                                          SpecFile,
                                          parse_duration,
                                          parse_size,
                                          parse_time_value,
)
from tempura.scheduler.spec.schedule import (
                                          Cycle,
                                          cycle_index_at,
                                          cycle_values,
                                          generate_time_points,
                                          lag_points,
                                          with_points,
)
from tempura.scheduler.spec.validated import Spec

__all__ = ["DEADLINE_EPSILON", "MAX_TIME_POINTS", "ArrivalColumn", "ChangeColumns", "Cycle", "HooksSpec", "ObjectiveSpec",
           "OutputSpec", "RangeSpec", "ScheduleSpec", "SourceSpec", "SparkSpec", "Spec", "SpecError", "SpecFile",
           "cycle_index_at", "cycle_values", "generate_time_points", "lag_points", "load_spec", "parse_duration", "parse_size",
           "parse_time_value", "with_points"]
