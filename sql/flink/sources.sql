-- dialect: flink
-- Inputs of the Flink event-time temporal join (seeds/flink-joins-in-continuous-queries.md).
CREATE TABLE orders_f (
  order_id STRING,
  product_id STRING,
  order_time TIMESTAMP(3),
  WATERMARK FOR order_time AS order_time
) WITH ('connector' = 'kafka', 'topic' = 'flink_orders', 'value.format' = 'json');

CREATE TABLE product_changelog (
  product_id STRING,
  product_name STRING,
  product_price DECIMAL(10, 4),
  -- The samples are upserts in plain JSON, so a version's time is the record's timestamp (a
  -- Debezium changelog would read the database's time: METADATA FROM 'value.source.timestamp'
  -- with 'value.format' = 'debezium-json', as the document writes it; docs/formats.md).
  update_time TIMESTAMP(3) METADATA FROM 'timestamp' VIRTUAL,
  PRIMARY KEY(product_id) NOT ENFORCED,
  WATERMARK FOR update_time AS update_time
) WITH ('connector' = 'kafka', 'topic' = 'flink_products', 'value.format' = 'json');

-- Price quotes per product, an append-only stream (the right side of the ASOF join).
CREATE TABLE quotes_f (
  product_id STRING,
  price DECIMAL(10, 4),
  quote_time TIMESTAMP(3),
  WATERMARK FOR quote_time AS quote_time
) WITH ('connector' = 'kafka', 'topic' = 'flink_quotes', 'value.format' = 'json');
