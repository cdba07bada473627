-- dialect: flink
-- Each order with the latest quote for its product at or before the order's time (ASOF JOIN,
-- RisingWave/Snowflake syntax; LEFT: an order before any quote keeps NULLs). An order is
-- emitted once both inputs' watermarks pass its time: no earlier quote can still arrive.
SELECT
  order_id,
  order_time,
  Q.quote_time AS quote_time,
  Q.price AS quote
FROM orders_f AS O
LEFT ASOF JOIN quotes_f AS Q
  MATCH_CONDITION (O.order_time >= Q.quote_time)
  ON O.product_id = Q.product_id;
