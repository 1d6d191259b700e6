"""References: loading, lookup, bounds, direction and judging of reference values; bless."""
