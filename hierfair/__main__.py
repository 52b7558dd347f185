"""``python -m hierfair`` is the ``hierfair`` command."""

import sys

from hierfair.cli import main

sys.exit(main())
