-- dialect: ksqldb
-- schedule: 0 * * * *
-- Rekey products by product_id into 6 partitions (a scheduled repartition job).
CREATE STREAM products_rekeyed WITH (PARTITIONS=6) AS SELECT * FROM products PARTITION BY product_id;
