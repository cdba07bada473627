-- dialect: flink
-- Each order with the product price valid at the order's time (event-time temporal join).
SELECT
  order_id,
  order_time,
  product_name,
  P.update_time AS product_time,
  P.product_price AS price
FROM orders_f AS O
LEFT JOIN product_changelog FOR SYSTEM_TIME AS OF O.order_time AS P
ON O.product_id = P.product_id;
