"""``python -m discoverygym.cli ...``: the same as the ``discoverygym`` command."""

import sys

from discoverygym.cli import main

sys.exit(main())
