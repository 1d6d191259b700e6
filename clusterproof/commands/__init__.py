"""Commands: one module per ``clusterproof`` subcommand, which parses its arguments and prints;
the logic it calls lives in the other folders."""
