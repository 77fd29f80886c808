select
        d_year,
        i_brand_id as brand_id,
        i_brand as brand,
        sum(ss_ext_sales_price) as ext_price
from
        date_dim,
        store_sales,
        item
where
        d_date_sk = ss_sold_date_sk
        and ss_item_sk = i_item_sk
        and i_manager_id = 1
        and d_moy = 11
group by
        d_year,
        i_brand,
        i_brand_id
order by
        d_year,
        ext_price desc,
        brand_id
