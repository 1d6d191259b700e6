"""Results presented: the HTML report, and figures sent
to a time-series database."""
