"""Quantized ONNX models for the tests, and their reference.

quantized_model(name) makes a torchvision model quantized as a user would:
random weights, batch norm statistics from random batches (so activations
keep their scale through the network), torch.ao.quantization's FX mode
calibrated on random inputs, and torch.onnx.export, which writes the QDQ
form (DequantizeLinear -> Conv -> QuantizeLinear).

evaluate(model, x) runs such a graph with NumPy as an integer kernel
computes it: a Conv or Gemm whose operands are both dequantized sums the
integers exactly (PyTorch's functional convolution in float64 on integer
values, exact below 2^53) and scales the sum once by sx * sw in float32;
a mean over whole axes of dequantized integers that a QuantizeLinear
requantizes sums them exactly and rounds S * (sx / (sy * n)) once (as
QDQToInteger and ONNX Runtime's QLinearGlobalAveragePool do);
everything else is the QDQ equations in float32.  The tests ask Loom to
agree within one quantization step of each output.""" 
import io

import numpy as np

SIZE = 64  # the images' height and width: small enough for the tests


def quantized_model(name, seed=0, calibration=4, size=SIZE):
    """(ONNX bytes, the float torch model, the quantized torch model), for
    size x size images."""
    import torch
    import torchvision
    from torch.ao.quantization import get_default_qconfig_mapping
    from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx
    torch.manual_seed(seed)
    model = getattr(torchvision.models, name)()
    for m in model.modules():  # cumulative statistics over the batches below
        if isinstance(m, torch.nn.BatchNorm2d):
            m.momentum = None
    model.train()
    with torch.no_grad():
        for _ in range(3):
            model(torch.randn(8, 3, size, size))
    model.eval()
    example = torch.randn(1, 3, size, size)
    prepared = prepare_fx(model, get_default_qconfig_mapping("fbgemm"), (example,))
    with torch.no_grad():
        for _ in range(calibration):
            prepared(torch.randn(1, 3, size, size))
    quantized = convert_fx(prepared)
    f = io.BytesIO()
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(quantized, (example,), f, opset_version=13)
    return f.getvalue(), model, quantized


def _array(tensor):
    from onnx import numpy_helper
    return numpy_helper.to_array(tensor)


def _attrs(node):
    import onnx
    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _per_axis(v, rank, axis):
    v = np.asarray(v)
    if v.ndim == 0 or v.size == 1:
        return v.reshape(())
    axis %= rank
    return v.reshape([-1] + [1] * (rank - 1 - axis))


def evaluate(model_bytes, x):
    """The graph's outputs for input x (a list): float32, or the quantized
    tensors' integer dtypes."""
    import onnx
    import torch
    import torch.nn.functional as F
    model = onnx.load_from_string(model_bytes)
    values = {i.name: _array(i) for i in model.graph.initializer}
    values[model.graph.input[0].name] = x
    dequantized = {}  # a DequantizeLinear's output -> (integers - zero point, scale as it broadcasts)
    summed = {}  # a mean of dequantized integers -> (their exact sum, the scale, the count)
    f32 = np.float32

    def t(a):
        return torch.from_numpy(np.ascontiguousarray(a, dtype=np.float64))

    def integer_operands(node):
        if all(name in dequantized for name in node.input[:2]):
            return dequantized[node.input[0]], dequantized[node.input[1]]
        return None

    for node in model.graph.node:
        a = _attrs(node)
        ins = [values[i] if i else None for i in node.input]
        op = node.op_type
        if op == "Constant":
            out = _array(a["value"])
        elif op == "Identity":
            out = ins[0]
        elif op == "Cast":
            out = ins[0].astype(onnx.mapping.TENSOR_TYPE_TO_NP_TYPE[a["to"]])
        elif op == "ConstantOfShape":
            out = np.full(tuple(ins[0]), _array(a["value"])[0])
        elif op == "QuantizeLinear":
            zp = ins[2] if len(ins) > 2 else np.uint8(0)
            rank = ins[0].ndim
            if node.input[0] in summed and ins[1].size == 1:  # S * (sx / (sy * n)), rounded once
                total, xs, n = summed[node.input[0]]
                q = np.round(f32(total) * (xs / (f32(ins[1].reshape(())) * f32(n))))
            else:
                q = np.round(f32(ins[0]) / _per_axis(ins[1], rank, a.get("axis", 1)).astype(f32))
            q = q + _per_axis(zp, rank, a.get("axis", 1)).astype(f32)
            info = np.iinfo(zp.dtype)
            out = np.clip(q, info.min, info.max).astype(zp.dtype)
        elif op == "DequantizeLinear":
            rank = ins[0].ndim
            zp = ins[2] if len(ins) > 2 else np.zeros((), ins[0].dtype)
            centred = ins[0].astype(np.int64) - _per_axis(zp, rank, a.get("axis", 1)).astype(np.int64)
            scale = _per_axis(ins[1], rank, a.get("axis", 1)).astype(f32)
            dequantized[node.output[0]] = (centred, scale)
            out = centred.astype(f32) * scale
        elif op == "Conv":
            pads = a.get("pads", [0, 0, 0, 0])
            assert pads[:2] == pads[2:], "symmetric padding only"
            window = dict(stride=a.get("strides", 1), padding=pads[:2], dilation=a.get("dilations", 1),
                          groups=a.get("group", 1))
            integers = integer_operands(node)
            if integers:
                (xi, xs), (wi, ws) = integers
                acc = F.conv2d(t(xi), t(wi), **window).numpy()
                out = f32(acc) * (f32(xs.reshape(())) * ws.reshape(-1, 1, 1))
                if len(ins) > 2:
                    out = out + ins[2].reshape(-1, 1, 1)
            else:
                y = F.conv2d(t(ins[0]), t(ins[1]), t(ins[2]) if len(ins) > 2 else None, **window)
                out = f32(y.numpy())
        elif op == "Relu":
            out = np.maximum(ins[0], 0)
        elif op == "Clip":
            out = np.clip(ins[0], ins[1] if len(ins) > 1 and ins[1] is not None else -np.inf,
                          ins[2] if len(ins) > 2 and ins[2] is not None else np.inf)
        elif op == "Add":
            out = ins[0] + ins[1]
        elif op == "Mul":
            out = ins[0] * ins[1]
        elif op == "HardSigmoid":  # torch's hardsigmoid and hardswish (x * hardsigmoid(x)) export to it
            out = np.clip(ins[0] * f32(a.get("alpha", 0.2)) + f32(a.get("beta", 0.5)), f32(0), f32(1))
        elif op == "MaxPool":
            pads = a.get("pads", [0, 0, 0, 0])
            out = F.max_pool2d(t(ins[0]), a["kernel_shape"], a.get("strides", 1), pads[:2],
                               ceil_mode=bool(a.get("ceil_mode", 0))).numpy()
        elif op in ("GlobalAveragePool", "ReduceMean"):
            axes = (2, 3) if op == "GlobalAveragePool" else tuple(a.get("axes", range(ins[0].ndim)))
            keep = op == "GlobalAveragePool" or bool(a.get("keepdims", 1))
            if node.input[0] in dequantized and dequantized[node.input[0]][1].size == 1:
                # An integer kernel's mean of dequantized integers: their
                # exact sum, scaled once (requantized once by the
                # QuantizeLinear after it, below).
                xi, xs = dequantized[node.input[0]]
                total = xi.sum(axis=axes, keepdims=keep)
                n = int(np.prod([xi.shape[k] for k in axes]))
                summed[node.output[0]] = (total, xs.reshape(()), n)
            out = ins[0].mean(axis=axes, keepdims=keep, dtype=f32)
        elif op == "Sigmoid":
            out = f32(1) / (f32(1) + np.exp(-ins[0]))
        elif op == "Flatten":
            out = ins[0].reshape(ins[0].shape[0], -1)
        elif op == "Gemm":
            integers = integer_operands(node)
            transposed = a.get("transB", 0)
            if integers:
                (xi, xs), (wi, ws) = integers
                acc = xi @ (wi.T if transposed else wi)
                out = f32(acc) * (f32(xs.reshape(())) * ws.reshape(-1))
            else:
                out = ins[0] @ (ins[1].T if transposed else ins[1])
            out = out + (ins[2] if len(ins) > 2 else f32(0))
        else:
            raise NotImplementedError(op)
        values[node.output[0]] = out
    return [values[o.name] for o in model.graph.output]


def output_step(model_bytes):
    """The scale of the DequantizeLinear that makes the graph's output: one
    quantization step of it."""
    import onnx
    model = onnx.load_from_string(model_bytes)
    producers = {o: n for n in model.graph.node for o in n.output}
    constants = {i.name: _array(i) for i in model.graph.initializer}
    constants.update({n.output[0]: _array(_attrs(n)["value"]) for n in model.graph.node if n.op_type == "Constant"})
    node = producers[model.graph.output[0].name]
    while node.op_type != "DequantizeLinear":
        node = producers[node.input[0]]
    return float(constants[node.input[1]])


def with_int8_activations(model_bytes):
    """The same model with int8 activations, as ONNX Runtime's quantizer
    writes them by default: every uint8 zero point (the activations'; the
    weights are int8) becomes the int8 zero point z - 128, so each
    QuantizeLinear gives its uint8 value minus 128 and each
    DequantizeLinear the same real values as before."""
    import onnx
    from onnx import numpy_helper
    model = onnx.load_from_string(model_bytes)
    zero_points = {n.input[2] for n in model.graph.node
                   if n.op_type in ("QuantizeLinear", "DequantizeLinear") and len(n.input) > 2}
    for node in reversed(model.graph.node):  # torch.onnx passes them through Identity nodes
        if node.op_type == "Identity" and node.output[0] in zero_points:
            zero_points.add(node.input[0])

    def shifted(tensor):
        a = numpy_helper.to_array(tensor)
        if a.dtype != np.uint8:
            return None
        return numpy_helper.from_array((a.astype(np.int16) - 128).astype(np.int8), tensor.name)

    changed = 0
    for i, init in enumerate(model.graph.initializer):
        if init.name in zero_points and (new := shifted(init)) is not None:
            model.graph.initializer[i].CopyFrom(new)
            changed += 1
    for node in model.graph.node:
        if node.op_type == "Constant" and node.output[0] in zero_points:
            for attr in node.attribute:
                if attr.name == "value" and (new := shifted(attr.t)) is not None:
                    new.name = attr.t.name
                    attr.t.CopyFrom(new)
                    changed += 1
        if node.op_type == "Cast":  # torch.onnx casts the quantized activations to their dtype
            for attr in node.attribute:
                if attr.name == "to" and attr.i == onnx.TensorProto.UINT8:
                    attr.i = onnx.TensorProto.INT8
    assert changed, "no uint8 zero point found"
    # the graph's value infos named uint8 for the activations: drop them
    del model.graph.value_info[:]
    return model.SerializeToString()
