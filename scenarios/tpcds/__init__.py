"""TPC-DS as standing queries: the data the TPC-DS scenarios share.

The data is TPC-DS's own (``dsdgen``, through :func:`tempura.tpcds.generate`); a scenario's
``--scale`` is TPC-DS's scale factor (scale 1: 2.9 million store sales, 288,000 returns; the
benchmark's default 0.1: a tenth of that).

The sales fall on a calendar that is the same at every scale: date keys (``d_date_sk``, the
Julian day number of ``d_date``) from :data:`FIRST_DATE_SK` (1998-01-02) to
:data:`LAST_DATE_SK` (2003-01-02). The scenarios' schedules are those date keys, cut into four
time points of :data:`EVERY` days from :data:`START`; their cycle covers the whole calendar.

- ``store_sales`` *arrives by its ticket's date*: each row gets ``ss_ticket_date_sk``, the date
  key of its ticket (``dsdgen`` gives every line of a ticket the same ``ss_sold_date_sk``, and
  leaves it NULL in some lines at random), as its arrival column; so a ticket lands once
  (``key: ss_ticket_number``).
- ``store_returns`` *arrives by its return date* ``sr_returned_date_sk``, 4 to 180 days after
  its ticket (``with: {store_sales: sr_ticket_number}, within: 180``). Returns without a return
  date, and those returned after the cycle's last time point (whose sale is in this cycle, not
  the next), are left out, as are the few more than :data:`RETURN_LAG` days after their ticket.
- The other tables are reference data: their files are found at the first time point
  (``arrival: {by: file}``, ``expected: [1, 0, 0, 0]``) and never change.

The TPC-DS data of a scale is generated once into a cache folder beside the scenario's, then
each scenario writes the tables its query reads under its own ``data/``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Callable

from tempura import tpcds

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

FIRST_DATE_SK = 2450816
"""The sales' first date key (1998-01-02), at every scale."""
LAST_DATE_SK = 2452642
"""The sales' last date key (2003-01-02), at every scale."""
POINTS = 4
EVERY = 457
"""Days per time point: four of them cover the calendar."""
START = FIRST_DATE_SK - 1
"""The cycle's origin ``t_0``: the cycle covers the date keys in ``(START, START + 4·EVERY]``."""
END = START + POINTS * EVERY
RETURN_LAG = 180
"""The most days a return lands after its ticket (``arrival.within`` of ``store_returns``)."""

ARRIVING = ("store_sales", "store_returns")


def cache_folder(out: Path, scale: float) -> Path:
    """Where the raw TPC-DS data of ``scale`` is kept for every scenario copied beside ``out``."""
    return out.resolve().parent / ".tpcds" / f"sf{scale:g}"


def ticket_dates(sales: DataFrame) -> DataFrame:
    """Each ticket's date key (``ticket``, ``ticket_date_sk``): the one its dated lines carry."""
    return (sales.where("ss_sold_date_sk IS NOT NULL").groupBy("ss_ticket_number")
            .agg({"ss_sold_date_sk": "max"})
            .withColumnRenamed("ss_ticket_number", "ticket")
            .withColumnRenamed("max(ss_sold_date_sk)", "ticket_date_sk"))


def shaped(spark: SparkSession, raw: Path, table: str) -> DataFrame:
    """``table`` of the raw data as its scenario source (see the module docstring)."""
    frame = spark.read.parquet(str(raw / f"{table}.parquet"))
    if table not in ARRIVING:
        return frame
    dates = ticket_dates(frame if table == "store_sales" else spark.read.parquet(str(raw / "store_sales.parquet")))
    if table == "store_sales":
        joined = frame.join(dates, frame["ss_ticket_number"] == dates["ticket"])
        return joined.withColumnRenamed("ticket_date_sk", "ss_ticket_date_sk").drop("ticket")
    joined = frame.join(dates, frame["sr_ticket_number"] == dates["ticket"])
    return joined.where(
        f"sr_returned_date_sk BETWEEN ticket_date_sk AND ticket_date_sk + {RETURN_LAG} "
        f"AND sr_returned_date_sk <= {END}").drop("ticket", "ticket_date_sk")


def generate(spark: SparkSession, out: Path, scale: float, tables: tuple[str, ...]) -> dict[str, int]:
    """Write ``tables`` of TPC-DS at ``scale`` as ``out/data/<table>`` (parquet, ``store_sales``
    with ``ss_ticket_date_sk``); returns each table's row count."""
    raw = tpcds.generate(scale, cache_folder(out, scale)).parent
    counts = {}
    for table in tables:
        target = out / "data" / table
        shaped(spark, raw, table).coalesce(2 if table in ARRIVING else 1).write.mode("overwrite").parquet(str(target))
        counts[table] = spark.read.parquet(str(target)).count()
    return counts


def generator(*tables: str) -> Callable[[SparkSession, Path, float], dict[str, int]]:
    """The ``generate(spark, out, scale)`` of a TPC-DS scenario whose query reads ``tables``."""

    def generate_tables(spark: SparkSession, out: Path, scale: float) -> dict[str, int]:
        return generate(spark, out, scale, tables)

    return generate_tables
