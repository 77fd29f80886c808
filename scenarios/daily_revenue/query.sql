SELECT order_day, category, SUM(amount) AS revenue, COUNT(*) AS orders
FROM orders
WHERE status <> 'cancelled'
GROUP BY order_day, category
