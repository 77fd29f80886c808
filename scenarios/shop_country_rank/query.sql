WITH revenue AS (
  SELECT c.country, SUM(l.qty * l.price) AS revenue
  FROM order_lines l
  JOIN orders o ON o.order_id = l.order_id
  JOIN customers c ON c.customer_id = o.customer_id
  GROUP BY c.country)
SELECT country, revenue,
       RANK() OVER (ORDER BY revenue DESC) AS country_rank,
       revenue - LEAD(revenue) OVER (ORDER BY revenue DESC) AS ahead_of_next,
       ROUND(100 * revenue / SUM(revenue) OVER (), 2) AS share_pct
FROM revenue
