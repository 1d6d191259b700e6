"""Results: the results database, comparisons, acceptance and the HTML report."""
