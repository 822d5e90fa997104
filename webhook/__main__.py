"""`python -m webhook` is the `pod-tailor` command."""

import sys

from webhook.commands import main

sys.exit(main())
