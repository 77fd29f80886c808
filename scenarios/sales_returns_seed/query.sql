WITH sales_status AS (
  SELECT sales.o_id, category, price, cost
  FROM sales LEFT OUTER JOIN returns ON sales.o_id = returns.o_id)
SELECT category, SUM(IF(cost IS NULL, price, -cost)) AS gross
FROM sales_status
GROUP BY category
