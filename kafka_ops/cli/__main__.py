"""``python -m kafka_ops.cli``: the same as the ``kafka-ops`` console script."""

import sys

from kafka_ops.cli import main

sys.exit(main())
