-- dialect: sqlstream
-- Inputs of the s-Server stock examples (seeds/sqlstream-join-clause.txt).
CREATE STREAM order_quantity (order_time TIMESTAMP, ticker VARCHAR(5), quantity INTEGER);
CREATE STREAM stock_price (order_time TIMESTAMP, ticker VARCHAR(5), ending_price INTEGER);
