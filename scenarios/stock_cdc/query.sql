SELECT w.region, COUNT(*) AS lines, SUM(s.qty) AS units
FROM stock s JOIN warehouses w ON s.warehouse_id = w.warehouse_id
WHERE s.qty > 0
GROUP BY w.region
