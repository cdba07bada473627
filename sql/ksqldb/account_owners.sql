-- dialect: ksqldb
-- Foreign-key table-table join: every account with its owner's region, keyed by accountid.
-- accounts and users are partitioned by different keys, so every task reads users whole; an
-- owner's update reaches all of their accounts, and an account that changes owner drops the old
-- one (LEFT: an account whose owner is unknown keeps NULLs).
CREATE TABLE account_owners AS
  SELECT a.accountid, a.userid, a.balance, u.regionid
  FROM accounts a
    LEFT JOIN users u ON a.userid = u.userid
  EMIT CHANGES;
