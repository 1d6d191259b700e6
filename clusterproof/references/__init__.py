"""References: loading, lookup, bounds, direction and judging of reference
values (deriving them from measured sessions is :mod:`clusterproof.analysis.bless`)."""
