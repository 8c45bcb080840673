"""The operators' analytics: /ask over orders (the analyst, its tools, periods, charts) and the figures
of the audit log (stats). Nothing here runs the customer turn; the turn asks the analyst for a
customer's own spending."""
