"""Built-in TPC-DS data and queries: generation through DuckDB's TPC-DS extension and a catalog for it.

The 99 queries ship with the package (``data/tpcds/queries``), in Spark SQL. Data is made by the
``dsdgen`` of the ``tpcds`` DuckDB extension, loaded from the file the ``duckdb-ext-tpcds`` package
installs (no download), and each of the 24 tables is written as one parquet file into a temporary
folder that is renamed into place only when complete, so an interrupted generation never leaves a
half-written data set behind.

Column types are those a Spark user of TPC-DS expects: every integer column, surrogate keys
(``*_sk``) included, is ``int`` (the specification's identifier and integer types; DuckDB makes
them ``BIGINT``, and the cast fails loudly should a value not fit); money is ``decimal(7,2)`` (and
the few other decimals keep the specification's precision: ``decimal(5,2)`` for GMT offsets and
tax percentages, ``decimal(15,2)`` for ``p_cost``); dates are ``date``; text is ``string``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from importlib import resources
from importlib.util import find_spec
from pathlib import Path
from typing import Any

import yaml

from tempura.errors import TempuraError

# Column types of the parquet files generate writes (checked against the files by the tests).
SCHEMA: dict[str, dict[str, str]] = {
    "call_center": {
        "cc_call_center_sk": "int", "cc_call_center_id": "string", "cc_rec_start_date": "date",
        "cc_rec_end_date": "date", "cc_closed_date_sk": "int", "cc_open_date_sk": "int", "cc_name": "string",
        "cc_class": "string", "cc_employees": "int", "cc_sq_ft": "int", "cc_hours": "string", "cc_manager": "string",
        "cc_mkt_id": "int", "cc_mkt_class": "string", "cc_mkt_desc": "string", "cc_market_manager": "string",
        "cc_division": "int", "cc_division_name": "string", "cc_company": "int", "cc_company_name": "string",
        "cc_street_number": "string", "cc_street_name": "string", "cc_street_type": "string",
        "cc_suite_number": "string", "cc_city": "string", "cc_county": "string", "cc_state": "string",
        "cc_zip": "string", "cc_country": "string", "cc_gmt_offset": "decimal(5,2)",
        "cc_tax_percentage": "decimal(5,2)",
    },
    "catalog_page": {
        "cp_catalog_page_sk": "int", "cp_catalog_page_id": "string", "cp_start_date_sk": "int",
        "cp_end_date_sk": "int", "cp_department": "string", "cp_catalog_number": "int",
        "cp_catalog_page_number": "int", "cp_description": "string", "cp_type": "string",
    },
    "catalog_returns": {
        "cr_returned_date_sk": "int", "cr_returned_time_sk": "int", "cr_item_sk": "int",
        "cr_refunded_customer_sk": "int", "cr_refunded_cdemo_sk": "int", "cr_refunded_hdemo_sk": "int",
        "cr_refunded_addr_sk": "int", "cr_returning_customer_sk": "int", "cr_returning_cdemo_sk": "int",
        "cr_returning_hdemo_sk": "int", "cr_returning_addr_sk": "int", "cr_call_center_sk": "int",
        "cr_catalog_page_sk": "int", "cr_ship_mode_sk": "int", "cr_warehouse_sk": "int", "cr_reason_sk": "int",
        "cr_order_number": "int", "cr_return_quantity": "int", "cr_return_amount": "decimal(7,2)",
        "cr_return_tax": "decimal(7,2)", "cr_return_amt_inc_tax": "decimal(7,2)", "cr_fee": "decimal(7,2)",
        "cr_return_ship_cost": "decimal(7,2)", "cr_refunded_cash": "decimal(7,2)",
        "cr_reversed_charge": "decimal(7,2)", "cr_store_credit": "decimal(7,2)", "cr_net_loss": "decimal(7,2)",
    },
    "catalog_sales": {
        "cs_sold_date_sk": "int", "cs_sold_time_sk": "int", "cs_ship_date_sk": "int", "cs_bill_customer_sk": "int",
        "cs_bill_cdemo_sk": "int", "cs_bill_hdemo_sk": "int", "cs_bill_addr_sk": "int", "cs_ship_customer_sk": "int",
        "cs_ship_cdemo_sk": "int", "cs_ship_hdemo_sk": "int", "cs_ship_addr_sk": "int", "cs_call_center_sk": "int",
        "cs_catalog_page_sk": "int", "cs_ship_mode_sk": "int", "cs_warehouse_sk": "int", "cs_item_sk": "int",
        "cs_promo_sk": "int", "cs_order_number": "int", "cs_quantity": "int", "cs_wholesale_cost": "decimal(7,2)",
        "cs_list_price": "decimal(7,2)", "cs_sales_price": "decimal(7,2)", "cs_ext_discount_amt": "decimal(7,2)",
        "cs_ext_sales_price": "decimal(7,2)", "cs_ext_wholesale_cost": "decimal(7,2)",
        "cs_ext_list_price": "decimal(7,2)", "cs_ext_tax": "decimal(7,2)", "cs_coupon_amt": "decimal(7,2)",
        "cs_ext_ship_cost": "decimal(7,2)", "cs_net_paid": "decimal(7,2)", "cs_net_paid_inc_tax": "decimal(7,2)",
        "cs_net_paid_inc_ship": "decimal(7,2)", "cs_net_paid_inc_ship_tax": "decimal(7,2)",
        "cs_net_profit": "decimal(7,2)",
    },
    "customer": {
        "c_customer_sk": "int", "c_customer_id": "string", "c_current_cdemo_sk": "int", "c_current_hdemo_sk": "int",
        "c_current_addr_sk": "int", "c_first_shipto_date_sk": "int", "c_first_sales_date_sk": "int",
        "c_salutation": "string", "c_first_name": "string", "c_last_name": "string",
        "c_preferred_cust_flag": "string", "c_birth_day": "int", "c_birth_month": "int", "c_birth_year": "int",
        "c_birth_country": "string", "c_login": "string", "c_email_address": "string", "c_last_review_date_sk": "int",
    },
    "customer_address": {
        "ca_address_sk": "int", "ca_address_id": "string", "ca_street_number": "string", "ca_street_name": "string",
        "ca_street_type": "string", "ca_suite_number": "string", "ca_city": "string", "ca_county": "string",
        "ca_state": "string", "ca_zip": "string", "ca_country": "string", "ca_gmt_offset": "decimal(5,2)",
        "ca_location_type": "string",
    },
    "customer_demographics": {
        "cd_demo_sk": "int", "cd_gender": "string", "cd_marital_status": "string", "cd_education_status": "string",
        "cd_purchase_estimate": "int", "cd_credit_rating": "string", "cd_dep_count": "int",
        "cd_dep_employed_count": "int", "cd_dep_college_count": "int",
    },
    "date_dim": {
        "d_date_sk": "int", "d_date_id": "string", "d_date": "date", "d_month_seq": "int", "d_week_seq": "int",
        "d_quarter_seq": "int", "d_year": "int", "d_dow": "int", "d_moy": "int", "d_dom": "int", "d_qoy": "int",
        "d_fy_year": "int", "d_fy_quarter_seq": "int", "d_fy_week_seq": "int", "d_day_name": "string",
        "d_quarter_name": "string", "d_holiday": "string", "d_weekend": "string", "d_following_holiday": "string",
        "d_first_dom": "int", "d_last_dom": "int", "d_same_day_ly": "int", "d_same_day_lq": "int",
        "d_current_day": "string", "d_current_week": "string", "d_current_month": "string",
        "d_current_quarter": "string", "d_current_year": "string",
    },
    "household_demographics": {
        "hd_demo_sk": "int", "hd_income_band_sk": "int", "hd_buy_potential": "string", "hd_dep_count": "int",
        "hd_vehicle_count": "int",
    },
    "income_band": {
        "ib_income_band_sk": "int", "ib_lower_bound": "int", "ib_upper_bound": "int",
    },
    "inventory": {
        "inv_date_sk": "int", "inv_item_sk": "int", "inv_warehouse_sk": "int", "inv_quantity_on_hand": "int",
    },
    "item": {
        "i_item_sk": "int", "i_item_id": "string", "i_rec_start_date": "date", "i_rec_end_date": "date",
        "i_item_desc": "string", "i_current_price": "decimal(7,2)", "i_wholesale_cost": "decimal(7,2)",
        "i_brand_id": "int", "i_brand": "string", "i_class_id": "int", "i_class": "string", "i_category_id": "int",
        "i_category": "string", "i_manufact_id": "int", "i_manufact": "string", "i_size": "string",
        "i_formulation": "string", "i_color": "string", "i_units": "string", "i_container": "string",
        "i_manager_id": "int", "i_product_name": "string",
    },
    "promotion": {
        "p_promo_sk": "int", "p_promo_id": "string", "p_start_date_sk": "int", "p_end_date_sk": "int",
        "p_item_sk": "int", "p_cost": "decimal(15,2)", "p_response_target": "int", "p_promo_name": "string",
        "p_channel_dmail": "string", "p_channel_email": "string", "p_channel_catalog": "string",
        "p_channel_tv": "string", "p_channel_radio": "string", "p_channel_press": "string",
        "p_channel_event": "string", "p_channel_demo": "string", "p_channel_details": "string", "p_purpose": "string",
        "p_discount_active": "string",
    },
    "reason": {
        "r_reason_sk": "int", "r_reason_id": "string", "r_reason_desc": "string",
    },
    "ship_mode": {
        "sm_ship_mode_sk": "int", "sm_ship_mode_id": "string", "sm_type": "string", "sm_code": "string",
        "sm_carrier": "string", "sm_contract": "string",
    },
    "store": {
        "s_store_sk": "int", "s_store_id": "string", "s_rec_start_date": "date", "s_rec_end_date": "date",
        "s_closed_date_sk": "int", "s_store_name": "string", "s_number_employees": "int", "s_floor_space": "int",
        "s_hours": "string", "s_manager": "string", "s_market_id": "int", "s_geography_class": "string",
        "s_market_desc": "string", "s_market_manager": "string", "s_division_id": "int", "s_division_name": "string",
        "s_company_id": "int", "s_company_name": "string", "s_street_number": "string", "s_street_name": "string",
        "s_street_type": "string", "s_suite_number": "string", "s_city": "string", "s_county": "string",
        "s_state": "string", "s_zip": "string", "s_country": "string", "s_gmt_offset": "decimal(5,2)",
        "s_tax_percentage": "decimal(5,2)",
    },
    "store_returns": {
        "sr_returned_date_sk": "int", "sr_return_time_sk": "int", "sr_item_sk": "int", "sr_customer_sk": "int",
        "sr_cdemo_sk": "int", "sr_hdemo_sk": "int", "sr_addr_sk": "int", "sr_store_sk": "int", "sr_reason_sk": "int",
        "sr_ticket_number": "int", "sr_return_quantity": "int", "sr_return_amt": "decimal(7,2)",
        "sr_return_tax": "decimal(7,2)", "sr_return_amt_inc_tax": "decimal(7,2)", "sr_fee": "decimal(7,2)",
        "sr_return_ship_cost": "decimal(7,2)", "sr_refunded_cash": "decimal(7,2)",
        "sr_reversed_charge": "decimal(7,2)", "sr_store_credit": "decimal(7,2)", "sr_net_loss": "decimal(7,2)",
    },
    "store_sales": {
        "ss_sold_date_sk": "int", "ss_sold_time_sk": "int", "ss_item_sk": "int", "ss_customer_sk": "int",
        "ss_cdemo_sk": "int", "ss_hdemo_sk": "int", "ss_addr_sk": "int", "ss_store_sk": "int", "ss_promo_sk": "int",
        "ss_ticket_number": "int", "ss_quantity": "int", "ss_wholesale_cost": "decimal(7,2)",
        "ss_list_price": "decimal(7,2)", "ss_sales_price": "decimal(7,2)", "ss_ext_discount_amt": "decimal(7,2)",
        "ss_ext_sales_price": "decimal(7,2)", "ss_ext_wholesale_cost": "decimal(7,2)",
        "ss_ext_list_price": "decimal(7,2)", "ss_ext_tax": "decimal(7,2)", "ss_coupon_amt": "decimal(7,2)",
        "ss_net_paid": "decimal(7,2)", "ss_net_paid_inc_tax": "decimal(7,2)", "ss_net_profit": "decimal(7,2)",
    },
    "time_dim": {
        "t_time_sk": "int", "t_time_id": "string", "t_time": "int", "t_hour": "int", "t_minute": "int",
        "t_second": "int", "t_am_pm": "string", "t_shift": "string", "t_sub_shift": "string", "t_meal_time": "string",
    },
    "warehouse": {
        "w_warehouse_sk": "int", "w_warehouse_id": "string", "w_warehouse_name": "string", "w_warehouse_sq_ft": "int",
        "w_street_number": "string", "w_street_name": "string", "w_street_type": "string", "w_suite_number": "string",
        "w_city": "string", "w_county": "string", "w_state": "string", "w_zip": "string", "w_country": "string",
        "w_gmt_offset": "decimal(5,2)",
    },
    "web_page": {
        "wp_web_page_sk": "int", "wp_web_page_id": "string", "wp_rec_start_date": "date", "wp_rec_end_date": "date",
        "wp_creation_date_sk": "int", "wp_access_date_sk": "int", "wp_autogen_flag": "string",
        "wp_customer_sk": "int", "wp_url": "string", "wp_type": "string", "wp_char_count": "int",
        "wp_link_count": "int", "wp_image_count": "int", "wp_max_ad_count": "int",
    },
    "web_returns": {
        "wr_returned_date_sk": "int", "wr_returned_time_sk": "int", "wr_item_sk": "int",
        "wr_refunded_customer_sk": "int", "wr_refunded_cdemo_sk": "int", "wr_refunded_hdemo_sk": "int",
        "wr_refunded_addr_sk": "int", "wr_returning_customer_sk": "int", "wr_returning_cdemo_sk": "int",
        "wr_returning_hdemo_sk": "int", "wr_returning_addr_sk": "int", "wr_web_page_sk": "int", "wr_reason_sk": "int",
        "wr_order_number": "int", "wr_return_quantity": "int", "wr_return_amt": "decimal(7,2)",
        "wr_return_tax": "decimal(7,2)", "wr_return_amt_inc_tax": "decimal(7,2)", "wr_fee": "decimal(7,2)",
        "wr_return_ship_cost": "decimal(7,2)", "wr_refunded_cash": "decimal(7,2)",
        "wr_reversed_charge": "decimal(7,2)", "wr_account_credit": "decimal(7,2)", "wr_net_loss": "decimal(7,2)",
    },
    "web_sales": {
        "ws_sold_date_sk": "int", "ws_sold_time_sk": "int", "ws_ship_date_sk": "int", "ws_item_sk": "int",
        "ws_bill_customer_sk": "int", "ws_bill_cdemo_sk": "int", "ws_bill_hdemo_sk": "int", "ws_bill_addr_sk": "int",
        "ws_ship_customer_sk": "int", "ws_ship_cdemo_sk": "int", "ws_ship_hdemo_sk": "int", "ws_ship_addr_sk": "int",
        "ws_web_page_sk": "int", "ws_web_site_sk": "int", "ws_ship_mode_sk": "int", "ws_warehouse_sk": "int",
        "ws_promo_sk": "int", "ws_order_number": "int", "ws_quantity": "int", "ws_wholesale_cost": "decimal(7,2)",
        "ws_list_price": "decimal(7,2)", "ws_sales_price": "decimal(7,2)", "ws_ext_discount_amt": "decimal(7,2)",
        "ws_ext_sales_price": "decimal(7,2)", "ws_ext_wholesale_cost": "decimal(7,2)",
        "ws_ext_list_price": "decimal(7,2)", "ws_ext_tax": "decimal(7,2)", "ws_coupon_amt": "decimal(7,2)",
        "ws_ext_ship_cost": "decimal(7,2)", "ws_net_paid": "decimal(7,2)", "ws_net_paid_inc_tax": "decimal(7,2)",
        "ws_net_paid_inc_ship": "decimal(7,2)", "ws_net_paid_inc_ship_tax": "decimal(7,2)",
        "ws_net_profit": "decimal(7,2)",
    },
    "web_site": {
        "web_site_sk": "int", "web_site_id": "string", "web_rec_start_date": "date", "web_rec_end_date": "date",
        "web_name": "string", "web_open_date_sk": "int", "web_close_date_sk": "int", "web_class": "string",
        "web_manager": "string", "web_mkt_id": "int", "web_mkt_class": "string", "web_mkt_desc": "string",
        "web_market_manager": "string", "web_company_id": "int", "web_company_name": "string",
        "web_street_number": "string", "web_street_name": "string", "web_street_type": "string",
        "web_suite_number": "string", "web_city": "string", "web_county": "string", "web_state": "string",
        "web_zip": "string", "web_country": "string", "web_gmt_offset": "decimal(5,2)",
        "web_tax_percentage": "decimal(5,2)",
    },
}

TABLES = tuple(SCHEMA)

CATALOG_FILE = "catalog.yaml"

QUERY_COUNT = 99


class DataGenerationError(TempuraError):
    """TPC-DS data could not be generated."""


def query_names() -> list[str]:
    """``q01`` … ``q99``."""
    return [f"q{i:02d}" for i in range(1, QUERY_COUNT + 1)]


def query_text(name: str) -> str:
    """The text of TPC-DS query ``name`` (``q01`` … ``q99``, or ``1`` … ``99``)."""
    key = f"q{int(name.lstrip('qQ')):02d}" if name.lstrip("qQ").isdigit() else name
    if key not in query_names():
        raise TempuraError(f"unknown TPC-DS query '{name}' (expected q01 … q99)")
    return resources.files("tempura").joinpath(f"data/tpcds/queries/{key}.sql").read_text(encoding="utf-8")


def write_catalog(directory: Path) -> Path:
    """Write ``catalog.yaml`` for the parquet files in ``directory``."""
    tables = {
        name: {"path": f"{name}.parquet", "format": "parquet", "schema": SCHEMA[name]} for name in TABLES
    }
    path = directory / CATALOG_FILE
    path.write_text(yaml.safe_dump({"tables": tables}, sort_keys=False), encoding="utf-8")
    return path


def _extension(duckdb: Any, connection: Any) -> Path:
    """The ``tpcds`` extension file of the installed ``duckdb-ext-tpcds`` package, for this DuckDB
    version and platform."""
    platform = connection.sql("SELECT * FROM pragma_platform()").fetchone()[0]
    spec = find_spec("duckdb_ext")
    folders = list(spec.submodule_search_locations or []) if spec is not None else []
    for folder in folders:
        path = Path(folder) / "extensions" / f"v{duckdb.__version__}" / platform / "tpcds.duckdb_extension"
        if path.is_file():
            return path
    raise DataGenerationError(
        f"the TPC-DS extension for DuckDB {duckdb.__version__} on {platform} is not installed "
        "(pip install duckdb-ext-tpcds matching the duckdb version)"
    )


def _duckdb_type(spark_type: str) -> str:
    """The DuckDB type a column is cast to so that its parquet type reads as ``spark_type``."""
    if spark_type == "int":
        return "INTEGER"
    if spark_type == "string":
        return "VARCHAR"
    return spark_type.upper()


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _write_tables(scale: float, directory: Path) -> None:
    """Run ``dsdgen`` at ``scale`` in an in-memory DuckDB and write every table to ``directory``."""
    try:
        import duckdb
    except ImportError:
        raise DataGenerationError("duckdb is not installed (pip install duckdb duckdb-ext-tpcds)") from None
    connection = duckdb.connect(":memory:")
    try:
        extension = _extension(duckdb, connection)
        connection.execute(f"LOAD '{str(extension).replace(chr(39), chr(39) * 2)}'")
        connection.execute(f"CALL dsdgen(sf={scale!r})")
        for table in TABLES:
            columns = ", ".join(
                f"CAST({_quote(column)} AS {_duckdb_type(kind)}) AS {_quote(column)}"
                for column, kind in SCHEMA[table].items()
            )
            target = str(directory / f"{table}.parquet").replace("'", "''")
            connection.execute(f"COPY (SELECT {columns} FROM {_quote(table)}) TO '{target}' (FORMAT parquet)")
    except duckdb.Error as error:
        first = str(error).strip().splitlines()
        raise DataGenerationError(f"TPC-DS generation failed: {first[0] if first else type(error).__name__}") from None
    finally:
        connection.close()


def generate(scale: float, out: str | Path) -> Path:
    """TPC-DS at ``scale`` as parquet in ``out`` with a catalog; returns the catalog's path.

    Existing complete data in ``out`` is kept.
    """
    target = Path(out)
    if (target / CATALOG_FILE).exists() and all((target / f"{t}.parquet").exists() for t in TABLES):
        return target / CATALOG_FILE
    if scale <= 0:
        raise DataGenerationError(f"scale must be positive, got {scale}")
    if target.exists() and any(target.iterdir()):
        raise DataGenerationError(f"{target} exists and is not a TPC-DS data folder; choose an empty or new folder")
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        _write_tables(scale, staging)
        write_catalog(staging)
        if target.exists():
            target.rmdir()
        os.replace(staging, target)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return target / CATALOG_FILE
