"""What a check author uses: the base class and mixins every check of reframe_checks/ shares,
gathered for one import in :mod:`.api`; nothing outside the checks imports this folder."""
