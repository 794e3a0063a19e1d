"""``python -m routectl`` runs the command line."""

import sys

from routectl.cli import main

sys.exit(main())
