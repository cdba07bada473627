-- dialect: ksqldb
-- Inputs of the ksqlDB examples (seeds/ksqldb-join-event-streams.md, ksqldb-partition-data.md).
CREATE STREAM pageviews (userid STRING KEY, viewtime BIGINT, pageid STRING)
  WITH (kafka_topic='pageviews', value_format='JSON', partitions=2);
CREATE TABLE users (userid STRING PRIMARY KEY, regionid STRING, gender STRING)
  WITH (kafka_topic='users', value_format='JSON', partitions=2);

CREATE STREAM orders (id INT KEY, itemid STRING, amount DOUBLE)
  WITH (kafka_topic='orders', value_format='JSON', partitions=2);
CREATE STREAM payments (id INT KEY, amount DOUBLE)
  WITH (kafka_topic='payments', value_format='JSON', partitions=2);
CREATE STREAM shipments (id INT KEY, warehouse STRING)
  WITH (kafka_topic='shipments', value_format='JSON', partitions=2);

-- clicks has no key: joining it with click_users repartitions it on userId.
CREATE STREAM clicks (userId BIGINT, url STRING)
  WITH (kafka_topic='clickstream', value_format='JSON', partitions=2);
CREATE TABLE click_users (userId BIGINT PRIMARY KEY, fullName STRING)
  WITH (kafka_topic='click_users', value_format='JSON', partitions=2);

CREATE STREAM products (product_id STRING, name STRING, price DOUBLE)
  WITH (kafka_topic='products', value_format='JSON', partitions=1);

-- accounts reference their owner in users (a foreign key: accounts are keyed by accountid).
CREATE TABLE accounts (accountid STRING PRIMARY KEY, userid STRING, balance DOUBLE)
  WITH (kafka_topic='accounts', value_format='JSON', partitions=2);
