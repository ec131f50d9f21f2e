"""``python -m engine``: the headless command line (see :mod:`engine.cli`)."""

import sys

from engine.cli import main

sys.exit(main())
