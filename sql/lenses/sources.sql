-- dialect: lenses
-- Inputs of the Lenses examples (seeds/lenses-joins.md): customers and their orders.
CREATE TABLE customers (_key INT PRIMARY KEY, id INT, name STRING)
  WITH (kafka_topic='lenses_customers', value_format='JSON', partitions=1);
CREATE STREAM customer_orders_in (_key INT KEY, customer_id INT, item STRING)
  WITH (kafka_topic='lenses_orders', value_format='JSON', partitions=1);
