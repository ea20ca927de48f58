"""``python -m hf_textcluster.cli``: the same entry point as the ``hf-textcluster`` command."""

import sys

from . import main

sys.exit(main())
