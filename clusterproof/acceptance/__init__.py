"""Acceptance against a procurement contract (``clusterproof acceptance
--contract FILE``): the contract file and its validation
(:mod:`.contract`), judging its items on the figure store's rows
(:mod:`.judge`), the JSON acceptance record (:mod:`.record`) and the
report its parties sign (:mod:`.report`)."""
