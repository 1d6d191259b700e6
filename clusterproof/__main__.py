"""``python -m clusterproof``: the ``clusterproof`` command
(:func:`clusterproof.cli.main`), for an interpreter whose ``bin/`` has no
``clusterproof`` on PATH."""

import sys

from clusterproof.cli import main

sys.exit(main())
