SELECT p.product_id, p.name, p.category,
       SUM(l.qty * l.price) - COALESCE(SUM(r.amount), 0) AS net_revenue
FROM order_lines l
JOIN products p ON p.product_id = l.product_id
LEFT JOIN refunds r ON r.line_id = l.line_id
GROUP BY p.product_id, p.name, p.category
ORDER BY net_revenue DESC, p.product_id
LIMIT 10
