"""`python -m pbs_harness` runs the CLI."""

import sys

from pbs_harness.cli import main

sys.exit(main())
