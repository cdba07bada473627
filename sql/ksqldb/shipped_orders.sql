-- dialect: ksqldb
-- 3-way stream-stream join: orders paid within 1 hour and shipped within 2 hours.
CREATE STREAM shipped_orders AS
  SELECT
     o.id as orderId,
     o.itemid as itemId,
     s.id as shipmentId,
     p.id as paymentId
  FROM orders o
     INNER JOIN payments p WITHIN 1 HOURS ON p.id = o.id
     INNER JOIN shipments s WITHIN 2 HOURS ON s.id = o.id;
