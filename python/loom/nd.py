"""Tensors (docs/python.md, "NDArray"): DLPack in and out, no copies."""
from . import _core

NDArray = _core.NDArray


def array(value, device="cpu"):
    """An NDArray over a NumPy array's memory (a copy only when NumPy
    cannot share it: read-only or not C-contiguous); with another device
    ("opencl", "opencl:1"), a copy on that device."""
    import numpy as np
    host = _core.ndarray_from_dlpack(value if hasattr(value, "__dlpack__") else np.asarray(value))
    return host if device in ("cpu", "cpu:0") else host.copyto(device)


def from_dlpack(value):
    """An NDArray over the memory of any DLPack producer (NumPy, PyTorch)."""
    return _core.ndarray_from_dlpack(value)


def empty(shape, dtype="float32"):
    """A new host array whose elements are not initialised (as
    numpy.empty)."""
    return _core.ndarray_empty(list(shape), _core.DataType(str(dtype)))


def zeros(shape, dtype="float32"):
    """A new host array of zeros."""
    return _core.ndarray_zeros(list(shape), _core.DataType(str(dtype)))
