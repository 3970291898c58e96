"""``python -m kafka_ops.emulator run|fault ...``: the emulator's command (see ``cli``)."""

import sys

from kafka_ops.emulator.cli import main

sys.exit(main())
