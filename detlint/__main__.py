import sys

from detlint.cli import main

sys.exit(main())
