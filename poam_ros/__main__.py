"""``python3 -m poam_ros``: the ``poam-ros`` command, without relying on the scripts PATH."""

import sys

from poam_ros.cli import main

sys.exit(main())
