-- dialect: ksqldb
-- clicks has no key, so the join repartitions it on userId (internal repartition topic).
CREATE STREAM clicks_enriched AS
  SELECT clicks.url, users.fullName
  FROM clicks JOIN click_users users ON clicks.userId = users.userId
  EMIT CHANGES;
