-- dialect: sqlstream
-- Each order matched with the prices of the same ticker in the minute before (windows per side).
SELECT STREAM rowtime, sp.ticker, oq.quantity, sp.ending_price
  FROM order_quantity OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS oq
  JOIN stock_price OVER (RANGE INTERVAL '1' MINUTE PRECEDING) AS sp
  ON (oq.ticker = sp.ticker);
