"""Acceptance (``clusterproof acceptance``): a contract judged item by item,
the contract a file (``--contract FILE``) or made from a system's declared
references (``--system S``). The contract and its validation
(:mod:`.contract`), running what it names (:mod:`.run`), judging its items
on the figure store's rows (:mod:`.judge`), the JSON acceptance record
(:mod:`.record`) and the report its parties sign (:mod:`.report`)."""
