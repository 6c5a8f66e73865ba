"""`python3 -m loom.frontend import MODEL.onnx -o OUT.loom`: what
`loomc import` runs (docs/frontends.md, "From the command line").

Imports an ONNX model with loom.frontend.onnx.from_onnx, weights as
constants, and writes it with loom.ir.save: the text to OUT, the weights
over 1 KiB as raw bytes to OUT.weights.  --shape NAME=D0,D1,... fixes an
input's shape (a dimension that is a name stays symbolic).  Exit status: 0
written, 1 an error (one line on stderr), 2 a usage error.
"""
import argparse
import pathlib
import sys


def _shape(text):
    name, sep, dims = text.partition("=")
    if not sep or not name or not dims:
        raise argparse.ArgumentTypeError(f"'{text}' is not NAME=D0,D1,...")
    shape = []
    for d in dims.split(","):
        d = d.strip()
        if d.isdigit():
            shape.append(int(d))
        elif d.isidentifier():
            shape.append(d)
        else:
            raise argparse.ArgumentTypeError(f"'{text}': dimension '{d}' is neither a count nor a name")
    return name, tuple(shape)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="loomc import",
                                     description="Import an ONNX model as a Loom module file.")
    parser.add_argument("model", help="the .onnx file")
    parser.add_argument("-o", "--output", required=True, help="the .loom file to write (weights go to OUTPUT.weights)")
    parser.add_argument("--shape", type=_shape, action="append", default=[], metavar="NAME=D0,D1,...",
                        help="an input's shape; a dimension given by a name stays symbolic")
    args = parser.parse_args(argv)
    if not args.model.endswith(".onnx"):
        parser.error(f"{args.model}: loomc import reads ONNX models (.onnx); import a PyTorch module from "
                     "Python with loom.frontend.torch.from_fx")
    import loom
    from loom.frontend import onnx as lonnx
    try:
        module = lonnx.from_onnx(args.model, dict(args.shape) or None)
        loom.ir.save(module, args.output)
    except loom.LoomError as e:
        print(f"loomc import: {e}", file=sys.stderr)
        return 1
    weights = pathlib.Path(args.output + ".weights")
    stored = f", weights in {weights} ({weights.stat().st_size / 2**20:.1f} MiB)" if weights.exists() else ""
    print(f"{args.output}: {len(module.functions)} function{'s' if len(module.functions) != 1 else ''}{stored}")
    return 0


if __name__ == "__main__":
    argv = sys.argv[1:]
    if not argv or argv[0] != "import":
        sys.exit("usage: python3 -m loom.frontend import MODEL.onnx -o OUT.loom [--shape NAME=D0,D1,...]")
    sys.exit(main(argv[1:]))
