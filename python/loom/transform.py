"""Passes (docs/python.md, "Passes"): the registry, Sequential, passes
written in Python, PassContext and instruments.

A Python pass is a `loom.transform.Pass` like any C++ pass: it runs in a
Sequential, under a PassContext with its instruments, and (registered by
name, the default) a YAML pipeline or `get_pass` can name it.
"""
import inspect

from . import _core

Pass = _core.Pass
PassInfo = _core.PassInfo
PassContext = _core.PassContext
TimingInstrument = _core.TimingInstrument
DumpIR = _core.DumpIR
LogInstrument = _core.LogInstrument
PassInstrument = _core.PassInstrument


def get_pass(name):
    """The registered pass `name` (loading its plugin); LookupError with a
    suggestion when there is none."""
    return _core.get_pass(name)


def list_passes():
    """Every pass registered or provided by a discovered plugin."""
    return list(_core.list_passes())


def list_properties():
    """The IR properties pass contracts name: a dict per property (name,
    summary, established_by, auto_establish, checked, owner)."""
    return list(_core.list_properties())


def Sequential(passes, name="Sequential"):
    """Runs `passes` (Pass objects or registered names) in order, with
    their required passes first, skipping those above the opt level or
    disabled in the PassContext."""
    items = []
    for p in passes:
        if not isinstance(p, (str, Pass)):
            raise _core.TypeError(f"Sequential takes passes or pass names, got {type(p).__name__}")
        items.append(get_pass(p) if isinstance(p, str) else p)
    return _core.sequential(items, name)


def _options(options):
    """{name: (type, default[, doc])} or [(name, type, default, doc)]."""
    out = []
    items = options.items() if isinstance(options, dict) else ((o[0], o[1:]) for o in options)
    for name, spec in items:
        spec = tuple(spec)
        if len(spec) not in (2, 3):
            raise _core.TypeError(f"pass option '{name}': give (type, default) or (type, default, doc)")
        out.append((name, spec[0], spec[1], spec[2] if len(spec) == 3 else ""))
    return out


def _declare(kind, target, opt_level, name, required, summary, options, register, override, make, contract):
    name = name or target.__name__
    doc = inspect.getdoc(target) or ""
    needs, establishes, preserves = (list(c) for c in contract)
    info = _core.make_pass_info(name, opt_level, list(required), summary or doc.split("\n")[0], _options(options or {}),
                                needs, establishes, preserves)
    if inspect.isclass(target):
        method = f"transform_{kind}"
        if not callable(getattr(target, method, None)):
            raise _core.TypeError(f"a {kind} pass class needs a method {method}")

        def make_pass(*args, **kwargs):
            """An instance of the class as a Pass (arguments go to the class)."""
            return make(getattr(target(*args, **kwargs), method), info)
        default = []

        def run_default(*args):
            if not default:  # a registered class runs one instance made without arguments
                default.append(getattr(target(), method))
            return default[0](*args)
        registered = make(run_default, info)
        make_pass.__name__ = target.__name__
        make_pass.__doc__ = target.__doc__
        make_pass.pass_info = info
        result = make_pass
    else:
        registered = result = make(target, info)
    if register:
        _core.register_pass(registered, override)
    return result


def module_pass(target=None, *, opt_level=0, name=None, required=(), summary=None, options=None, register=True,
                override=False, needs=(), establishes=(), preserves=()):
    """Makes a module pass of `fn(module, context) -> module`, or of a class
    with `transform_module(self, module, context)` (then calling the class
    makes a Pass).  Registered under `name` (the function's or class's
    name by default) unless register=False; replacing a registered name
    needs override=True.  `options` declares config keys NAME.OPTION:
    {"option": (type, default, doc)}, read with context.get_config.
    `needs`, `establishes` and `preserves` name IR properties
    (list_properties(); "*" in preserves: all): the pass's contract,
    checked by the pass manager (docs/passes.md, "Pass contracts").
    Use bare (@module_pass) or with arguments (@module_pass(opt_level=1))."""
    def wrap(t):
        return _declare("module", t, opt_level, name, required, summary, options, register, override,
                        _core.make_module_pass, (needs, establishes, preserves))
    return wrap(target) if target is not None else wrap


_VARIANTS = {"graph": "graph.Function", "prim": "tir.PrimFunc", "extern": "ir.ExternFunc"}


def function_pass(target=None, *, opt_level=0, name=None, required=(), summary=None, options=None, register=True,
                  override=False, variant="graph", needs=(), establishes=(), preserves=()):
    """As module_pass, for `fn(function, module, context) -> function`
    applied to each function of one variant ("graph", "prim", "extern" or
    a type key); functions of other variants are left alone.  A class
    defines transform_function(self, function, module, context)."""
    key = _VARIANTS.get(variant, variant)

    def wrap(t):
        return _declare("function", t, opt_level, name, required, summary, options, register, override,
                        lambda body, info: _core.make_function_pass(body, info, key), (needs, establishes, preserves))
    return wrap(target) if target is not None else wrap
