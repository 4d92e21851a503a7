"""``python -m lmcourse.course.reference``: what ``make reference`` runs."""

import sys

from lmcourse.course.reference.scheduling import main

sys.exit(main())
