-- dialect: lenses
-- Every order with its customer's name; an order that arrives before its customer is emitted
-- with a NULL name and re-emitted when the customer arrives (Lenses LEFT JOIN semantics).
WITH customersTable AS (SELECT TABLE * FROM customers);
WITH ordersStream AS (SELECT STREAM * FROM customer_orders_in);

INSERT INTO customer_orders
SELECT STREAM
    customersTable.name
  , ordersStream.item
FROM
    ordersStream LEFT JOIN customersTable
        ON customersTable.id = ordersStream.customer_id;
