"""``python -m routectl`` runs the command line."""

import sys

from routectl.cli.main import main

sys.exit(main())
