"""`python -m sherlock_client` is the `sherlock` command."""

import sys

from sherlock_client.cli import main

sys.exit(main())
