-- dialect: ksqldb
-- Stream-table enrichment: every page view with its user's region and gender (LEFT: views of
-- unknown users are kept with NULLs).
CREATE STREAM pageviews_enriched AS
  SELECT
     users.userid AS userid,
     pageid,
     regionid,
     gender
  FROM pageviews
    LEFT JOIN users ON pageviews.userid = users.userid
  EMIT CHANGES;
