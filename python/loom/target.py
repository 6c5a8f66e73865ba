"""Targets (docs/python.md, "Targets"; docs/configuration.md): a target is a
kind plus attributes, checked against the kind's schema and validation
when it is made; the kind's traits say what passes and the runtime ask of
it (vector width, native intrinsics, threads, device, default pipeline).
Kinds come from plugins, loaded when first named."""
from . import _core


def Target(kind, **attrs):
    """A target of `kind` (a loom.Object with fields kind and attrs, every
    attribute of the kind's schema filled in).  Attribute names use '_'
    for '-' (num_threads=2 for num-threads).  Unknown attributes suggest
    the closest; wrong types name the expected one."""
    return _core.make_target(kind, {name.replace("_", "-"): value for name, value in attrs.items()})


def host():
    """The machine Loom runs on: kind "cpu" with mcpu "native"."""
    return _core.target_host()


def list_kinds():
    """Names of the target kinds registered or provided by a discovered plugin."""
    return list(_core.list_target_kinds())


def kind_info(kind):
    """A kind's declaration: name, doc, owner, attributes ((name, type,
    default, doc) tuples) and traits (native_intrinsics, threads_attr,
    device, default_pipeline, codegen_needs)."""
    return _core.target_kind_info(kind)


def vector_bits(target):
    """The target's vector width in bits (its kind's trait; 128 without one)."""
    return _core.target_vector_bits(target)


def num_threads(target):
    """The target's thread count (0: one per core)."""
    return _core.target_num_threads(target)


def native_intrinsics(target):
    """The intrinsics the target's codegen implements natively, sorted: its
    kind's native_intrinsics and those its CPU adds (target_intrinsics:
    dot2_bf16 for llvm on a CPU with AVX-512 BF16, dot4_u8i8 on one with
    AVX-512 VNNI or AVX-VNNI)."""
    return _core.target_native_intrinsics(target)


def cpu_features(target):
    """The CPU features of the target that graph passes choose kernels by,
    sorted (llvm on x86: amx-tile, amx-bf16, amx-int8, which AMXMatmul
    needs; docs/low-precision.md, "AMX")."""
    return _core.target_cpu_features(target)
