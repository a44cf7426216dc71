"""`python -m bench`: replog's batch walk and record decode side by side with its peers."""
from __future__ import annotations

import sys

from bench.run import main

if __name__ == "__main__":
    sys.exit(main())
