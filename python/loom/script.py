"""Hybrid script (docs/hybrid-script.md): IR written as a subset of Python.

    from loom import script as S

    @S.ir_module
    class Model:
        @S.graph_func
        def main(x: S.Tensor((4, 8), "float32")):
            return S.op.relu(x)

A function's body is read from its Python source (inspect + ast), never
run: each construct is translated into the IR text format, which the
core's parser reads, so the script means exactly what the text means.
Errors point at the Python file, line and column.  `mod.script(format=
"python")` prints any module as script (loom/_script_print.py).
"""
import ast
import inspect
import json
import textwrap

import numpy as np

from . import _core
from . import ir as _ir
from . import nd as _nd
from . import op as _op

__all__ = ["ir_module", "graph_func", "prim_func", "extern", "from_source", "Tensor", "Buffer", "op", "meta"]

# ---- names a script uses: Python evaluates annotations, decorators and a
# ---- class body, so these exist; the translator reads the source instead.


class _Marker:
    """What S.Tensor(...), S.Buffer(...), S.Tuple(...), ... evaluate to."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class Tensor(_Marker):
    """S.Tensor((n, 4), "float32"): a tensor type; a dimension is an int, a
    shape variable's name or a prim expression as a string; None for an
    unknown rank."""


class Buffer(_Marker):
    """S.Buffer((16,), "float32", scope=..., strides=..., offset=..., data=...)."""


class Tuple(_Marker):
    """S.Tuple(T1, T2): a tuple type."""


class Func(_Marker):
    """S.Func([T1, T2], ret): a function type (ret None: none)."""


class Opaque(_Marker):
    """S.Opaque("storage"): an opaque type."""


class _Meta:
    def __getitem__(self, index):
        return _Marker(index)


meta = _Meta()
op = _op  # S.op.NAME(...) names an operator (dotted names as attributes)


class _Scalar(str):
    """S.int64, S.float32, ...: a scalar type (in annotations); S.float32(1.5)
    in a body is a typed immediate."""

    def __call__(self, *args):
        return _Marker(*args)


_SCALARS = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16", "float32",
            "float64", "bfloat16", "handle"}


def __getattr__(name):
    # S.int64, S.bool, ...: through the module's __getattr__, so the
    # module's own code keeps Python's bool.
    if name in _SCALARS:
        return _Scalar(name)
    raise AttributeError(f"module 'loom.script' has no attribute '{name}'")


def _marker(*args, **kwargs):
    return _Marker(*args, **kwargs)


dtype = device = Prim = dim = _marker
module_attrs = module_global_infos = _marker


def extern(*args, **kwargs):
    """f = S.extern(kind, convention, S.Func([...], ret), attrs={...},
    payload="...") in an @S.ir_module class: an extern function."""
    return _Marker(*args, **kwargs)


_LOOPS = {"serial": "", "parallel": " parallel", "vectorized": " vectorized", "unroll": " unrolled"}
_GRAPH_BINOPS = {ast.Add: "add", ast.Sub: "subtract", ast.Mult: "multiply", ast.Div: "divide", ast.MatMult: "matmul"}
_PRIM_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}
_COMPARE = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
_CONSTRUCTS = {ast.While: "a while loop", ast.With: "a with statement", ast.Try: "a try statement",
               ast.Lambda: "a lambda", ast.ListComp: "a list comprehension", ast.DictComp: "a dict comprehension",
               ast.SetComp: "a set comprehension", ast.GeneratorExp: "a generator expression",
               ast.AugAssign: "an augmented assignment (write x = x + y)", ast.Delete: "del",
               ast.Import: "an import", ast.ImportFrom: "an import", ast.Global: "global", ast.Nonlocal: "nonlocal",
               ast.FunctionDef: "a nested function", ast.ClassDef: "a nested class", ast.Yield: "yield",
               ast.Await: "await", ast.Starred: "*unpacking", ast.JoinedStr: "an f-string", ast.Break: "break",
               ast.Continue: "continue", ast.Raise: "raise", ast.Assert: "assert", ast.IfExp: "a conditional expression",
               ast.List: "a list", ast.Dict: "a dict", ast.Set: "a set", ast.Attribute: "an attribute",
               ast.Compare: "a comparison", ast.BoolOp: "and/or"}


class _ScriptError(Exception):
    def __init__(self, node, message):
        super().__init__(message)
        self.node, self.message = node, message


def _describe(node):
    for kind, text in _CONSTRUCTS.items():
        if isinstance(node, kind):
            return text
    return type(node).__name__


class _Source:
    """A Python source: its file name, its lines, and where the parsed text
    starts (the AST's line 1) and the columns its dedent removed."""

    def __init__(self, file, lines, first_line=1, indent=0):
        self.file, self.lines, self.first_line, self.indent = file, lines, first_line, indent

    def where(self, node):
        line = self.first_line + getattr(node, "lineno", 1) - 1
        col = getattr(node, "col_offset", 0) + self.indent
        return line, col

    def error(self, node, message, cls=None):
        line, col = self.where(node)
        text = self.lines[line - 1].rstrip("\n") if 0 < line <= len(self.lines) else ""
        return (cls or _core.ParseError)(f"{self.file}:{line}:{col + 1}: {message}\n  {text}\n  {' ' * col}^")


def _json(text):
    return json.dumps(text)


class _Translator:
    """Python AST -> IR text, for the functions of one module."""

    def __init__(self, source, scope, globals_, meta_entries=()):
        self.source, self.scope = source, scope
        self.globals = dict(globals_)  # Python name -> the function's name in the module
        self.lines = []  # (text, node)
        self.meta = list(meta_entries)  # meta[0], meta[1], ...: the script's own, then captured constants
        self.locals = {}  # Python name -> "graph", "prim", "buffer" or "block"
        self.starts = {}  # function name in the module -> (index of its first text line, its def)

    def emit(self, text, node):
        self.lines.append((text, node))

    # -- helpers --
    @staticmethod
    def is_s(node, *names):
        """Whether `node` is S.NAME (whatever the module is called: the
        attribute's name decides)."""
        return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.attr in names

    def is_meta(self, node):
        return isinstance(node, ast.Subscript) and self.is_s(node.value, "meta")

    def meta_ref(self, node):
        index = node.slice
        if not (isinstance(index, ast.Constant) and isinstance(index.value, int)):
            raise _ScriptError(node, "S.meta[N] takes an integer")
        if index.value >= len(self.meta) or index.value < 0:
            raise _ScriptError(node, f"S.meta[{index.value}]: the script's meta block has {len(self.meta)} entries")
        return f"meta[{index.value}]"

    def captured(self, node):
        if node.id in self.scope:
            return True, self.scope[node.id]
        return False, None

    def constant_meta(self, value):
        array = np.asarray(value)
        if array.dtype == np.float64 and not isinstance(value, np.ndarray):
            array = array.astype(np.float32)  # a Python float is float32, as in the builders
        self.meta.append(_nd.array(np.array(array, order="C")))  # 0-d stays 0-d
        return f"meta[{len(self.meta) - 1}]"

    def string(self, node, what):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        raise _ScriptError(node, f"{what} is a string")

    def args_of(self, call, names, required, what):
        """A call's arguments by parameter name (positional or keyword)."""
        out = dict(zip(names, call.args))
        if len(call.args) > len(names):
            raise _ScriptError(call, f"{what} takes at most {len(names)} arguments")
        for k in call.keywords:
            if k.arg not in names or k.arg in out:
                raise _ScriptError(k, f"{what} has no argument '{k.arg}' (or it is given twice)")
            out[k.arg] = k.value
        for name in required:
            if name not in out:
                raise _ScriptError(call, f"{what} needs '{name}'")
        return out

    # -- types --
    def type_text(self, node):
        if isinstance(node, ast.Constant) and node.value is None:
            return "none"
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Attribute) and self.is_s(node, *_SCALARS):
            return node.attr
        if self.is_meta(node):
            return self.meta_ref(node)
        if isinstance(node, ast.Call):
            f = node.func
            if self.is_s(f, "Tensor"):
                a = self.args_of(node, ["shape", "dtype"], ["shape"], "S.Tensor")
                shape = a["shape"]
                dims = "?" if isinstance(shape, ast.Constant) and shape.value is None else self.dims(shape)
                dtype = self.string(a["dtype"], "a dtype") if "dtype" in a else "float32"
                return f"Tensor[{dims}, {dtype}]"
            if self.is_s(f, "Buffer"):
                return self.buffer_text(node)
            if self.is_s(f, "Tuple"):
                fields = [self.type_text(t) for t in node.args]
                return "(" + ", ".join(fields) + ("," if len(fields) == 1 else "") + ")"
            if self.is_s(f, "Func"):
                a = self.args_of(node, ["params", "ret"], ["params"], "S.Func")
                if not isinstance(a["params"], (ast.List, ast.Tuple)):
                    raise _ScriptError(a["params"], "S.Func's parameters are a list of types")
                params = ", ".join(self.type_text(t) for t in a["params"].elts)
                ret = self.type_text(a["ret"]) if "ret" in a else "none"
                return f"fn({params}) -> {ret}"
            if self.is_s(f, "Opaque"):
                return f"Opaque[{_json(self.string(node.args[0], 'an opaque type name'))}]"
            if self.is_s(f, "dtype"):
                return self.string(node.args[0], "a dtype")
        raise _ScriptError(node, "a type is S.Tensor((dims), dtype), S.Buffer((dims), dtype), S.Tuple(...), "
                                 f"S.Func([...], ret), S.Opaque(name) or a scalar type such as S.int64, got "
                                 f"{ast.unparse(node)}")

    def dims(self, node):
        if not isinstance(node, (ast.Tuple, ast.List)):
            raise _ScriptError(node, "a shape is a tuple: (16,) or (n, 4)")
        return "(" + ", ".join(self.dim(d) for d in node.elts) + ")"

    def dim(self, node):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                expr = ast.parse(node.value.strip(), mode="eval").body
            except SyntaxError:
                raise _ScriptError(node, f"'{node.value}' is not an expression")
            ast.copy_location(expr, node)
            for child in ast.walk(expr):
                ast.copy_location(child, node)
            return self.prim_expr(expr, free=True)
        return self.prim_expr(node, free=True)

    def buffer_text(self, node):
        a = self.args_of(node, ["shape", "dtype", "scope", "strides", "offset", "data"], ["shape"], "S.Buffer")
        parts = [self.dims(a["shape"]), self.string(a["dtype"], "a dtype") if "dtype" in a else "float32"]
        if "strides" in a:
            parts.append(f"strides={self.dims(a['strides'])}")
        if "offset" in a:
            parts.append(f"offset={self.dim(a['offset'])}")
        if "scope" in a:
            parts.append(f"scope={_json(self.string(a['scope'], 'a scope'))}")
        if "data" in a:
            data = self.string(a["data"], "the data variable")
            self.locals.setdefault(data, "prim")
            parts.append(f"data=%{data}")
        return f"Buffer[{', '.join(parts)}]"

    # -- attribute values --
    def value(self, node):
        if isinstance(node, ast.Constant):
            v = node.value
            if v is None:
                return "none"
            if isinstance(v, bool):
                return "true" if v else "false"
            if isinstance(v, (int, float)):
                return repr(v)
            if isinstance(v, str):
                return _json(v)
        if isinstance(node, (ast.List, ast.Tuple)):
            return "[" + ", ".join(self.value(e) for e in node.elts) + "]"
        if isinstance(node, ast.Dict):
            items = []
            for k, v in zip(node.keys, node.values):
                key = self.string(k, "a map's key") if k is not None else None
                if key is None:
                    raise _ScriptError(node, "a map's keys are strings")
                items.append(f"{_json(key)}: {self.value(v)}")
            return "{" + ", ".join(items) + "}"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
            return "-" + self.value(node.operand)
        if self.is_meta(node):
            return self.meta_ref(node)
        if isinstance(node, ast.Call) and self.is_s(node.func, "device"):
            return f"device({_json(self.string(node.args[0], 'a device'))})"
        if isinstance(node, ast.Call) and self.is_s(node.func, "dim") and len(node.args) == 1:
            return self.dim(node.args[0])  # a dimension: arange(extent=S.dim("n"))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float" \
                and len(node.args) == 1:
            return f"float({_json(self.string(node.args[0], 'a special float'))})"  # float("nan")
        if isinstance(node, ast.Call) and self.is_s(node.func, "Prim"):
            return f"Prim[{self.string(node.args[0], 'a dtype')}]"
        if isinstance(node, ast.Call) and self.is_s(node.func, "Tensor", "Tuple", "Func", "Opaque", "dtype"):
            return self.type_text(node)
        if isinstance(node, ast.Name):
            found, v = self.captured(node)
            if found and isinstance(v, (bool, int, float, str)) or (found and v is None):
                return self.value(ast.Constant(v))
        raise _ScriptError(node, f"an attribute value is a literal (number, string, bool, None, list, dict), a type, "
                                 f"S.dtype/S.device/S.dim/S.meta[N], got {ast.unparse(node)}")

    # -- functions --
    def check_args(self, fn):
        a = fn.args
        if a.vararg or a.kwarg or a.kwonlyargs or a.posonlyargs or a.defaults:
            raise _ScriptError(fn, "a script function takes plain positional parameters only")

    def decorator_options(self, fn):
        """attrs= and name= of @S.graph_func(...) / @S.prim_func(...)."""
        for d in fn.decorator_list:
            if isinstance(d, ast.Call) and self.is_s(d.func, "graph_func", "prim_func"):
                a = self.args_of(d, ["attrs", "name"], [], f"@S.{d.func.attr}")
                attrs = f" attrs {self.value(a['attrs'])}" if "attrs" in a else ""
                return attrs
        return ""

    def global_ref(self, py_name):
        name = self.globals[py_name]
        plain = name and all(c.isalnum() or c in "_." for c in name)
        return "@" + (name if plain else _json(name))

    @staticmethod
    def body_of(fn):
        body = list(fn.body)
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                and isinstance(body[0].value.value, str):
            body = body[1:]  # the docstring
        return body

    def graph_function(self, fn, name):
        self.starts[self.globals[name]] = (len(self.lines), fn)
        self.check_args(fn)
        self.locals = {}
        params = []
        for a in fn.args.args:
            params.append(f"%{a.arg}: {self.type_text(a.annotation)}" if a.annotation is not None else f"%{a.arg}")
            self.locals[a.arg] = "graph"
        ret = f" -> {self.type_text(fn.returns)}" if fn.returns is not None else ""
        self.emit(f"{self.global_ref(name)} = fn({', '.join(params)}){ret}{self.decorator_options(fn)} {{", fn)
        self.graph_block(self.body_of(fn), fn)
        self.emit("}", fn)

    def prim_function(self, fn, name):
        self.starts[self.globals[name]] = (len(self.lines), fn)
        self.check_args(fn)
        self.locals = {}
        params = []
        for a in fn.args.args:  # scalars first: buffer shapes may name them
            if a.annotation is None:
                raise _ScriptError(a, f"parameter '{a.arg}' of a prim function needs a type (S.Buffer or a scalar)")
            is_buffer = isinstance(a.annotation, ast.Call) and self.is_s(a.annotation.func, "Buffer")
            self.declare(a.arg, "buffer" if is_buffer else "prim")
        for a in fn.args.args:
            params.append(f"%{a.arg}: {self.type_text(a.annotation)}")
        ret = f" -> {self.type_text(fn.returns)}" if fn.returns is not None else ""
        self.emit(f"{self.global_ref(name)} = prim_func({', '.join(params)}){ret}{self.decorator_options(fn)} {{", fn)
        self.prim_block(self.body_of(fn))
        self.emit("}", fn)

    def declare(self, name, kind):
        """A prim name; a buffer's data variable is NAME_data (the text
        format's default) unless data= names another."""
        self.locals[name] = kind
        if kind == "buffer":
            self.locals.setdefault(f"{name}_data", "prim")

    # -- graph bodies --
    @staticmethod
    def graph_target(stmt):
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            return stmt.targets[0].id
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
            return stmt.target.id
        return None

    def graph_block(self, body, owner):
        if not body:
            raise _ScriptError(owner, "a graph function's body ends with return")
        for stmt in body[:-1]:
            name = self.graph_target(stmt) if isinstance(stmt, (ast.Assign, ast.AnnAssign)) else None
            if name is not None:
                value = stmt.value
                annotation = ""
                if isinstance(stmt, ast.AnnAssign):
                    annotation = ": " + self.type_text(stmt.annotation)
                if isinstance(value, ast.Call) and self.is_s(value.func, "let"):
                    # y = S.let(e): a graph.Let, y's scope the rest of the body
                    if len(value.args) != 1 or value.keywords:
                        raise _ScriptError(value, "S.let(e) takes one expression")
                    self.emit(f"let %{name}{annotation} = {self.graph_expr(value.args[0])};", stmt)
                else:
                    # y = e: y is the value e itself, shared by its uses (no node)
                    if annotation:
                        raise _ScriptError(stmt, "an annotated binding is a let: y: T = S.let(e)")
                    self.emit(f"%{name} = {self.graph_expr(value)};", stmt)
                self.locals[name] = "graph"
            elif isinstance(stmt, ast.FunctionDef):
                # a block used as an expression: S.block(name)
                if stmt.args.args or stmt.decorator_list:
                    raise _ScriptError(stmt, "a nested def is a block: no parameters or decorators")
                self.blocks = {**getattr(self, "blocks", {}), stmt.name: stmt}
                self.locals[stmt.name] = "block"
            elif isinstance(stmt, ast.Pass):
                continue
            else:
                raise _ScriptError(stmt, f"{self.statement_name(stmt)} is not supported in a graph function "
                                         "(assignments, then return)")
        last = body[-1]
        if isinstance(last, ast.Return) and last.value is not None:
            self.emit(self.graph_expr(last.value), last)
        elif isinstance(last, ast.If) and last.orelse:
            self.emit(f"if ({self.graph_expr(last.test)}) {{", last)
            self.graph_block(last.body, last)
            self.emit("} else {", last)
            self.graph_block(last.orelse, last)
            self.emit("}", last)
        else:
            raise _ScriptError(last, "a graph function's body ends with return (or an if/else whose branches do)")

    def statement_name(self, stmt):
        if isinstance(stmt, (ast.Assign, ast.AnnAssign)):
            return "this assignment"
        if isinstance(stmt, ast.Return):
            return "return before the end"
        if isinstance(stmt, ast.For):
            return "a for loop"
        if isinstance(stmt, ast.If):
            return "an if statement before the end"
        if isinstance(stmt, ast.Expr):
            return "an expression statement"
        return _describe(stmt)

    def block_text(self, node):
        """S.block(f) -> { f's body }, or an expression as it is."""
        if isinstance(node, ast.Call) and self.is_s(node.func, "block"):
            name = node.args[0].id if node.args and isinstance(node.args[0], ast.Name) else None
            block = getattr(self, "blocks", {}).get(name)
            if block is None:
                raise _ScriptError(node, "S.block(f) names a def of this body")
            saved, self.lines = self.lines, []
            self.graph_block(self.body_of(block), block)
            inner, self.lines = self.lines, saved
            return "{ " + " ".join(t for t, _ in inner) + " }"
        return "{ " + self.graph_expr(node) + " }"

    def graph_expr(self, node):
        if isinstance(node, ast.Name):
            kind = self.locals.get(node.id)
            if kind == "graph":
                return f"%{node.id}"
            if node.id in self.globals:
                return self.global_ref(node.id)
            found, value = self.captured(node)
            if found and isinstance(value, (bool, int, float, np.ndarray, np.generic)):
                return self.constant_meta(value)
            if found:
                raise _ScriptError(node, f"'{node.id}' is a Python {type(value).__name__}; a graph function "
                                         "captures numbers and NumPy arrays")
            raise _ScriptError(node, f"undefined name '{node.id}'")
        if isinstance(node, ast.Constant):
            if isinstance(node.value, (bool, int, float)):
                return self.constant_meta(node.value)
            raise _ScriptError(node, f"a {type(node.value).__name__} constant is not a graph value")
        if isinstance(node, ast.Tuple):
            items = [self.graph_expr(e) for e in node.elts]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if self.is_meta(node):
            return self.meta_ref(node)
        if isinstance(node, ast.Subscript):
            index = node.slice
            if isinstance(index, ast.Constant) and isinstance(index.value, int) and index.value >= 0:
                base = self.graph_expr(node.value)
                if base.startswith("@"):
                    base = f"({base})"  # @f.0 would read as the global 'f.0'
                return f"{base}.{index.value}"
            raise _ScriptError(node, "a tuple item is t[N] with a non-negative integer N")
        if isinstance(node, ast.BinOp) and type(node.op) in _GRAPH_BINOPS:
            return f"{_GRAPH_BINOPS[type(node.op)]}({self.graph_expr(node.left)}, {self.graph_expr(node.right)})"
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            return f"neg({self.graph_expr(node.operand)})"
        if isinstance(node, ast.Call):
            return self.graph_call(node)
        raise _ScriptError(node, f"{_describe(node)} is not supported in a graph function")

    def op_name(self, func):
        """The operator of S.op.NAME / S.op.ns.NAME, or None."""
        parts = []
        while isinstance(func, ast.Attribute):
            parts.append(func.attr)
            func = func.value
        parts.reverse()
        if isinstance(func, ast.Name) and len(parts) >= 2 and parts[0] == "op":
            return ".".join(parts[1:])
        return None

    def call_arguments(self, node, attr_types, skip=0):
        """Positional arguments as graph expressions, keywords as attribute
        values, type_args=[...] as <T, ...>."""
        args = [self.graph_expr(a) for a in node.args[skip:]]
        type_args = ""
        for k in node.keywords:
            if k.arg is None:
                raise _ScriptError(k, "**attributes are not supported; name each attribute")
            if k.arg == "type_args":
                if not isinstance(k.value, (ast.List, ast.Tuple)):
                    raise _ScriptError(k.value, "type_args is a list of types")
                type_args = "<" + ", ".join(self.type_text(t) for t in k.value.elts) + ">"
                continue
            text = self.value(k.value)
            if attr_types.get(k.arg) == "dtype" and text.startswith('"'):
                args.append(f"{k.arg}={json.loads(text)}")  # a bare data type
            elif k.arg == "type_args":
                pass
            else:
                args.append(f"{k.arg}={text}")
        return type_args, ", ".join(args)

    def graph_call(self, node):
        func = node.func
        name = self.op_name(func)
        if name is not None:
            try:
                info = _op.info(name)
            except Exception:
                import difflib
                close = difflib.get_close_matches(name, _op.list_ops(), n=1)
                hint = f"; did you mean '{close[0]}'?" if close else ""
                raise _ScriptError(func, f"no operator '{name}'{hint}")
            type_args, args = self.call_arguments(node, {a["name"]: a["type"] for a in info["attrs"]})
            return f"{name}{type_args}({args})"
        if self.is_s(func, "call_dps", "call_packed"):
            if len(node.args) != 3 or node.keywords:
                raise _ScriptError(node, f"S.{func.attr}(out_type, callee, (args...)) takes three arguments")
            out = self.type_text(node.args[0])
            if not isinstance(node.args[2], ast.Tuple):
                raise _ScriptError(node.args[2], "the arguments are a tuple: (x,) or (x, y)")
            args = self.graph_expr(node.args[2])
            if func.attr == "call_dps":
                return f"call_dps<{out}>({self.callee(node.args[1])}, {args})"
            return f"call_packed<{out}>({args}, name={_json(self.string(node.args[1], 'the registry function'))})"
        if self.is_s(func, "if_"):
            if len(node.args) != 3:
                raise _ScriptError(node, "S.if_(cond, then, else) takes three arguments")
            return f"if ({self.graph_expr(node.args[0])}) {self.block_text(node.args[1])} else " \
                   f"{self.block_text(node.args[2])}"
        if self.is_s(func, "block"):
            return self.block_text(node)
        if self.is_s(func, "var"):
            var = self.string(node.args[0], "a variable's name")
            ann = node.args[1] if len(node.args) > 1 else ast.Constant(None)
            self.locals[var] = "graph"
            # parenthesised: a declaration may be followed by .N or a call
            if isinstance(ann, ast.Constant) and ann.value is None:
                return f"(%{var}: _)"
            return f"(%{var}: {self.type_text(ann)})"
        if self.is_s(func, "op_value"):
            return f"op({_json(self.string(node.args[0], 'an operator name'))})"
        if self.is_s(func, "global_var"):
            return "@" + _json(self.string(node.args[0], "a global name"))
        if self.is_s(func, "call"):
            if not node.args:
                raise _ScriptError(node, "S.call(callee, args...) needs a callee")
            target = node.args[0]
            try:  # the callee first: the text declares free variables at their first use
                callee = self.callee(target)
            except _ScriptError:
                callee = f"({self.graph_expr(target)})"  # any expression may be called
            type_args, args = self.call_arguments(node, {}, skip=1)
            return f"{callee}{type_args}({args})"
        callee = self.callee(func)
        type_args, args = self.call_arguments(node, {})
        return f"{callee}{type_args}({args})"

    def callee(self, func):
        if isinstance(func, ast.Name) and func.id in self.globals and self.locals.get(func.id) != "graph":
            return self.global_ref(func.id)
        if isinstance(func, ast.Attribute) and func.attr in self.globals and isinstance(func.value, ast.Name) \
                and not self.is_s(func, "op"):
            return self.global_ref(func.attr)  # Module.f
        if isinstance(func, ast.Name) and self.locals.get(func.id) == "graph":
            return f"%{func.id}"
        if isinstance(func, ast.Call) and self.is_s(func.func, "global_var", "op_value", "var"):
            return self.graph_call(func)
        if self.op_name(func) is not None:
            return self.op_name(func)
        if self.is_meta(func):
            return self.meta_ref(func)
        raise _ScriptError(func, f"{ast.unparse(func)} is not a function of the module or an operator (S.op.NAME)")

    # -- prim bodies --
    def prim_block(self, body):
        for i, stmt in enumerate(body):
            rest = body[i + 1:]
            if isinstance(stmt, ast.For):
                self.prim_for(stmt)
            elif isinstance(stmt, ast.With):
                self.prim_with(stmt)
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if isinstance(target, ast.Subscript):
                    self.emit(f"{self.prim_expr(target)} = {self.prim_expr(stmt.value)};", stmt)
                elif isinstance(target, ast.Name) and isinstance(stmt.value, ast.Call) and \
                        self.is_s(stmt.value.func, "alloc"):
                    self.prim_alloc(target.id, self.alloc_buffer(stmt.value), stmt, rest)
                    return
                elif isinstance(target, ast.Name):
                    self.prim_let(target.id, "int64", stmt.value, stmt, rest)
                    return
                else:
                    raise _ScriptError(target, "assign to a buffer element (B[i] = ...) or a name")
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value is not None:
                self.prim_let(stmt.target.id, self.type_text(stmt.annotation), stmt.value, stmt, rest)
                return
            elif isinstance(stmt, ast.If):
                self.emit(f"if {self.prim_expr(stmt.test)} {{", stmt)
                self.prim_block(stmt.body)
                if stmt.orelse:
                    self.emit("} else {", stmt)
                    self.prim_block(stmt.orelse)
                self.emit("}", stmt)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and \
                    self.is_s(stmt.value.func, "evaluate"):
                if len(stmt.value.args) != 1:
                    raise _ScriptError(stmt, "S.evaluate(e) takes one expression")
                self.emit(f"eval {self.prim_expr(stmt.value.args[0])};", stmt)
            elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call) and self.is_s(stmt.value.func, "stmt"):
                self.emit(f"{self.meta_ref(stmt.value.args[0])};", stmt)
            elif isinstance(stmt, ast.Pass):
                continue
            else:
                raise _ScriptError(stmt, f"{self.statement_name(stmt)} is not supported in a prim function")

    def alloc_buffer(self, call):
        if call.args and isinstance(call.args[0], ast.Call) and self.is_s(call.args[0].func, "Buffer"):
            return self.buffer_text(call.args[0])
        fake = ast.Call(func=ast.Attribute(value=ast.Name("S"), attr="Buffer"), args=call.args, keywords=call.keywords)
        ast.copy_location(fake, call)
        return self.buffer_text(fake)

    def prim_let(self, name, dtype, value, stmt, rest, block=None):
        self.emit(f"let %{name}: {dtype} = {self.prim_expr(value)} {{", stmt)
        self.locals[name] = "prim"
        self.prim_block(rest if block is None else block)
        self.emit("}", stmt)

    def prim_alloc(self, name, buffer, stmt, rest):
        self.emit(f"alloc %{name}: {buffer} {{", stmt)
        self.declare(name, "buffer")
        self.prim_block(rest)
        self.emit("}", stmt)

    def prim_with(self, stmt):
        """with S.alloc_buffer(...) as T / S.let_stmt(v, dtype) as x /
        S.attr(key, v) / S.seq(): the statement over the with's body."""
        if len(stmt.items) != 1 or not isinstance(stmt.items[0].context_expr, ast.Call):
            raise _ScriptError(stmt, "a with statement is S.alloc_buffer, S.let_stmt, S.attr or S.seq")
        item = stmt.items[0]
        call, target = item.context_expr, item.optional_vars
        name = target.id if isinstance(target, ast.Name) else None
        if self.is_s(call.func, "alloc_buffer", "alloc") and name:
            self.prim_alloc(name, self.alloc_buffer(call), stmt, stmt.body)
        elif self.is_s(call.func, "let_stmt") and name:
            a = self.args_of(call, ["value", "dtype"], ["value"], "S.let_stmt")
            dtype = self.type_text(a["dtype"]) if "dtype" in a else "int64"
            self.prim_let(name, dtype, a["value"], stmt, None, block=stmt.body)
        elif self.is_s(call.func, "attr") and name is None:
            a = self.args_of(call, ["key", "value"], ["key", "value"], "S.attr")
            self.emit(f"attr {_json(self.string(a['key'], 'the key'))} = {self.prim_expr(a['value'])} {{", stmt)
            self.prim_block(stmt.body)
            self.emit("}", stmt)
        elif self.is_s(call.func, "seq") and name is None:
            self.emit("seq {", stmt)
            self.prim_block(stmt.body)
            self.emit("}", stmt)
        else:
            raise _ScriptError(stmt, "a with statement is S.alloc_buffer(...) as T, S.let_stmt(value, dtype) as x, "
                                     "S.attr(key, value) or S.seq()")

    def prim_for(self, stmt):
        if stmt.orelse:
            raise _ScriptError(stmt, "for ... else is not supported")
        if not isinstance(stmt.target, ast.Name):
            raise _ScriptError(stmt.target, "a loop variable is one name")
        it = stmt.iter
        kind = None
        if isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range":
            kind = "serial"
        elif isinstance(it, ast.Call) and self.is_s(it.func, *_LOOPS, "thread_binding"):
            kind = it.func.attr
        if kind is None:
            raise _ScriptError(it, "a loop is for i in S.serial(n) (or S.parallel, S.vectorized, S.unroll, "
                                   "S.thread_binding, range)")
        args = list(it.args)
        kw = {k.arg: k.value for k in it.keywords}
        unknown = set(kw) - {"begin", "dtype", "annotations"}
        if unknown:
            raise _ScriptError(it, f"a loop takes begin=, dtype= and annotations=, not {sorted(unknown)}")
        suffix = _LOOPS.get(kind, "")
        if kind == "thread_binding":
            if len(args) != 2:
                raise _ScriptError(it, 'S.thread_binding(extent, "threadIdx.x") takes two arguments')
            suffix = f" thread({_json(self.string(args.pop(), 'the thread axis'))})"
        if "begin" in kw:
            if len(args) != 1:
                raise _ScriptError(it, "with begin=, a loop takes its extent")
            begin, extent = self.prim_expr(kw["begin"]), self.prim_expr(args[0])
        elif len(args) == 1:
            begin, extent = "0", self.prim_expr(args[0])
        elif len(args) == 2:
            begin = self.prim_expr(args[0])
            extent = f"{self.prim_expr(args[1])} - {begin}" if begin != "0" else self.prim_expr(args[1])
        else:
            raise _ScriptError(it, "a loop takes (extent) or (begin, end)")
        dtype = self.type_text(kw["dtype"]) if "dtype" in kw else "int64"
        annotations = f" annotations {self.value(kw['annotations'])}" if "annotations" in kw else ""
        name = stmt.target.id
        self.locals[name] = "prim"
        self.emit(f"for %{name}: {dtype} from {begin} extent {extent}{suffix}{annotations} {{", stmt)
        self.prim_block(stmt.body)
        self.emit("}", stmt)

    def prim_expr(self, node, free=False):
        """A prim expression; `free`: in a type's dimensions, where any name
        is a variable (the text declares it)."""
        if isinstance(node, ast.Name):
            if self.locals.get(node.id) in ("prim", "buffer") or (free and node.id not in self.scope):
                return f"%{node.id}"
            found, value = self.captured(node)
            if found and isinstance(value, bool):
                return "true" if value else "false"
            if found and isinstance(value, (int, float)):
                return self.prim_number(value)
            if free:
                return f"%{node.id}"
            raise _ScriptError(node, f"undefined name '{node.id}'")
        if isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                return "true" if node.value else "false"
            if isinstance(node.value, (int, float)):
                return self.prim_number(node.value)
            if isinstance(node.value, str):
                return _json(node.value)
        if self.is_meta(node):
            return self.meta_ref(node)
        if isinstance(node, ast.Subscript):
            if isinstance(node.value, ast.Call) and self.is_s(node.value.func, "buffer"):
                # S.buffer("C", S.Buffer(...))[i]: a buffer declared at its first use
                name = self.string(node.value.args[0], "a buffer's name")
                self.declare(name, "buffer")
                head = f"%{name}: {self.buffer_text(node.value.args[1])}"
            elif isinstance(node.value, ast.Name) and self.locals.get(node.value.id) == "buffer":
                head = f"%{node.value.id}"
            else:
                raise _ScriptError(node.value, f"{ast.unparse(node.value)} is not a buffer")
            index = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]  # B[()]: 0-d
            return f"{head}[{', '.join(self.prim_expr(i) for i in index)}]"
        if isinstance(node, ast.BinOp) and type(node.op) in _PRIM_BINOPS:
            return f"({self.prim_expr(node.left, free)} {_PRIM_BINOPS[type(node.op)]} " \
                   f"{self.prim_expr(node.right, free)})"
        if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
            return f"({self.prim_expr(node.left, free)} {_COMPARE[type(node.ops[0])]} " \
                   f"{self.prim_expr(node.comparators[0], free)})"
        if isinstance(node, ast.BoolOp):
            symbol = " && " if isinstance(node.op, ast.And) else " || "
            return "(" + symbol.join(self.prim_expr(v, free) for v in node.values) + ")"
        if isinstance(node, ast.UnaryOp):
            if isinstance(node.op, ast.Not):
                return f"!{self.prim_expr(node.operand, free)}"
            if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant):
                return self.prim_number(-node.operand.value)
            raise _ScriptError(node, "unary minus applies to a number; write 0 - e")
        if isinstance(node, ast.Call):
            return self.prim_call(node, free)
        raise _ScriptError(node, f"{_describe(node)} is not supported in a prim function")

    def prim_call(self, node, free):
        func = node.func
        args = node.args
        if self.is_s(func, "min", "max", "select", "ramp", "broadcast"):
            return f"{func.attr}({', '.join(self.prim_expr(a, free) for a in args)})"
        if self.is_s(func, "cast"):
            if len(args) != 2:
                raise _ScriptError(node, 'S.cast("float16", e) takes a dtype and a value')
            return f"cast({self.type_text(args[0])}, {self.prim_expr(args[1], free)})"
        if self.is_s(func, "call"):
            if len(args) < 2:
                raise _ScriptError(node, 'S.call("float32", "exp", args...) takes a dtype, a name and arguments')
            rest = ", ".join([self.type_text(args[0])] + [self.prim_expr(a, free) for a in args[1:]])
            return f"call({rest})"
        if self.is_s(func, "var"):
            name = self.string(args[0], "a variable's name")
            self.locals[name] = "prim"
            return f"%{name}: {self.type_text(args[1])}"
        if self.is_s(func, "let_in"):
            if len(args) != 4:
                raise _ScriptError(node, 'S.let_in("x", dtype, value, body) takes four arguments')
            name = self.string(args[0], "a variable's name")
            value = self.prim_expr(args[2], free)
            self.locals[name] = "prim"
            return f"(let %{name}: {self.type_text(args[1])} = {value} in {self.prim_expr(args[3], free)})"
        if self.is_s(func, *_SCALARS) or self.is_s(func, "imm"):
            if self.is_s(func, "imm"):
                dtype, args = self.string(args[0], "a dtype"), args[1:]
            else:
                dtype = func.attr
            if len(args) != 1:
                raise _ScriptError(node, f"S.{func.attr}(value) takes one value")
            value = args[0]
            if isinstance(value, ast.UnaryOp) and isinstance(value.op, ast.USub) and isinstance(value.operand, ast.Constant):
                value = ast.Constant(-value.operand.value)
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return f"{dtype}({_json(value.value)})"
            if isinstance(value, ast.Constant) and isinstance(value.value, (int, float)) and \
                    not isinstance(value.value, bool):
                return f"{dtype}({self.prim_number(value.value, float_type=dtype)})"
            raise _ScriptError(node, f"S.{dtype}(...) takes a number; use S.cast for an expression")
        raise _ScriptError(node, f"{ast.unparse(func)}(...) is not a prim expression")

    @staticmethod
    def prim_number(value, float_type=None):
        if isinstance(value, float) or (float_type or "").startswith(("float", "bfloat")):
            text = repr(float(value))
            if text in ("nan", "inf", "-inf"):
                return text
            return text if ("." in text or "e" in text) else text + ".0"
        return str(value)

    # -- extern functions --
    def extern(self, name, call):
        a = self.args_of(call, ["kind", "convention", "signature", "attrs", "encoding", "payload", "name"],
                         ["kind", "convention", "signature"], "S.extern")
        text = f"{self.global_ref(name)} = extern {_json(self.string(a['kind'], 'the kind'))} " \
               f"{self.string(a['convention'], 'the convention')} {self.type_text(a['signature'])}"
        if "attrs" in a:
            text += f" attrs {self.value(a['attrs'])}"
        if "encoding" in a:
            text += f" encoding {_json(self.string(a['encoding'], 'the encoding'))}"
        payload = self.string(a["payload"], "the payload") if "payload" in a else ""
        self.emit(f"{text} payload {_json(payload)}", call)

    # -- the module --
    def text(self):
        body = "\n".join(t for t, _ in self.lines) + "\n"
        if self.meta:
            body += "meta " + _ir.save_json(self.meta) + "\n"
        return body

    def parse(self):
        text = self.text()
        try:
            return _ir.parse(text, "<script>")
        except _core.ParseError as e:
            raise self.relocate(e) from None

    def check_types(self, module):
        """Type inference over the module; its first problem as a
        TypeInferenceError at the Python line of the call it names (the
        first line of that function calling the operator), else at the def."""
        try:
            _ir_pass("InferType")(module)
        except _core.TypeInferenceError as e:
            import re
            m = re.search(r"^  @(\S+): ((\S+?): .*)$", str(e), re.M)
            if not m or m.group(1) not in self.starts:
                raise
            start, fn = self.starts[m.group(1)]
            later = sorted(i for i, _ in self.starts.values() if i > start)
            end = later[0] if later else len(self.lines)
            node = next((n for text, n in self.lines[start:end] if f"{m.group(3)}(" in text), fn)
            raise self.source.error(node, f"type inference failed: @{m.group(1)}: {m.group(2)}",
                                    _core.TypeInferenceError) from None
        return module

    def relocate(self, error):
        """A parse error at <script>:L:C as the Python source's location."""
        message = str(error)
        head = message.split("\n", 1)[0]
        if head.startswith("<script>:"):
            parts = head.split(":", 3)
            try:
                line = int(parts[1])
                node = self.lines[min(line, len(self.lines)) - 1][1]
                return self.source.error(node, parts[3].strip())
            except (ValueError, IndexError):
                pass
        return error


def _ir_pass(name):
    from . import transform
    return transform.get_pass(name)


def _source_of(obj):
    try:
        lines, first = inspect.getsourcelines(obj)
        file = inspect.getsourcefile(obj) or "<unknown>"
    except (OSError, TypeError) as e:
        raise _core.ParseError(f"the source of {getattr(obj, '__name__', obj)!r} is not available ({e}); "
                               "use S.from_source(text)")
    dedented = textwrap.dedent("".join(lines))
    indent = len(lines[0]) - len(lines[0].lstrip())
    try:
        all_text = open(file).read()
    except OSError:
        all_text = "".join(lines)
    return ast.parse(dedented), _Source(file, all_text.splitlines(), first, indent), all_text


def _scope_of(obj):
    scope = dict(getattr(obj, "__globals__", None) or vars(inspect.getmodule(obj) or object()))
    closure = getattr(obj, "__closure__", None) or ()
    code = getattr(obj, "__code__", None)
    if code is not None:
        for name, cell in zip(code.co_freevars, closure):
            try:
                scope[name] = cell.cell_contents
            except ValueError:
                pass
    return scope


def _meta_of(text):
    """The entries of a script's meta block: a module-level string
    __loom_meta__ = '...' (the text format's meta JSON)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) \
                and node.targets[0].id == "__loom_meta__" and isinstance(node.value, ast.Constant):
            return list(_ir.load_json(node.value.value))
    return []


def _decorator(fn):
    """("prim_func"|"graph_func", the name= given) of a def's decorator."""
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        kind = target.attr if isinstance(target, ast.Attribute) else getattr(target, "id", None)
        if kind in ("prim_func", "graph_func"):
            name = fn.name
            if isinstance(d, ast.Call):
                for k in d.keywords:
                    if k.arg == "name" and isinstance(k.value, ast.Constant):
                        name = k.value.value
            return kind, name
    return None, fn.name


def _translate_module(cls_node, source, scope, meta_entries, check_types=False):
    names = {}
    for n in cls_node.body:
        if isinstance(n, ast.FunctionDef):
            names[n.name] = _decorator(n)[1]
        elif isinstance(n, ast.Assign):
            if len(n.targets) != 1 or not isinstance(n.targets[0], ast.Name):
                raise source.error(n, "a module class assigns one name: f = S.extern(...)")
            name = n.targets[0].id
            if isinstance(n.value, ast.Call):
                for k in n.value.keywords:
                    if k.arg == "name" and isinstance(k.value, ast.Constant):
                        name = k.value.value
            names[n.targets[0].id] = name
    t = _Translator(source, scope, names, meta_entries)
    try:
        for n in cls_node.body:
            if isinstance(n, ast.FunctionDef):
                kind, _ = _decorator(n)
                if kind is None:
                    raise _ScriptError(n, f"method '{n.name}' is neither @S.prim_func nor @S.graph_func")
                (t.prim_function if kind == "prim_func" else t.graph_function)(n, n.name)
            elif isinstance(n, ast.Assign):
                value = n.value
                if isinstance(value, ast.Call) and t.is_s(value.func, "extern"):
                    t.extern(n.targets[0].id, value)
                elif t.is_meta(value):
                    t.emit(f"{t.global_ref(n.targets[0].id)} = {t.meta_ref(value)}", n)
                else:
                    raise _ScriptError(value, "a module class's assignment is f = S.extern(...) or f = S.meta[N]")
            elif isinstance(n, ast.Expr) and isinstance(n.value, ast.Call) and \
                    t.is_s(n.value.func, "module_attrs", "module_global_infos"):
                which = n.value.func.attr[len("module_"):]
                t.emit(f"module {which} {t.value(n.value.args[0])}", n)
            elif isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant):
                continue  # the docstring
            elif isinstance(n, ast.Pass):
                continue
            else:
                raise _ScriptError(n, f"{_describe(n)} is not part of a module class")
    except _ScriptError as e:
        raise source.error(e.node, e.message) from None
    module = t.parse()
    return t.check_types(module) if check_types else module


def ir_module(cls=None, *, check_types=True):
    """@S.ir_module on a class: the IRModule of its methods (@S.prim_func,
    @S.graph_func) and its S.extern(...) assignments, its types inferred
    and checked (a type error at the Python line); @S.ir_module(
    check_types=False) skips that (a module printed from one that does
    not type)."""
    def make(cls, caller):
        tree, source, text = _source_of(cls)
        node = next(n for n in tree.body if isinstance(n, ast.ClassDef))
        scope = _scope_of(cls) | dict(caller.f_locals if caller else {})  # the defining scope's names
        return _translate_module(node, source, scope, _meta_of(text), check_types)
    caller = inspect.currentframe().f_back
    if cls is None:
        return lambda c: make(c, caller)
    return make(cls, caller)


def _decorate(kind):
    def decorate(fn=None, *, attrs=None, name=None):
        if fn is None:  # @S.graph_func(attrs=..., name=...)
            return lambda f: _function(f, kind)
        return _function(fn, kind)
    return decorate


def _function(fn, kind):
    parts = getattr(fn, "__qualname__", "").split(".")
    if len(parts) >= 2 and parts[-2] != "<locals>":
        return fn  # a method: @S.ir_module reads it with its class
    tree, source, text = _source_of(fn)
    node = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    _, name = _decorator(node)
    t = _Translator(source, _scope_of(fn), {node.name: name}, _meta_of(text))
    try:
        (t.prim_function if kind == "prim" else t.graph_function)(node, node.name)
    except _ScriptError as e:
        raise source.error(e.node, e.message) from None
    return t.check_types(t.parse())[name]


graph_func = _decorate("graph")
graph_func.__doc__ = """@S.graph_func (or @S.graph_func(attrs={...})): the graph function the
body describes (alone), or a method of an @S.ir_module class."""
prim_func = _decorate("prim")
prim_func.__doc__ = """@S.prim_func (or @S.prim_func(attrs={...})): the prim function the body
describes (alone), or a method of an @S.ir_module class."""


def from_source(text, file="<script>", check_types=False):
    """The IRModule of a script's text: its @S.ir_module class (with its
    __loom_meta__ block); check_types=True infers and checks its types."""
    try:
        tree = ast.parse(text)
    except SyntaxError as e:
        raise _core.ParseError(f"{file}:{e.lineno}:{e.offset}: {e.msg}")
    source = _Source(file, text.splitlines())
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            return _translate_module(node, source, {}, _meta_of(text), check_types)
    raise _core.ParseError(f"{file}: no @S.ir_module class")


def script(module):
    """The module as hybrid script: S.from_source(script(mod)) is
    structurally equal to mod (the same naming, sharing and meta as the
    text format)."""
    from . import _script_print
    text = module.script(show_meta=True)
    try:  # on a copy: inference records types on the nodes it visits
        _ir_pass("InferType")(_ir.parse(text, "<script>"))
        types = True
    except _core.LoomError:
        types = False  # printed so that running it does not check types
    return _script_print.to_script(text, check_types=types)
