"""Results presented: the HTML report, the acceptance table, and figures sent
to a time-series database."""
