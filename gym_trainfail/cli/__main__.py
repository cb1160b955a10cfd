"""``python -m gym_trainfail.cli``: the ``trainfail`` command."""

import sys

from gym_trainfail.cli import main

sys.exit(main())
