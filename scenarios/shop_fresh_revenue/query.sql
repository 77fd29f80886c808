SELECT date_trunc('HOUR', o.order_ts) AS order_hour, SUM(l.qty * l.price) AS revenue, COUNT(*) AS lines
FROM orders o
JOIN order_lines l ON l.order_id = o.order_id
GROUP BY date_trunc('HOUR', o.order_ts)
