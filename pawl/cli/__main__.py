"""``python -m pawl.cli``: the same as the ``pawl`` command."""

import sys

from pawl.cli.main import main

sys.exit(main())
