"""Acceptance against a procurement contract (``clusterproof acceptance
--contract FILE``): the contract file and its validation
(:mod:`.contract`), judging its items on the figure store's rows
(:mod:`.judge`), and the JSON acceptance record (:mod:`.record`)."""
