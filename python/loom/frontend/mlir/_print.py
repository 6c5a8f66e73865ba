"""Loom graph functions printed as TOSA (docs/tosa.md, "What it prints"):
the importer's table read backwards, in MLIR 16's generic form."""
import numpy as np

from ... import _core, transform

_ELEMENTS = {"float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64", "bool": "i1", "int8": "i8",
             "int16": "i16", "int32": "i32", "int64": "i64", "uint8": "ui8", "uint16": "ui16", "uint32": "ui32"}


class PrintError(_core.TypeError):
    """A graph Loom cannot write as TOSA (what and where)."""


def _shape(t):
    dims = []
    for d in t.shape:
        v = getattr(d, "value", None)
        if v is None:
            raise PrintError(f"a symbolic extent ({d}): to_mlir prints static shapes")
        dims.append(int(v))
    return dims


def _type(t):
    if t is None or t.type_key != "ir.TensorType":
        raise PrintError(f"a value of type {t}: to_mlir prints tensors")
    dtype = str(t.dtype)
    if dtype not in _ELEMENTS:
        raise PrintError(f"dtype {dtype} has no MLIR element type here")
    return "tensor<" + "".join(f"{d}x" for d in _shape(t)) + _ELEMENTS[dtype] + ">"


def _array(values):
    return "array<i64" + (": " + ", ".join(str(int(v)) for v in values) if len(values) else "") + ">"


def _float(v):
    text = repr(float(v))
    if text in ("inf", "-inf", "nan"):
        bits = np.array([v], np.float32).view(np.uint32)[0]
        return f"0x{bits:08X}"
    return text if ("." in text or "e" in text) else text + ".0"


def _dense(a, element):
    """dense<...> of array a: a splat, a list, or hex past 16 elements."""
    if element == "bf16":
        a = a.view(np.uint16) if a.dtype != np.uint16 else a
    if a.size > 16 and a.dtype.kind != "b":
        return f'dense<"0x{np.ascontiguousarray(a).tobytes().hex().upper()}">'
    flat = a.reshape(-1)
    if element == "bf16":
        text = [f"0x{int(v):04X}" for v in flat]
    elif a.dtype.kind == "f":
        text = [_float(v) for v in flat]
    elif a.dtype.kind == "b":
        text = ["true" if v else "false" for v in flat]
    else:
        text = [str(int(v)) for v in flat]
    if len(set(text)) == 1 and a.size >= 1:
        return f"dense<{text[0]}>"

    def nest(items, shape):
        if not shape:
            return items[0]
        n = len(items) // shape[0]
        return "[" + ", ".join(nest(items[k * n:(k + 1) * n], shape[1:]) for k in range(shape[0])) + "]"
    return "dense<" + nest(text, list(a.shape)) + ">"


class _Printer:
    def __init__(self):
        self.lines, self.names, self.count = [], {}, 0

    def fresh(self):
        name = f"%{self.count}"
        self.count += 1
        return name

    def emit(self, name, operands, attrs, result_type, operand_types):
        out = self.fresh()
        attr_text = " {" + ", ".join(f"{k} = {v}" for k, v in sorted(attrs.items())) + "}" if attrs else ""
        self.lines.append(f'    {out} = "{name}"({", ".join(operands)}){attr_text} : '
                          f'({", ".join(operand_types)}) -> {result_type}')
        return out

    def const(self, array, element=None, shape=None):
        array = np.asarray(array)
        if shape is not None:
            array = array.reshape(shape)
        element = element or _ELEMENTS[str(array.dtype)]
        t = "tensor<" + "".join(f"{d}x" for d in array.shape) + element + ">"
        return self.emit("tosa.const", [], {"value": f"{_dense(array, element)} : {t}"}, t, []), t


def print_module(module):
    module = transform.get_pass("InferType")(module)
    out = ["module {"]
    for name, f in sorted(module.functions.items(), key=lambda kv: str(kv[0])):
        if f.type_key != "graph.Function":
            raise PrintError(f"@{name} is a {f.type_key}: to_mlir prints graph functions")
        out.extend(_function(str(getattr(name, "name", name)), f))
    out.append("}")
    return "\n".join(out) + "\n"


def _uses(body):
    """How many times each expression is read."""
    counts, seen, stack = {}, set(), [body]
    while stack:
        for child in _children(stack.pop()):
            k = _key(child)
            counts[k] = counts.get(k, 0) + 1
            if k not in seen:
                seen.add(k)
                stack.append(child)
    return counts


def _key(e):
    return (e.type_key, hash(e))


def _children(e):
    if e.type_key == "graph.Call":
        return list(e.args)
    if e.type_key == "graph.Let":
        return [e.value, e.body]
    if e.type_key == "graph.Tuple":
        return list(e.__getattr__("fields"))  # (Object.fields is the method listing fields)
    return []


def _function(name, f):
    p = _Printer()
    params = []
    for k, v in enumerate(f.params):
        arg = f"%arg{k}"
        p.names[_key(v)] = arg
        params.append(f"{arg}: {_type(v.checked_type)}")
    body, uses = f.body, _uses(f.body)
    while body.type_key == "graph.Let":  # let-bound values are printed where they are bound
        p.names[_key(body.var)] = _value(p, body.value, uses)
        body = body.body
    results = list(body.__getattr__("fields")) if body.type_key == "graph.Tuple" else [body]
    names = [_value(p, r, uses) for r in results]
    types = [_type(r.checked_type) for r in results]
    ret = types[0] if len(types) == 1 else "(" + ", ".join(types) + ")"
    lines = [f"  func.func @{name}({', '.join(params)}) -> {ret} {{"] + p.lines
    lines.append(f"    return {', '.join(names)} : {', '.join(types)}")
    lines.append("  }")
    return lines


def _attrs(call):
    return {k: (list(v) if hasattr(v, "__len__") and not isinstance(v, str) else v) for k, v in dict(call.attrs).items()}


def _value(p, e, uses):
    k = _key(e)
    if k in p.names:
        return p.names[k]
    name = _emit(p, e, uses)
    p.names[k] = name
    return name


def _ints(v, n):
    v = [int(x) for x in v]
    return v * n if len(v) == 1 else v


def _tosa_pads(padding):
    """Loom's padding (1, 2 or 4 ints: top, left, bottom, right) as TOSA's
    [top, bottom, left, right]."""
    p = [int(x) for x in padding]
    if len(p) == 1:
        p = p * 4
    elif len(p) == 2:
        p = [p[0], p[1], p[0], p[1]]
    top, left, bottom, right = p
    return [top, bottom, left, right]


def _emit(p, e, uses):
    if e.type_key == "graph.Constant":
        return p.const(e.data.numpy(), _ELEMENTS.get(str(e.checked_type.dtype)))[0]
    if e.type_key != "graph.Call" or e.callee.type_key != "ir.Op":
        raise PrintError(f"a {e.type_key}: to_mlir prints operator calls, constants and parameters")
    name, a, args = e.callee.name, _attrs(e), list(e.args)
    out_t = _type(e.checked_type)
    arg_t = [_type(x.checked_type) for x in args]

    def operands():
        return [_value(p, x, uses) for x in args]

    if name == "add" and args[0].type_key == "graph.Call" and args[0].callee.type_key == "ir.Op" and \
            args[0].callee.name in ("conv2d", "dense") and uses.get(_key(args[0]), 0) == 1:
        channels = _shape(args[0].checked_type)[-1]
        if _shape(args[1].checked_type) == [channels]:
            return _product(p, args[0], uses, bias=args[1])
    if name in ("conv2d", "dense"):
        return _product(p, e, uses)
    if name == "matmul":
        if a.get("transpose_a") or a.get("transpose_b") or a.get("out_dtype") or len(_shape(e.checked_type)) != 3:
            raise PrintError("matmul: TOSA's is rank 3 without transposes")
        return p.emit("tosa.matmul", operands(), {}, out_t, arg_t)
    if name in ("add", "subtract", "multiply"):
        ops, types = _same_rank(p, args, uses)
        attrs = {"shift": "0 : i32"} if name == "multiply" else {}
        return p.emit({"add": "tosa.add", "subtract": "tosa.sub", "multiply": "tosa.mul"}[name], ops, attrs, out_t,
                      types)
    if name in ("clip", "relu"):
        lo, hi = (float(a["a_min"]), float(a["a_max"])) if name == "clip" else (0.0, float(np.finfo(np.float32).max))
        big = float(2 ** 63 - 1)
        attrs = {"min_fp": f"{_float(lo)} : f32", "max_fp": f"{_float(hi)} : f32",
                 "min_int": f"{int(max(lo, -big))} : i64", "max_int": f"{int(min(hi, big))} : i64"}
        return p.emit("tosa.clamp", operands(), attrs, out_t, arg_t)
    if name == "reshape":
        return p.emit("tosa.reshape", operands(), {"new_shape": _array(_shape(e.checked_type))}, out_t, arg_t)
    if name == "transpose":
        axes = a.get("axes") or list(reversed(range(len(_shape(args[0].checked_type)))))
        perms, perms_t = p.const(np.array(axes, np.int32))
        return p.emit("tosa.transpose", operands() + [perms], {}, out_t, arg_t + [perms_t])
    if name in ("max_pool2d", "avg_pool2d"):
        if a.get("layout", "NCHW") != "NHWC" or a.get("ceil_mode") or any(int(d) != 1 for d in a.get("dilation", [1])):
            raise PrintError(f"{name}: TOSA's is NHWC, without dilation or ceil mode")
        pads = _tosa_pads(a.get("padding", [0]))
        if name == "avg_pool2d" and a.get("count_include_pad") and any(pads):
            raise PrintError("avg_pool2d: TOSA's average leaves the padding out of the count")
        attrs = {"kernel": _array(_ints(a["pool_size"], 2)), "stride": _array(_ints(a.get("strides", [1]), 2)),
                 "pad": _array(pads)}
        return p.emit("tosa." + name, operands(), attrs, out_t, arg_t)
    if name in ("sum", "max"):
        axes = [int(x) for x in a.get("axis", [])]
        rank = len(_shape(args[0].checked_type))
        if len(axes) != 1 or not a.get("keepdims"):
            raise PrintError(f"{name}: TOSA reduces one axis and keeps it")
        return p.emit("tosa.reduce_" + name, operands(), {"axis": f"{axes[0] % rank} : i64"}, out_t, arg_t)
    if name in ("exp", "rsqrt", "tanh", "sigmoid"):
        return p.emit("tosa." + name, operands(), {}, out_t, arg_t)
    if name == "divide" and args[0].type_key == "graph.Constant" and args[0].data.numpy().size == 1 and \
            float(args[0].data.numpy().reshape(-1)[0]) == 1.0:
        return p.emit("tosa.reciprocal", [_value(p, args[1], uses)], {}, out_t, [arg_t[1]])
    if name == "concat":
        return p.emit("tosa.concat", operands(), {"axis": f"{int(a.get('axis', 0)) % len(_shape(e.checked_type))} : i64"},
                      out_t, arg_t)
    if name == "pad":
        if a.get("mode", "constant") != "constant":
            raise PrintError(f"pad: mode {a['mode']}: TOSA pads with a constant")
        widths = np.array([int(x) for x in a["pad_width"]], np.int64).reshape(-1, 2)
        padding, padding_t = p.const(widths)
        ops, types = operands() + [padding], arg_t + [padding_t]
        value = float(a.get("pad_value", 0.0))
        if value != 0.0:
            dtype = str(e.checked_type.dtype)
            c, c_t = p.const(np.array(value, dtype), _ELEMENTS[dtype])
            ops, types = ops + [c], types + [c_t]
        return p.emit("tosa.pad", ops, {}, out_t, types)
    if name == "slice":
        return _slice(p, e, a, args, uses, out_t, arg_t)
    if name == "cast":
        x = args[0]
        # The importer's float-to-integer cast: round, then cast.
        if x.type_key == "graph.Call" and x.callee.type_key == "ir.Op" and x.callee.name == "round" and \
                uses.get(_key(x), 0) == 1:
            return p.emit("tosa.cast", [_value(p, x.args[0], uses)], {}, out_t, [_type(x.args[0].checked_type)])
        return p.emit("tosa.cast", operands(), {}, out_t, arg_t)
    raise PrintError(f"operator {name} has no TOSA counterpart here (docs/tosa.md lists what to_mlir prints)")


def _same_rank(p, args, uses):
    """Operands of an elementwise op at one rank (TOSA broadcasts only
    extents of 1): a lower-rank one reshaped with leading 1s."""
    rank = max(len(_shape(x.checked_type)) for x in args)
    ops, types = [], []
    for x in args:
        shape = _shape(x.checked_type)
        name, t = _value(p, x, uses), _type(x.checked_type)
        if len(shape) < rank:
            full = [1] * (rank - len(shape)) + shape
            new_t = t.replace("tensor<" + "".join(f"{d}x" for d in shape), "tensor<" + "".join(f"{d}x" for d in full))
            name = p.emit("tosa.reshape", [name], {"new_shape": _array(full)}, new_t, [t])
            t = new_t
        ops.append(name)
        types.append(t)
    return ops, types


def _slice(p, e, a, args, uses, out_t, arg_t):
    shape = _shape(args[0].checked_type)
    out = _shape(e.checked_type)
    axes = [int(x) for x in a.get("axes", [])] or list(range(len(a["begin"])))
    if any(int(s) != 1 for s in a.get("strides", [])):
        raise PrintError("slice: TOSA's has unit strides")
    start = [0] * len(shape)
    for axis, b in zip(axes, a["begin"]):
        b = int(b)
        start[axis % len(shape)] = max(0, min(b + shape[axis % len(shape)] if b < 0 else b, shape[axis % len(shape)]))
    return p.emit("tosa.slice", [_value(p, args[0], uses)], {"start": _array(start), "size": _array(out)}, out_t,
                  arg_t)


def _product(p, e, uses, bias=None):
    """conv2d (NHWC/OHWI, ordinary or depthwise) or dense as TOSA's, with
    its bias operand (zeros when it has none)."""
    a, args = _attrs(e), list(e.args)
    name = e.callee.name
    out_shape = _shape(e.checked_type)
    channels = out_shape[-1]
    dtype = str(e.checked_type.dtype)
    if a.get("out_dtype"):
        raise PrintError(f"{name} with out_dtype: quantized TOSA is not printed")
    if bias is not None:
        b, b_t = _value(p, bias, uses), _type(bias.checked_type)
    else:
        b, b_t = p.const(np.zeros(channels, dtype), _ELEMENTS[dtype])
    x, x_t = _value(p, args[0], uses), _type(args[0].checked_type)
    out_t = _type(e.checked_type)  # the bias's add has the product's type
    if name == "dense":
        if len(_shape(args[0].checked_type)) != 2:
            raise PrintError("dense: TOSA's fully_connected takes rank 2")
        w, w_t = _value(p, args[1], uses), _type(args[1].checked_type)
        return p.emit("tosa.fully_connected", [x, w, b], {}, out_t, [x_t, w_t, b_t])
    if a.get("data_layout", "NCHW") != "NHWC" or a.get("kernel_layout", "OIHW") != "OHWI":
        raise PrintError(f"conv2d in {a.get('data_layout', 'NCHW')}/{a.get('kernel_layout', 'OIHW')}: TOSA's is "
                         "NHWC/OHWI (ConvertLayout, or conv2d(..., data_layout='NHWC', kernel_layout='OHWI'))")
    attrs = {"pad": _array(_tosa_pads(a.get("padding", [0]))), "stride": _array(_ints(a.get("strides", [1]), 2)),
             "dilation": _array(_ints(a.get("dilation", [1]), 2))}
    groups = int(a.get("groups", 1))
    w_shape = _shape(args[1].checked_type)
    if groups == 1:
        w, w_t = _value(p, args[1], uses), _type(args[1].checked_type)
        return p.emit("tosa.conv2d", [x, w, b], attrs, out_t, [x_t, w_t, b_t])
    c = _shape(args[0].checked_type)[-1]
    o, kh, kw, i = w_shape
    if groups != c or i != 1:
        raise PrintError(f"conv2d with groups={groups}: TOSA has ordinary and depthwise convolutions")
    m = o // c
    if args[1].type_key != "graph.Constant":
        raise PrintError("a depthwise conv2d whose weight is not a constant")
    w = args[1].data.numpy().reshape(c * m, kh, kw).transpose(1, 2, 0).reshape(kh, kw, c, m)
    w, w_t = p.const(np.ascontiguousarray(w), _ELEMENTS[dtype])
    return p.emit("tosa.depthwise_conv2d", [x, w, b], attrs, out_t, [x_t, w_t, b_t])
