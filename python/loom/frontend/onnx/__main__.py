"""python3 -m loom.frontend.onnx --table: the supported operators as Markdown."""
import sys

from . import _table

if sys.argv[1:] == ["--table"]:
    print(_table())
else:
    sys.exit("usage: python3 -m loom.frontend.onnx --table")
