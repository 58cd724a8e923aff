import sys

from tickpar.cli import main

sys.exit(main())
