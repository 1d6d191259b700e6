"""Analysis of the figure store's rows: the change detector (:mod:`.detector`),
its findings (:mod:`.findings`) and what changed at each (:mod:`.attribution`),
sessions compared with references or with each other (:mod:`.compare`), and
references derived from measured sessions (:mod:`.bless`)."""
