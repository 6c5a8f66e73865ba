"""`python3 -m loom.frontend import MODEL -o OUT.loom`: what `loomc
import` runs (docs/frontends.md, "From the command line").

Imports an ONNX model (.onnx) with loom.frontend.onnx.from_onnx, a
TorchScript file (.pt, .pth: torch.jit.save's) with
loom.frontend.torchscript.from_torchscript, or a TOSA function (.mlir)
with loom.frontend.mlir.from_tosa, weights as constants, and writes it
with loom.ir.save: the text to OUT, the weights over 1 KiB as raw bytes to
OUT.weights.  --shape NAME=D0,D1,... fixes an input's shape (for ONNX, a
dimension that is a name stays symbolic; TorchScript needs every input's,
as integers: the importer runs the model once on random float32 inputs of
those shapes).  --report prints where each TorchScript node went.
--converters FILE.py (repeatable) runs a file of the user's converters
(`@converter` for ONNX, `@aten` for aten operators) before importing.
Exit status: 0 written, 1 an error (one line on stderr), 2 a usage
error.
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
                                     description="Import an ONNX model, a TorchScript file or a TOSA function "
                                                 "(.mlir) as a Loom module file.")
    parser.add_argument("model", help="the .onnx file, a .pt/.pth file torch.jit.save wrote, or a .mlir file of TOSA")
    parser.add_argument("-o", "--output", required=True, help="the .loom file to write (weights go to OUTPUT.weights)")
    parser.add_argument("--shape", type=_shape, action="append", default=[], metavar="NAME=D0,D1,...",
                        help="an input's shape; a dimension given by a name stays symbolic")
    parser.add_argument("--report", action="store_true",
                        help="TorchScript: print which nodes Loom compiles and which stay TorchScript")
    parser.add_argument("--converters", action="append", default=[], metavar="FILE.py",
                        help="a Python file of converters to register first (repeatable; docs/frontends.md)")
    args = parser.parse_args(argv)
    torchscript = args.model.endswith((".pt", ".pth"))
    tosa = args.model.endswith(".mlir")
    if not args.model.endswith(".onnx") and not torchscript and not tosa:
        parser.error(f"{args.model}: loomc import reads ONNX models (.onnx), TorchScript files (.pt, .pth) and "
                     "TOSA functions (.mlir); import a PyTorch module from Python with loom.frontend.fx.from_fx")
    import loom
    try:
        for path in args.converters:
            _load_converters(path)
        if torchscript:
            module = _torchscript(args)
        elif tosa:
            from loom.frontend import mlir
            if args.shape:
                raise loom.TypeError(f"{args.model}: --shape is for ONNX and TorchScript; a TOSA function's "
                                     "types give its shapes")
            module = mlir.from_tosa(args.model)
        else:
            from loom.frontend import onnx as lonnx
            module = lonnx.from_onnx(args.model, dict(args.shape) or None)
        loom.ir.save(module, args.output)
    except loom.LoomError as e:
        print(f"loomc import: {e}", file=sys.stderr)
        return 1
    weights = pathlib.Path(args.output + ".weights")
    stored = f", weights in {weights} ({weights.stat().st_size / 2**20:.1f} MiB)" if weights.exists() else ""
    print(f"{args.output}: {len(module.functions)} function{'s' if len(module.functions) != 1 else ''}{stored}")
    return 0


def _load_converters(path):
    """Runs a file of converters (it registers them as it is imported)."""
    import importlib.util
    import loom
    file = pathlib.Path(path)
    if not file.is_file():
        raise loom.LoomError(f"--converters {path}: no such file")
    spec = importlib.util.spec_from_file_location(f"loom_user_converters_{file.stem}", file)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except loom.LoomError as e:
        raise loom.LoomError(f"--converters {path}: {e}") from None
    except Exception as e:  # the user's code: its error, located
        import traceback
        where = traceback.extract_tb(e.__traceback__)[-1]
        raise loom.LoomError(f"--converters {path}:{where.lineno}: {type(e).__name__}: {e}") from None


def _torchscript(args):
    import loom
    import torch
    from loom.frontend.torchscript import from_torchscript
    if not pathlib.Path(args.model).is_file():
        raise loom.TypeError(f"{args.model}: cannot read: no such file")
    try:
        scripted = torch.jit.load(args.model)
    except Exception as e:  # libtorch's errors come as RuntimeError or ValueError
        raise loom.TypeError(f"{args.model}: not a TorchScript file torch.jit.load reads: "
                             f"{str(e).splitlines()[0]}") from None
    names = [a.name for a in scripted.forward.schema.arguments[1:]]
    shapes = dict(args.shape)
    missing = [n for n in names if n not in shapes]
    symbolic = [n for n, dims in shapes.items() if not all(isinstance(d, int) for d in dims)]
    if missing or symbolic or set(shapes) - set(names):
        raise loom.TypeError(f"{args.model}: a TorchScript file needs each input's shape: --shape NAME=D0,D1,... "
                             f"with integers for each of {', '.join(names)}")
    generator = torch.Generator().manual_seed(0)
    examples = [torch.randn(*shapes[n], generator=generator) for n in names]
    module, report = from_torchscript(scripted, examples, report=True)
    if args.report:
        print(report)
    return module


if __name__ == "__main__":
    argv = sys.argv[1:]
    if not argv or argv[0] != "import":
        sys.exit("usage: python3 -m loom.frontend import MODEL.onnx|MODEL.pt|MODEL.mlir -o OUT.loom "
                 "[--shape NAME=D0,D1,...] "
                 "[--report] [--converters FILE.py]")
    sys.exit(main(argv[1:]))
