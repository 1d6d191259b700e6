"""What is published of the figures: the morning page (HTML), and the
figures sent to a time-series database as ReFrame logs them."""
