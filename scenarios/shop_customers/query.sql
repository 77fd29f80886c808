SELECT COUNT(DISTINCT customer_id) AS customers, COUNT(*) AS orders
FROM orders
