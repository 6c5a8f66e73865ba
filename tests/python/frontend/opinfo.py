"""PyTorch's operator database (OpInfo, `op_db` of
torch.testing._internal.common_methods_invocations) through
`loom.torch.compile` (docs/extern-torchscript.md, "OpInfo"): for each
operator, the first float32 sample whose arguments are tensors and plain
Python values, called by a module whose forward takes the sample's
tensors; compiled (traced), run, and compared with PyTorch on the same
inputs (allclose at 1e-4 relative, 1e-5 absolute; shapes and dtypes
equal).

    python3 tests/python/frontend/opinfo.py [NAME...]

prints each operator's result and the counts.  test_opinfo.py runs them.
"""
import collections
import sys
import warnings

PASS, REFUSED, WRONG, SKIPPED = "pass", "refused", "wrong", "skipped"
# Operators whose values no two runs agree on -- random numbers, or memory
# left uninitialised (empty) -- so there is nothing to compare: skipped.
UNDETERMINED = {"empty", "new_empty", "empty_like", "new_empty_strided", "empty_strided","randn", "randn_like", "rand_like", "randint", "randint_like", "normal", "bernoulli", "multinomial",
          "nn.functional.rrelu", "nn.functional.dropout", "nn.functional.dropout2d", "nn.functional.dropout3d",
          "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout", "uniform", "exponential",
          "geometric", "cauchy", "log_normal"}


def _expecttest():
    """PyTorch's test utilities import `expecttest` (a PyPI package Debian
    does not ship) for a TestCase base op_db never uses: unittest's stands
    in for it."""
    import types
    import unittest
    if "expecttest" not in sys.modules:
        try:
            import expecttest  # noqa: F401
        except ImportError:
            stand_in = types.ModuleType("expecttest")
            stand_in.TestCase = unittest.TestCase
            stand_in.ACCEPT = False
            sys.modules["expecttest"] = stand_in


def operators():
    """[(name, OpInfo)] of every operator with a float32 sample."""
    import torch
    _expecttest()
    from torch.testing._internal.common_methods_invocations import op_db
    out = []
    for info in op_db:
        if torch.float32 not in info.supported_dtypes("cpu"):
            continue
        name = info.name + (f".{info.variant_test_name}" if info.variant_test_name else "")
        out.append((name, info))
    return out


def _sample(info):
    """The first float32 sample whose arguments are tensors (alone or in
    lists) and Python values, or None."""
    import torch
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            for sample in info.sample_inputs("cpu", torch.float32, requires_grad=False):
                if not isinstance(sample.input, (torch.Tensor, list, tuple)):
                    continue
                if any(isinstance(v, torch.Tensor) for v in sample.kwargs.values()):
                    continue
                return sample
        except Exception:  # noqa: BLE001 (a generator of PyTorch 1.13's that Python 3.11 breaks: random.sample)
            return None
    return None


def module_for(info, sample):
    """A module whose forward takes the sample's tensors (those inside a
    list argument too, which it puts back in their list)."""
    import torch
    args = [sample.input] + list(sample.args)
    tensors = []
    shape = []  # per argument: None (a constant), "t" (a tensor) or a list of them
    for a in args:
        if isinstance(a, torch.Tensor):
            shape.append("t")
            tensors.append(a)
        elif isinstance(a, (list, tuple)) and a and all(isinstance(t, torch.Tensor) for t in a):
            shape.append(len(a))
            tensors.extend(a)
        else:
            shape.append(None)
    kwargs = dict(sample.kwargs)
    op = info.op

    class Op(torch.nn.Module):
        def forward(self, *given):
            full, k = [], 0
            for a, kind in zip(args, shape):
                if kind is None:
                    full.append(a)
                elif kind == "t":
                    full.append(given[k])
                    k += 1
                else:
                    full.append(list(given[k:k + kind]))
                    k += kind
            return op(*full, **kwargs)
    return Op().eval(), tensors


def _flat(value):
    import torch
    if isinstance(value, torch.Tensor):
        yield value
    elif isinstance(value, (tuple, list)):
        for v in value:
            yield from _flat(v)


def check(info):
    """(result, detail) for one operator."""
    import torch
    import loom
    import loom.torch as ltorch
    if info.name in UNDETERMINED:
        return SKIPPED, "random numbers or uninitialised memory"
    sample = _sample(info)
    if sample is None:
        return SKIPPED, "no float32 sample of tensors and plain values"
    module, tensors = module_for(info, sample)
    with torch.no_grad():
        try:
            want = list(_flat(module(*tensors)))
        except Exception as e:  # noqa: BLE001 (the sample does not run in PyTorch itself)
            return SKIPPED, f"PyTorch: {type(e).__name__}"
    if not want or any(w.is_complex() for w in want):
        return SKIPPED, "no tensor result, or a complex one"
    if any(w.layout != torch.strided for w in want):
        return SKIPPED, "a sparse result"
    with torch.no_grad():
        again = list(_flat(module(*tensors)))
    if any(not torch.equal(a.nan_to_num(), w.nan_to_num()) for a, w in zip(again, want)):
        return SKIPPED, "random: PyTorch's own two calls differ"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compiled = ltorch.compile(module, tensors)
            got = list(_flat(compiled(*tensors)))
    except loom.LoomError as e:
        return REFUSED, str(e).splitlines()[0][:200]
    if len(got) != len(want):
        return WRONG, f"{len(got)} results, PyTorch gives {len(want)}"
    for g, w in zip(got, want):
        if g.shape != w.shape or g.dtype != w.dtype:
            return WRONG, f"{tuple(g.shape)} {g.dtype}, PyTorch's {tuple(w.shape)} {w.dtype}"
        if w.dtype.is_floating_point:
            ok = torch.allclose(g, w, rtol=1e-4, atol=1e-5, equal_nan=True)
        else:
            ok = torch.equal(g, w)
        if not ok:
            return WRONG, "values differ"
    return PASS, ""


def main(argv):
    counts = collections.Counter()
    for name, info in operators():
        if argv and not any(a == name or a == info.name for a in argv):
            continue
        try:
            result, detail = check(info)
        except Exception as e:  # noqa: BLE001 (a crash of the harness or of Loom: reported as such)
            result, detail = "CRASH", f"{type(e).__name__}: {str(e).splitlines()[0][:200] if str(e) else ''}"
        counts[result] += 1
        print(f"{name}: {result}{': ' + detail if detail else ''}", flush=True)
    print(", ".join(f"{v} {k}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    import pathlib
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / "python"))
    main(sys.argv[1:])
