"""Running one time point of a plan durably: fragments on Spark, states and outputs committed.

:class:`DurableExecutor` runs the fragments a :class:`~tempura.tvr.plan.MultiTimePlan` places at
time point ``t_i`` of one cycle, over the landed source intervals (:mod:`tempura.runtime.ingest`):

- a **batch** fragment is one Spark SQL job, its join algorithms pinned by hints;
- a **streaming** fragment of a plan forced to ``streaming`` reads the interval's delta of each
  source through Structured Streaming (under ``auto`` it reads the landing, like an incremental
  fragment: :meth:`~tempura.tvr.plan.Fragment.streams`): Spark's file source over the source's
  landing folder, ``trigger(availableNow=True)``, with its checkpoint under the workdir (one
  checkpoint version per time point, so a redone time point starts from the last committed one).
  Each micro-batch is staged, and the fragment's SQL runs over the staged delta;
- a kept **state** is written as parquet under ``.pending/`` and renamed to
  ``states/<id>@tNNN/``; later fragments, in this process or a later one, read that folder;
- a **delivery** is written to the output: a snapshot replaces the output folder (the new one is
  complete before it is renamed into place), a delta is added as the partition
  ``cycle=<label>/time_point=NNN``. Without an output in the spec, deliveries go to the cycle's
  ``results/tNNN/``.

Each fragment is measured (:class:`~tempura.runtime.metrics.Meter`). The caller commits the time
point by writing its manifest (:mod:`tempura.runtime.store`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from tempura.algebra import Query
from tempura.errors import ExecutionError, InternalError, PlanRejected
from tempura.runtime.executor import (BroadcastFallback, SparkPlanning, conform, execute, run_with_fallback,
                                      spark_error_message)
from tempura.runtime.faults import reached
from tempura.runtime.files import Files, uri
from tempura.runtime.ingest import TP, Feed, landing_data, with_interval
from tempura.runtime.layout import (PrunedRead, Pruning, key_class, probe_buckets, pruned_folders, select_buckets,
                                    sliced_folders, write_laid_out)
from tempura.runtime.metrics import Meter, WorkMetrics
from tempura.runtime.sources import SourceData, register_read, source_delta
from tempura.runtime.storage import Location
from tempura.runtime.store import JobStore, inventory
from tempura.sql.names import quote_identifier
from tempura.tvr.layout import BUCKET, Layout, Merge, Probe, Since, pruned, scans_of, touched
from tempura.tvr.time import TimeValue, cycle_words
from tempura.tvr.operators import SourceRead
from tempura.tvr.plan import Fragment, KeptState, MultiTimePlan

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.types import StructType


@dataclass(frozen=True)
class SavedState:
    """A state saved by a committed time point: the plan's state id, its folder's name under
    ``states/``, when it was saved, and what it holds."""

    id: str
    folder: str
    produced_at: int
    rows: int
    bytes: int
    form: str
    key: str = ""  # the plan's KeptState.key: what a later planning matches it by
    # The columns it was written with (Spark's schema as JSON): read back with them, Spark reads
    # no file's footer to find them. Empty in a manifest written before they were recorded.
    schema: str = ""
    layout: Layout | None = None  # written hash-bucketed, one folder per non-empty bucket

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "folder": self.folder, "produced_at": self.produced_at, "rows": self.rows,
                               "bytes": self.bytes, "form": self.form, "key": self.key}
        if self.schema:
            out["schema"] = self.schema
        if self.layout is not None:
            out["layout"] = self.layout.to_json()
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SavedState:
        layout = Layout.from_json(data["layout"]) if data.get("layout") else None
        return cls(str(data["id"]), str(data["folder"]), int(data["produced_at"]), int(data["rows"]),
                   int(data["bytes"]), str(data["form"]), str(data.get("key", "")), str(data.get("schema", "")), layout)


@dataclass
class FragmentRun:
    """One fragment as it ran: what the plan estimated and what Spark measured."""

    id: str
    time: int
    method: str
    form: str
    output: str
    streaming: bool
    estimated_rows: float
    estimated_seconds: float
    metrics: WorkMetrics
    estimated_stages: float = 0.0  # the fixed stage costs the estimate includes
    estimated_fixed_seconds: float = 0.0  # their share of ``estimated_seconds``
    estimated_row_seconds: float = 0.0  # the per-row CPU work's share (Cost.cpu without the stages' fixed costs)
    row_constant: float = 1.0  # the CPU constant it was priced with (CostConstants.cpu)
    pruned: list[PrunedRead] = field(default_factory=list)  # its reads of laid-out landings, pruned by a probe
    estimated_buckets_read: float = 0.0  # the buckets the plan expected them to touch
    probe_keys: float = 1.0  # the factor the plan's key estimates were multiplied by (CostConstants.probe_keys)
    fallback: BroadcastFallback | None = None  # run again without some join hints: a pinned hash join did not fit

    def to_json(self) -> dict[str, Any]:
        out = {"id": self.id, "time": self.time, "method": self.method, "form": self.form, "output": self.output,
               "streaming": self.streaming, "estimated_rows": self.estimated_rows,
               "estimated_seconds": self.estimated_seconds, "estimated_stages": self.estimated_stages,
               "estimated_fixed_seconds": self.estimated_fixed_seconds, "estimated_row_seconds": self.estimated_row_seconds,
               "row_constant": self.row_constant, **self.metrics.to_json()}
        if self.fallback is not None:
            out["broadcast_fallback"] = self.fallback.to_json()
        if self.pruned:
            keyed = [p for p in self.pruned if not p.sliced]  # the buckets a probe's keys touch, what calibration checks
            out.update({"pruned_reads": [p.to_json() for p in self.pruned],
                        "pruned_bytes_read": sum(p.bytes_read for p in self.pruned),
                        "pruned_bytes": sum(p.bytes for p in self.pruned)})
            if keyed:
                out.update({"pruned_buckets_read": sum(p.buckets_read for p in keyed),
                            "pruned_buckets": sum(p.buckets for p in keyed),
                            "estimated_buckets_read": self.estimated_buckets_read, "probe_keys": self.probe_keys})
        return out


@dataclass
class OutputTarget:
    """Where deliveries go: a folder and its format, or a ``table`` of Spark's catalog (in
    parquet, written as job ``job``: :mod:`tempura.runtime.tables`); and ``snapshot`` (replace)
    or ``delta`` (append)."""

    path: str
    format: str = "parquet"
    mode: str = "snapshot"
    table: str | None = None
    job: str = ""


@dataclass
class TimePointRun:
    """What running one time point produced."""

    index: int
    fragments: list[FragmentRun] = field(default_factory=list)
    saved: dict[str, SavedState] = field(default_factory=dict)
    delivered: str | None = None  # the folder holding this time point's delivery
    delivered_rows: int | None = None  # the rows it holds
    streams: list[str] = field(default_factory=list)  # checkpoint folders committed with it

    def work(self) -> WorkMetrics:
        total = WorkMetrics()
        for f in self.fragments:
            total = total + f.metrics
        return total


def write_frame(frame: DataFrame, target: Location | str, fmt: str = "parquet") -> None:
    """Write ``frame`` to the folder ``target`` (replacing it) so that
    :func:`~tempura.runtime.outputs.read_output` reads it back exactly; Spark's failure becomes an
    :class:`ExecutionError` naming the folder."""
    from tempura.runtime.outputs import write_output

    write_output(frame, uri(target), fmt)


SHARED_STORAGE = "the workdir must be on storage that the driver and every executor share"


def check_visible(files: Files, folder: Location | str, rows: int) -> None:
    """Raise :class:`ExecutionError` when Spark wrote ``rows`` (> 0) rows to ``folder`` and this
    driver lists no file of them: the executors wrote to a file system the driver does not see
    (each machine's own disk, on a cluster)."""
    if rows > 0 and not files.holds_data(folder):
        raise ExecutionError(f"{folder}: Spark's executors wrote {rows} row{'s' if rows != 1 else ''} there, but this "
                             f"driver sees no file of them: {SHARED_STORAGE} (nothing was committed)")


class DurableExecutor:
    """Runs the time points of one cycle of a standing query."""

    def __init__(self, spark: SparkSession, store: JobStore, cycle: str, feeds: Mapping[str, Feed],
                 schemas: Mapping[str, StructType], k: int, output: OutputTarget | None = None,
                 planning: SparkPlanning | None = None, allow_empty: bool = False,
                 fence: Callable[[], None] | None = None, history: Mapping[str, list[str]] | None = None,
                 layouts: Mapping[str, Mapping[int, Layout]] | None = None,
                 slices: Callable[[str, int, int], Sequence[TimeValue]] | None = None, meter: Meter | None = None,
                 observe: Mapping[str, tuple[int, Callable[[DataFrame], DataFrame]]] | None = None) -> None:
        self.spark = spark
        self.store = store
        self.cycle = cycle
        self.feeds = dict(feeds)
        self.schemas = dict(schemas)
        self.k = k
        self.output = output
        self.allow_empty = allow_empty  # may an empty snapshot replace a non-empty one
        self.fence = fence or (lambda: None)  # raises unless this run still holds the job's lock
        self.planning = planning or SparkPlanning()
        self.meter = meter or Meter(spark)  # the run's, which sums its work by purpose
        self.files = store.files or Files(spark)
        # a carried cycle's interval 1 per source: the folders of the history it took over
        # (paths under the job's folder), read as interval 1 whatever interval they landed as
        self.history = dict(history) if history is not None else None
        self.layouts = {name: dict(by_index) for name, by_index in (layouts or {}).items()}  # source -> interval -> layout
        self.slices = slices or (lambda _name, _index, _count: [])  # a source's interval's slice bounds, per slice count
        # per source, an interval whose rows a fragment's whole read of it observes (for the
        # source's statistics: the new rows read once, by the plan), and how
        self.observe = dict(observe or {})

    def landed(self, name: str, first: int, last: int, prune: Pruning | None = None) -> SourceData:
        """Source ``name`` as landed in intervals ``first..last``: the folders of those only, so
        that a read of a few intervals neither lists nor opens the files of the others; with
        ``prune``, only the rows of the buckets it keeps (a pruned read)."""
        if prune is None:
            folders, history = self.store.interval_folders(self.cycle, name, first, last, self.history)
            observed = self.observe.get(name)
            observe = {observed[0]: observed[1]} if observed is not None and first <= observed[0] <= last else None
            return landing_data(self.spark, self.feeds[name], folders, self.schemas[name], self.k, history,
                                observe=observe)
        folders, history = pruned_folders(self.store, self.cycle, name, first, last, self.history,
                                          self.layouts.get(name, {}), prune)
        return landing_data(self.spark, self.feeds[name], folders, self.schemas[name], self.k, history, prune.where)

    def _expected(self, read: SourceRead, probe: Probe) -> float:
        """The buckets the plan expects ``probe`` to touch of ``read``'s laid-out intervals."""
        own = self.layouts.get(read.scan.table, {})
        return sum(touched(layout.buckets, probe.distinct) for i in range(read.start + 1, read.end + 1)
                   if (layout := own.get(i)) is not None and layout.hashes(probe.column))

    def _register_sliced(self, read: SourceRead, since: Since, reads: list[PrunedRead]) -> None:
        """Register ``read``: its intervals landed in time slices at the slices ``since`` may need
        (what it selected added to ``reads``), the others whole."""
        name = read.scan.table
        own = self.layouts.get(name, {})
        bounds = {i: self.slices(name, i, layout.buckets) for i in range(read.start + 1, read.end + 1)
                  if (layout := own.get(i)) is not None and layout.sliced and layout.column == since.column}
        if not bounds:
            data = self.landed(name, read.start + 1, read.end)
        else:
            done = PrunedRead(read.view, since.column, sliced=True)
            folders, history = sliced_folders(self.store, self.cycle, name, read.start + 1, read.end, self.history, own,
                                              bounds, since, done)
            data = landing_data(self.spark, self.feeds[name], folders, self.schemas[name], self.k, history)
            reads.append(done)
        register_read(self.spark, data, read.start, read.end, read.delta, read.view)

    def _prune(self, fragment: Fragment, read: SourceRead, probe: Probe) -> Pruning | None:
        """How ``read`` is pruned by ``probe``: its intervals laid out by the probe's column read
        at the buckets the probe's keys fall in; ``None`` when none of them is laid out so."""
        laid = [layout for i, layout in self.layouts.get(read.scan.table, {}).items()
                if layout.hashes(probe.column) and read.start < i <= read.end]
        if not laid:
            return None
        dtype = self.schemas[read.scan.table][probe.column].dataType
        keys = execute(Query(probe.on, tuple(probe.on.schema.names)), self.spark, fragment.hints, self.planning)
        if key_class(keys.schema[probe.key].dataType) != key_class(dtype):
            return None  # keys of another type hash otherwise: the read stays whole
        return Pruning(probe.column, dtype, probe_buckets(keys, probe.key, laid), PrunedRead(read.view, probe.column))

    def run(self, plan: MultiTimePlan, index: int, committed: Mapping[str, SavedState],
            progress: Callable[[Fragment], None] | None = None) -> TimePointRun:
        """Run ``plan``'s fragments at ``index``; ``committed``: the states saved before it."""
        run = TimePointRun(index)
        saved = dict(committed)
        for fragment in plan.at(index):
            if progress is not None:
                progress(fragment)
            reached("fragment", index)
            try:
                run.fragments.append(self._fragment(plan, fragment, index, saved, run))
            except PlanRejected as error:  # the query itself passed Spark's analyzer when it was planned
                raise InternalError(f"t{index} of the {cycle_words(self.cycle)}, fragment {fragment.id}: {error} "
                                    "(tempura wrote SQL that Spark rejects for a query Spark accepts)") from None
            except ExecutionError as error:
                raise ExecutionError(f"t{index} of the {cycle_words(self.cycle)}, fragment {fragment.id}: {error}") from None
        return run

    def _fragment(self, plan: MultiTimePlan, fragment: Fragment, index: int, saved: dict[str, SavedState],
                  run: TimePointRun) -> FragmentRun:
        streaming = fragment.streams(plan.method)
        probes = pruned(fragment.probes, fragment.plan)
        since = {s.view: s for s in fragment.since}
        reads: list[PrunedRead] = []
        later: list[SourceRead] = []  # the reads pruned by a probe: registered once every view a probe reads is
        planned = next((s for s in plan.states if s.id == fragment.keeps), None) if fragment.keeps else None
        merge = self._keyed_merge(fragment, planned, saved, probes)
        carried: tuple[SavedState, set[int]] | None = None  # the state merged into, and the buckets rewritten
        with self.meter.measure(f"{self.cycle} t{index} {fragment.id}", purpose="fragment") as metrics:
            probed_states = []  # laid-out states a probe prunes: registered once every view a probe reads is
            for state_id in fragment.states:
                if state_id not in saved:
                    raise ExecutionError(f"fragment {fragment.id} reads state {state_id}, which no committed time point saved")
                layout = saved[state_id].layout
                if merge is not None and state_id == merge.state:
                    continue  # registered below, at the buckets the merge rewrites
                if (state_id in probes and layout is not None and layout.column == probes[state_id].column
                        and not any(scans_of(probes[state_id].on, v) for v in probes)
                        and (merge is None or not scans_of(probes[state_id].on, merge.state))):
                    probed_states.append(state_id)
                else:
                    self._read_state(saved[state_id]).createOrReplaceTempView(quote_identifier(state_id))
            for read in fragment.sources:
                if read.scan.table not in self.feeds:
                    raise ExecutionError(f"the plan reads source '{read.scan.table}', which has no data")
                if fragment.streamed(read, plan.method):
                    source_delta(self._streamed(read.scan.table, index, run), index - 1, index).createOrReplaceTempView(
                        quote_identifier(read.view))
                elif read.view in probes and not any(scans_of(probes[read.view].on, v) for v in probes) and (
                        merge is None or not scans_of(probes[read.view].on, merge.state)):
                    later.append(read)
                elif read.view in since:
                    self._register_sliced(read, since[read.view], reads)
                else:  # the landed intervals the read covers, and no others
                    register_read(self.spark, self.landed(read.scan.table, read.start + 1, read.end), read.start, read.end,
                                  read.delta, read.view)
            for state_id in probed_states:
                frame, done = self._pruned_state(fragment, saved[state_id], probes[state_id])
                frame.createOrReplaceTempView(quote_identifier(state_id))
                if done is not None:
                    reads.append(done)
            for read in later:
                prune = self._prune(fragment, read, probes[read.view])
                if prune is None and read.view in since:  # no interval laid out by the probe's key
                    self._register_sliced(read, since[read.view], reads)
                    continue
                register_read(self.spark, self.landed(read.scan.table, read.start + 1, read.end, prune), read.start,
                              read.end, read.delta, read.view)
                if prune is not None:
                    reads.append(prune.read)
            if merge is not None:
                carried = self._merge_buckets(fragment, merge, saved[merge.state], reads)

            def write(frame: DataFrame) -> None:
                """Save the fragment's state and deliver its result (again, with fewer join hints,
                when a pinned broadcast or hash table did not fit: nothing is committed yet)."""
                if fragment.keeps is not None:
                    state = self._save(fragment, frame, index, planned.key if planned is not None else "",
                                       planned.layout if planned is not None else None, carried)
                    saved[state.id] = run.saved[state.id] = state
                    frame = self._read_state(state)
                if fragment.delivers:
                    run.delivered = self._deliver(plan, frame, index)

            _, fallback = run_with_fallback(Query(fragment.plan, tuple(fragment.plan.schema.names)), self.spark,
                                            fragment.hints, write, self.planning)
        if fragment.keeps is not None:
            metrics.rows_out = run.saved[fragment.keeps].rows
        elif fragment.delivers:
            metrics.rows_out = metrics.rows_written
        if fragment.delivers:
            run.delivered_rows = metrics.rows_out
        expected = sum(self._expected(r, probes[r.view]) for r in later if any(p.read == r.view for p in reads))
        expected += sum(touched(layout.buckets, probes[s].distinct) for s in probed_states
                        if (layout := saved[s].layout) is not None and any(p.read == s for p in reads))
        if merge is not None and (layout := saved[merge.state].layout) is not None and any(p.read == merge.state for p in reads):
            expected += touched(layout.buckets, merge.distinct)
        return FragmentRun(fragment.id, index, fragment.method, fragment.form, fragment.output, streaming, fragment.rows,
                           fragment.cost.times[index - 1] / 1e9, metrics, fragment.cost.stages,
                           fragment.cost.stages * plan.constants.stage / 1e9,
                           max(fragment.cost.cpu - fragment.cost.stages * plan.constants.stage, 0.0) / 1e9,
                           plan.constants.cpu, reads, expected, plan.constants.probe_keys, fallback)

    def _keyed_merge(self, fragment: Fragment, planned: KeptState | None, saved: Mapping[str, SavedState],
                     probes: Mapping[str, Probe]) -> Merge | None:
        """The fragment's keyed merge into a state laid out as the state it keeps is planned to
        be (by the merge's column): then it rewrites only the buckets its other reads touch."""
        layout = planned.layout if planned is not None else None
        if layout is None:
            return None
        for merge in fragment.merges:
            before = saved.get(merge.state)
            if (before is not None and before.layout == layout and merge.column == layout.column and before.schema
                    and merge.state not in probes):
                return merge
        return None

    def _merge_buckets(self, fragment: Fragment, merge: Merge, before: SavedState,
                       reads: list[PrunedRead]) -> tuple[SavedState, set[int]] | None:
        """Register the state ``before`` at the buckets the keys that may change fall in (those of
        the reads the merge names, one job per read), and return it with those buckets: the rest
        of its buckets are the new state's as they are. ``None`` (the state registered whole)
        when a read's key is of another type class than the state's column."""
        from pyspark.sql.types import StructType

        assert before.layout is not None
        columns = StructType.fromJson(json.loads(before.schema))
        hit: set[int] = set()
        for view, column in dict.fromkeys(merge.keys):
            keys = self.spark.table(quote_identifier(view))
            if key_class(keys.schema[column].dataType) != key_class(columns[merge.column].dataType):
                self._read_state(before).createOrReplaceTempView(quote_identifier(merge.state))
                return None
            hit |= probe_buckets(keys, column, [before.layout])[before.layout.buckets]
        done = PrunedRead(merge.state, merge.column)
        folder = self.state_folder(before)
        chosen = select_buckets([uri(folder)], [inventory(folder, self.store.storage)], [before.layout],
                                {before.layout.buckets: hit}, done)
        self._read_state(before, chosen).createOrReplaceTempView(quote_identifier(merge.state))
        reads.append(done)
        return before, hit

    def _commit(self, frame: DataFrame, pending: Location, final: Location | str, index: int, what: str,
                fmt: str = "parquet", layout: Layout | None = None, carried: tuple[SavedState, set[int]] | None = None) -> None:
        """Write ``frame`` to ``pending`` (hash-bucketed by ``layout``, if given; with ``carried``,
        a state and the buckets ``frame`` rewrites of it, the state's other buckets shared into
        ``pending`` as they are), then put it in place of whatever an uncommitted attempt left at
        ``final`` (``what``: ``state`` or ``delivery``, the fault points' names)."""
        if layout is not None:
            write_laid_out(frame, layout, pending)
            if carried is not None:
                self._share_untouched(carried[0], carried[1], pending)
        else:
            write_frame(frame, pending, fmt)
        reached(f"{what}-written", index)
        self.fence()
        self.files.delete(final)
        self.files.rename(pending, final)
        reached("state-saved" if what == "state" else "delivered", index)

    def _read_state(self, state: SavedState, folders: list[str] | None = None) -> DataFrame:
        """A saved state's rows (of ``folders`` only: some of a laid-out state's buckets); with
        its recorded columns, which are what Spark would find in its files' footers (every column
        nullable either way), without the job that reads them. Files are found recursively,
        without partition discovery: a laid-out state reads like any other."""
        from pyspark.sql.types import StructType

        reader = self.spark.read.option("recursiveFileLookup", "true")
        columns = StructType.fromJson(json.loads(state.schema)) if state.schema else None
        if columns is not None:
            reader = reader.schema(columns)
        if folders is not None and not folders and columns is not None:  # no bucket touched
            return self.spark.createDataFrame([], columns)
        return reader.parquet(*(folders or [uri(self.state_folder(state))]))

    def state_folder(self, state: SavedState) -> Location:
        return self.store.cycle_dir(self.cycle) / "states" / state.folder

    def _pruned_state(self, fragment: Fragment, state: SavedState, probe: Probe) -> tuple[DataFrame, PrunedRead | None]:
        """``state`` (laid out by the probe's column) at the buckets the probe's keys fall in; the
        whole state when the keys are of another type class than its column."""
        from pyspark.sql.types import StructType

        assert state.layout is not None
        keys = execute(Query(probe.on, tuple(probe.on.schema.names)), self.spark, fragment.hints, self.planning)
        columns = StructType.fromJson(json.loads(state.schema)) if state.schema else None
        if columns is None or key_class(keys.schema[probe.key].dataType) != key_class(columns[probe.column].dataType):
            return self._read_state(state), None
        found = probe_buckets(keys, probe.key, [state.layout])
        done = PrunedRead(state.id, probe.column)
        folder = self.state_folder(state)
        chosen = select_buckets([uri(folder)], [inventory(folder, self.store.storage)], [state.layout], found, done)
        return self._read_state(state, chosen), done

    def _share_untouched(self, before: SavedState, touched_buckets: set[int], pending: Location) -> None:
        """Share ``before``'s bucket folders other than ``touched_buckets`` into ``pending``."""
        folder = self.state_folder(before)
        for name in self.store.storage.children(folder):
            bucket = name.removeprefix(f"{BUCKET}=")
            if bucket != name and bucket.isdigit() and int(bucket) not in touched_buckets:
                self.store.storage.share(folder / name, pending / name)

    def _save(self, fragment: Fragment, frame: DataFrame, index: int, key: str, layout: Layout | None = None,
              carried: tuple[SavedState, set[int]] | None = None) -> SavedState:
        """Save the fragment's state (``carried``: the state it merges, and the buckets it rewrote
        of it: the others are shared, not written)."""
        assert fragment.keeps is not None
        final = self.store.state_path(self.cycle, fragment.keeps, index)
        with self.meter.measure(f"save {fragment.keeps}") as written:
            self._commit(frame, self.store.pending(self.cycle) / "states" / fragment.keeps, final, index, "state",
                         layout=layout, carried=carried)
        check_visible(self.files, final, written.rows_written)
        rows = written.rows_written if carried is None else self.store.storage.parquet_rows(final)
        return SavedState(fragment.keeps, final.name, index, rows, self.files.size(final), fragment.form, key,
                          frame.schema.json(), layout)

    def _deliver(self, plan: MultiTimePlan, frame: DataFrame, index: int) -> str:
        """Write the delivery where it goes; returns the folder holding it."""
        pending = self.store.pending(self.cycle) / "delivery"
        columns = list(plan.query.names) + [c for c in frame.columns[len(plan.query.names):]]
        named = conform(frame.toDF(*columns), plan.query.result, extra=True)  # Spark's names and types
        target = self.output
        if target is not None and target.table is not None:
            return self._deliver_to_table(target, named, pending, index)
        if target is None or target.mode == "delta":
            if target is None:
                final = uri(self.store.cycle_dir(self.cycle) / "results" / f"t{index:03d}")
            else:
                final = f"{uri(target.path).rstrip('/')}/cycle={self.cycle}/time_point={index:03d}"
            self._commit(named, pending, final, index, "delivery", target.format if target is not None else "parquet")
            return final
        final = uri(target.path)
        write_frame(named, pending, target.format)
        reached("delivery-written", index)
        if not self.allow_empty:
            self._refuse_empty(pending, final, target.format, named.schema, index)
        self.fence()  # a run that lost its lock replaces no output
        old = f"{final.rstrip('/')}.replaced-{int(time.time() * 1000)}"
        if self.files.exists(final):
            self.files.rename(final, old)
        self.files.rename(pending, final)
        self.files.delete(old)
        reached("delivered", index)
        return final

    def _deliver_to_table(self, target: OutputTarget, frame: DataFrame, pending: Location, index: int) -> str:
        """Commit the delivery to its folder under the table's root, then make the table show it:
        a delta as a new partition, a snapshot by one switch of the table's location."""
        from tempura.runtime.tables import OutputTable

        assert target.table is not None
        table = OutputTable(self.spark, target.table, target.job, self.files)
        current = table.location()  # stops here when the table is another's
        if target.mode == "delta":
            final = f"{table.root}/cycle={self.cycle}/time_point={index:03d}"
            self._commit(frame, pending, final, index, "delivery")
            table.add_partition(frame.schema, self.cycle, index, final, current)
            return final
        final = table.version_folder(self.cycle, index, int(time.time() * 1000))
        write_frame(frame, pending)
        reached("delivery-written", index)
        if not self.allow_empty and current is not None:
            self._refuse_empty(pending, current, "parquet", frame.schema, index)
        self.fence()  # a run that lost its lock switches no table
        self.files.rename(pending, final)
        table.switch(frame.schema, final, current)
        reached("delivered", index)
        return final

    def _refuse_empty(self, pending: Location, final: str, fmt: str, schema: StructType, index: int) -> None:
        """Stop before an empty snapshot replaces an output that holds rows (a catch-up over
        cycles without data would otherwise empty it silently)."""
        def holds_rows(folder: str | Location) -> bool:
            if not self.files.data_files(folder):
                return False
            from tempura.runtime.outputs import read_output

            return read_output(self.spark, uri(folder), fmt, schema).limit(1).count() > 0

        if not holds_rows(pending) and holds_rows(final):
            raise ExecutionError(f"t{index} of the {cycle_words(self.cycle)} delivers an empty result, which would replace the rows "
                                 f"of {final}: nothing was committed (set allow_empty: true in the spec if an empty "
                                 f"result is right)")

    def _streamed(self, source: str, index: int, run: TimePointRun) -> SourceData:
        """The landing's new rows for ``source``, read by a Structured Streaming query over its
        landing folder (``availableNow``), from the checkpoint of the last committed time point."""
        feed = self.feeds[source]
        schema = self.schemas[source]
        pending = self.store.pending(self.cycle)
        checkpoint = pending / "checkpoints" / source
        staged = pending / "streamed" / source
        previous = self._last_checkpoint(source, index)
        self.files.delete(checkpoint)
        self.files.delete(staged)
        if previous is not None:
            self.files.copy(previous, checkpoint)
        stage_uri = uri(staged)

        def stage(batch: DataFrame, _batch_id: int) -> None:
            batch.write.mode("append").parquet(stage_uri)

        from pyspark.sql import functions as F

        # Landed files hold one interval each: the first filter skips the earlier written intervals'
        # files a stream with no checkpoint yet lists, by their row groups' statistics (a linked
        # interval's files hold no __tp: their folder names it), and stages this one's rows only.
        stream = self.spark.readStream.schema(schema).option("recursiveFileLookup", "true")\
            .parquet(uri(self.store.landing(self.cycle, source)))
        query = (
            with_interval(stream.where((F.col(TP) == index) | F.col(TP).isNull())).where(F.col(TP) == index)
            .writeStream.queryName(f"tempura_{source}_{index}").trigger(availableNow=True)
            .option("checkpointLocation", uri(checkpoint)).foreachBatch(stage).start()
        )
        from pyspark.errors import PySparkException

        try:
            query.awaitTermination()
        except PySparkException as error:
            raise ExecutionError(f"the stream over source '{source}' failed: {spark_error_message(error)}") from None
        finally:  # the stream's batches ran on its own thread, under its run id: they are the fragment's work
            self.meter.include(str(query.runId))
        final = self.store.checkpoint(self.cycle, source, index)
        self.files.delete(final)
        self.files.rename(checkpoint, final)
        run.streams.append(final.name)
        frame = (self.spark.read.schema(schema).parquet(stage_uri) if self.files.exists(staged)
                 else self.spark.createDataFrame([], schema))  # the interval's rows only: the stream filtered them
        return SourceData(feed.name, frame, TP, "__op" if feed.deletes else None, ("D",), tuple(range(1, self.k + 1)),
                          hidden=feed.hidden)

    def _last_checkpoint(self, source: str, index: int) -> Location | None:
        folder = self.store.cycle_dir(self.cycle) / "checkpoints"
        best: tuple[int, str] | None = None
        for name in self.files.children(folder):
            stream, _, tag = name.rpartition("@t")
            if stream == source and tag.isdigit() and int(tag) < index and (best is None or int(tag) > best[0]):
                best = (int(tag), name)
        return folder / best[1] if best is not None else None
