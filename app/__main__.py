"""``python -m app``: start Counterbias Studio."""

import sys

from app.main import main

sys.exit(main())
