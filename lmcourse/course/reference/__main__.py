"""``python -m lmcourse.course.reference``: what ``make reference`` runs."""

import sys

from lmcourse.course.reference.scheduling import main

if __name__ == "__main__":  # importing this module (pkgutil.walk_packages does) runs nothing
    sys.exit(main())
