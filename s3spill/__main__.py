import sys

from s3spill.cli import main

sys.exit(main())
