SELECT product_id, MIN(price) AS best, MAX(price) AS top, COUNT(*) AS offers
FROM offers
GROUP BY product_id
