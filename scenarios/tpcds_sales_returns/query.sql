select
        i_category,
        sum(ss_net_paid - coalesce(sr_return_amt, 0)) as net_sales
from
        store_sales
        left outer join store_returns
                on ss_ticket_number = sr_ticket_number
                and ss_item_sk = sr_item_sk
        join item
                on ss_item_sk = i_item_sk
group by
        i_category
