-- dialect: ksqldb
-- clicks has no key, so the join repartitions it on userId (internal repartition topic).
-- A persistent join query projects its key (users.userId, the join key).
CREATE STREAM clicks_enriched AS
  SELECT users.userId, clicks.url, users.fullName
  FROM clicks JOIN click_users users ON clicks.userId = users.userId
  EMIT CHANGES;
