"""``python -m hierfair`` is the ``hierfair`` command."""

import signal
import sys


def _stopped(signum: int, frame: object) -> None:
    # stopped while Python still imports the command: one line, no traceback
    # (main() installs its own handling once it runs)
    print(f"hierfair: {'terminated' if signum == signal.SIGTERM else 'interrupted'}",
          file=sys.stderr)
    sys.exit(128 + signum)


signal.signal(signal.SIGINT, _stopped)
signal.signal(signal.SIGTERM, _stopped)

from hierfair.cli import main  # noqa: E402

sys.exit(main())
