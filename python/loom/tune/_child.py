"""The measuring process of loom.tune (measure.child_main): python -m loom.tune._child [LOCK]."""
import sys

from loom.tune.measure import child_main

if __name__ == "__main__":
    child_main(sys.argv[1] if len(sys.argv) > 1 else None)
