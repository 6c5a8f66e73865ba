"""A reader of the MLIR text MLIR 16 prints for TOSA (docs/tosa.md): a
module of func.func whose bodies are operations in the generic form.
Every error names the file, line and column."""
import re
from dataclasses import dataclass, field

import numpy as np

from ... import _core


class MlirSyntaxError(_core.ParseError):
    """Text that is not the MLIR this reader takes, at file:line:col."""


# MLIR element types and their NumPy dtypes (Loom's dtype names are NumPy's,
# bfloat16 aside).
ELEMENT_TYPES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "f64": "float64", "i1": "bool",
                 "i8": "int8", "i16": "int16", "i32": "int32", "i64": "int64", "ui8": "uint8", "ui16": "uint16",
                 "ui32": "uint32", "si8": "int8", "si32": "int32"}


@dataclass
class TensorType:
    shape: tuple  # ints, None for '?'
    dtype: str    # Loom's name
    element: str  # MLIR's name

    def __str__(self):
        dims = "".join(("?" if d is None else str(d)) + "x" for d in self.shape)
        return f"tensor<{dims}{self.element}>"


@dataclass
class Opaque:
    """An attribute this reader keeps as text (a dialect attribute such as
    #tosa.conv_quant<...>): converters refuse it by name."""
    text: str


@dataclass
class Operation:
    name: str
    results: list
    operands: list
    attrs: dict
    operand_types: list
    result_types: list
    where: str  # file:line:col
    regions: int = 0


@dataclass
class Function:
    name: str
    params: list        # [(name, type)]
    result_types: list
    body: list          # [Operation]
    returns: list       # value names
    where: str
    private: bool = False
    attrs: dict = field(default_factory=dict)


_IDENT = re.compile(r"[A-Za-z_][\w$.]*")
_VALUE = re.compile(r"%[\w$.\-]+(?:#\d+)?")
_SYMBOL = re.compile(r"@[\w$.\-]+|@\"(?:\\.|[^\"\\])*\"")
_STRING = re.compile(r"\"(?:\\.|[^\"\\])*\"")
_NUMBER = re.compile(r"[-+]?(?:0x[0-9A-Fa-f]+|(?:\d+\.?\d*(?:[eE][-+]?\d+)?)|inf|nan)")


class Reader:
    def __init__(self, text, filename):
        self.text, self.filename, self.at = text, filename, 0

    # ---- positions and errors -------------------------------------------------
    def where(self, at=None):
        at = self.at if at is None else at
        line = self.text.count("\n", 0, at) + 1
        col = at - (self.text.rfind("\n", 0, at) + 1) + 1
        return f"{self.filename}:{line}:{col}"

    def fail(self, what, at=None):
        raise MlirSyntaxError(f"{self.where(at)}: {what}")

    def skip(self):
        while True:
            m = re.compile(r"\s+").match(self.text, self.at)
            if m:
                self.at = m.end()
            if self.text.startswith("//", self.at):
                end = self.text.find("\n", self.at)
                self.at = len(self.text) if end < 0 else end
                continue
            return

    def peek(self, s):
        self.skip()
        return self.text.startswith(s, self.at)

    def accept(self, s):
        if self.peek(s):
            self.at += len(s)
            return True
        return False

    def expect(self, s, what=None):
        if not self.accept(s):
            found = self.text[self.at:self.at + 12].split("\n")[0] or "the end of the text"
            self.fail(f"expected {what or repr(s)}, found '{found}'")

    def match(self, pattern, what):
        self.skip()
        m = pattern.match(self.text, self.at)
        if not m:
            found = self.text[self.at:self.at + 12].split("\n")[0] or "the end of the text"
            self.fail(f"expected {what}, found '{found}'")
        self.at = m.end()
        return m.group(0)

    def balanced(self, open_, close):
        """The text from an opening bracket at the cursor to its match."""
        self.skip()
        start, depth = self.at, 0
        while self.at < len(self.text):
            ch = self.text[self.at]
            if ch == '"':
                self.match(_STRING, "a string")
                continue
            if ch == open_:
                depth += 1
            elif ch == close:
                depth -= 1
                if depth == 0:
                    self.at += 1
                    return self.text[start:self.at]
            self.at += 1
        self.fail(f"'{open_}' is never closed", start)

    # ---- types -------------------------------------------------------------------
    def type(self):
        start = self.at
        self.skip()
        start = self.at
        if self.accept("tensor"):
            body = self.balanced("<", ">")[1:-1].strip()
            if body.startswith("*"):
                self.fail("an unranked tensor type: the reader takes ranked tensors", start)
            parts = body.split("x")
            element = parts[-1].split(",")[0].strip()  # an encoding after ',' is not kept
            if element not in ELEMENT_TYPES:
                self.fail(f"element type '{element}' is not one the reader takes ({', '.join(ELEMENT_TYPES)})",
                          start)
            shape = []
            for d in parts[:-1]:
                d = d.strip()
                if d == "?":
                    shape.append(None)
                elif d.isdigit():
                    shape.append(int(d))
                else:
                    self.fail(f"'{body}' is not a tensor shape", start)
            return TensorType(tuple(shape), ELEMENT_TYPES[element], element)
        m = _IDENT.match(self.text, self.at)
        if m and m.group(0) in ELEMENT_TYPES:
            self.at = m.end()
            return TensorType((), ELEMENT_TYPES[m.group(0)], m.group(0))  # a scalar: rank 0
        found = self.text[start:start + 16].split("\n")[0]
        self.fail(f"expected a tensor type, found '{found}'", start)

    def type_list(self):
        """`(T, ...)` or one T."""
        if self.accept("("):
            types = []
            if not self.accept(")"):
                types.append(self.type())
                while self.accept(","):
                    types.append(self.type())
                self.expect(")")
            return types
        return [self.type()]

    # ---- attributes ----------------------------------------------------------------
    def attr_dict(self):
        attrs = {}
        self.expect("{")
        if self.accept("}"):
            return attrs
        while True:
            key = self.match(re.compile(r"[\w$.\-]+|\"(?:\\.|[^\"\\])*\""), "an attribute name").strip('"')
            attrs[key] = self.attr_value() if self.accept("=") else True  # a unit attribute
            if self.accept("}"):
                return attrs
            self.expect(",", "',' or '}'")

    def attr_value(self):
        self.skip()
        start = self.at
        if self.accept("dense"):
            body = self.balanced("<", ">")[1:-1].strip()
            self.expect(":", "':' and the dense value's type")
            return dense_value(body, self.type(), self, start)
        if self.accept("array"):
            body = self.balanced("<", ">")[1:-1].strip()
            _, _, values = body.partition(":")
            try:
                return [int(v) if re.fullmatch(r"[-+]?\d+", v.strip()) else float(v) for v in values.split(",")
                        if v.strip()]
            except ValueError:
                self.fail(f"'array<{body}>' is not an array of numbers", start)
        if self.peek("["):
            self.expect("[")
            items = []
            if not self.accept("]"):
                items.append(self.attr_value())
                while self.accept(","):
                    items.append(self.attr_value())
                self.expect("]", "',' or ']'")
            return items
        if self.peek('"'):
            return bytes(self.match(_STRING, "a string")[1:-1], "utf-8").decode("unicode_escape")
        if self.peek("{"):
            return self.attr_dict()
        if self.peek("("):  # a function type: (inputs, results)
            inputs = self.type_list()
            self.expect("->")
            return (inputs, self.type_list())
        for word, value in (("true", True), ("false", False), ("unit", True)):
            m = re.compile(word + r"\b").match(self.text, self.at)
            if m:
                self.at = m.end()
                return value
        m = _NUMBER.match(self.text, self.at)
        if m:
            self.at = m.end()
            text = m.group(0)
            value = int(text, 0) if re.fullmatch(r"[-+]?(0x[0-9A-Fa-f]+|\d+)", text) else float(text)
            if self.accept(":"):
                t = self.type()
                if t.dtype.startswith(("float", "bfloat")) and isinstance(value, int) and text.lower().startswith(
                        ("0x", "-0x", "+0x")):
                    value = float(np.array([value], np.uint32).view(np.float32)[0])
                elif t.dtype.startswith(("float", "bfloat")):
                    value = float(value)
            return value
        if self.peek("#") or _IDENT.match(self.text, self.at):
            m = re.compile(r"#?[\w$.]+").match(self.text, self.at)
            self.at = m.end()
            if self.peek("<"):
                self.balanced("<", ">")
            return Opaque(self.text[start:self.at])
        self.fail("expected an attribute value")

    # ---- operations and functions ----------------------------------------------------
    def trailing_location(self):
        if self.peek("loc("):
            self.accept("loc")
            self.balanced("(", ")")

    def operation(self):
        self.skip()
        start = self.at
        results = []
        if self.peek("%"):
            results.append(self.match(_VALUE, "a value"))
            while self.accept(","):
                results.append(self.match(_VALUE, "a value"))
            if self.accept(":"):  # %r:2
                count = int(self.match(re.compile(r"\d+"), "a result count"))
                results = [f"{results[0]}#{k}" for k in range(count)]
            self.expect("=")
        self.skip()
        op_at = self.at
        if self.peek('"'):
            name = self.match(_STRING, "an operation name")[1:-1]
        else:
            name = self.match(_IDENT, "an operation")
        where = self.where(op_at)
        if name in ("return", "func.return") and not self.text.startswith('"', op_at):
            values = []
            if self.peek("%"):
                values.append(self.match(_VALUE, "a value"))
                while self.accept(","):
                    values.append(self.match(_VALUE, "a value"))
                self.expect(":", "':' and the returned types")
                self.type()
                while self.accept(","):
                    self.type()
            self.trailing_location()
            return Operation(name, [], values, {}, [], [], where)
        if not self.text.startswith('"', op_at):
            self.fail(f"'{name}' in its custom syntax: write operations in MLIR's generic form "
                      f"(\"dialect.op\"(%a) : (...) -> ...), as mlir-opt-16 --mlir-print-op-generic prints them",
                      op_at)
        self.expect("(")
        operands = []
        if not self.accept(")"):
            operands.append(self.match(_VALUE, "an operand"))
            while self.accept(","):
                operands.append(self.match(_VALUE, "an operand"))
            self.expect(")", "',' or ')'")
        regions = 0
        if self.peek("["):
            self.balanced("[", "]")  # successors
        if self.peek("({"):
            self.expect("(")
            while True:
                self.balanced("{", "}")
                regions += 1
                if not self.accept(","):
                    break
            self.expect(")")
        attrs = self.attr_dict() if self.peek("{") else {}
        self.expect(":", "':' and the operation's function type")
        operand_types = self.type_list()
        self.expect("->")
        result_types = self.type_list()
        self.trailing_location()
        if len(operand_types) != len(operands) or len(result_types) != len(results):
            self.fail(f"{name} has {len(operands)} operands and {len(results)} results, its type "
                      f"{len(operand_types)} and {len(result_types)}", start)
        return Operation(name, results, operands, attrs, operand_types, result_types, where, regions)

    def function(self):
        start = self.at
        self.expect("func.func")
        private = False
        for visibility in ("private", "public", "nested"):
            if re.compile(visibility + r"\b").match(self.text, self.at) and self.accept(visibility):
                private = visibility == "private"
        name = self.match(_SYMBOL, "the function's @name")[1:].strip('"')
        self.expect("(")
        params = []
        if not self.accept(")"):
            while True:
                value = self.match(_VALUE, "a parameter")
                self.expect(":")
                params.append((value, self.type()))
                if self.peek("{"):
                    self.attr_dict()
                self.trailing_location()
                if self.accept(")"):
                    break
                self.expect(",", "',' or ')'")
        results = []
        if self.accept("->"):
            if self.peek("("):
                self.expect("(")
                if not self.accept(")"):
                    while True:
                        results.append(self.type())
                        if self.peek("{"):
                            self.attr_dict()
                        if self.accept(")"):
                            break
                        self.expect(",")
            else:
                results.append(self.type())
        attrs = {}
        if self.accept("attributes"):
            attrs = self.attr_dict()
        if not self.peek("{"):
            return Function(name, params, results, [], [], self.where(start), True, attrs)  # a declaration
        self.expect("{")
        body, returns = [], None
        while not self.accept("}"):
            if self.at >= len(self.text):
                self.fail(f"@{name}'s body is never closed", start)
            op = self.operation()
            if op.name in ("return", "func.return"):
                returns = op.operands
            else:
                body.append(op)
        self.trailing_location()
        if returns is None:
            self.fail(f"@{name} does not end with return", start)
        return Function(name, params, results, body, returns, self.where(start), private, attrs)

    def generic_function(self):
        """"func.func"() ({ ^bb0(%a: T, ...): ... "func.return"(...) ... })
        {function_type = ..., sym_name = "f"} : () -> (): the fully generic
        form (mlir-opt --mlir-print-op-generic)."""
        start = self.at
        self.expect('"func.func"')
        self.expect("(")
        self.expect(")")
        self.expect("(", "the function's region")
        self.expect("{")
        params = []
        if self.accept("^"):
            self.match(re.compile(r"[\w$.\-]+"), "a block name")
            if self.accept("("):
                while not self.accept(")"):
                    value = self.match(_VALUE, "a block argument")
                    self.expect(":")
                    params.append((value, self.type()))
                    self.trailing_location()
                    self.accept(",")
            self.expect(":")
        body, returns = [], None
        while not self.accept("}"):
            if self.at >= len(self.text):
                self.fail("the function's region is never closed", start)
            op = self.operation()
            if op.name in ("return", "func.return"):
                returns = op.operands
            else:
                body.append(op)
        self.expect(")")
        attrs = self.attr_dict() if self.peek("{") else {}
        self.expect(":")
        self.type_list()
        self.expect("->")
        self.type_list()
        self.trailing_location()
        name = attrs.get("sym_name")
        if not isinstance(name, str) or "function_type" not in attrs:
            self.fail("a generic func.func without sym_name and function_type", start)
        if returns is None:
            self.fail(f"@{name} does not end with return", start)
        return Function(name, params, list(attrs["function_type"][1]), body, returns, self.where(start),
                        attrs.get("sym_visibility") == "private", attrs)

    def skip_aliases(self):
        while self.peek("#"):  # an attribute or location alias: #loc = loc(...)
            self.skip_line()

    def module(self):
        functions = []
        self.skip_aliases()
        wrapped = False
        if self.accept('"builtin.module"'):  # the generic form
            self.expect("(")
            self.expect(")")
            self.expect("(")
            self.expect("{")
            while not self.accept("}"):
                self.skip_aliases()
                if self.at >= len(self.text):
                    self.fail("the module is never closed")
                functions.append(self.generic_function())
            self.expect(")")
            if self.peek("{"):
                self.attr_dict()
            self.expect(":")
            self.type_list()
            self.expect("->")
            self.type_list()
            self.trailing_location()
            self.skip_aliases()
            self.skip()
            if self.at < len(self.text):
                self.fail("text after the module")
            return functions
        if re.compile(r"module\b").match(self.text, self.at):
            self.accept("module")
            if self.peek("@"):
                self.match(_SYMBOL, "a module name")
            if self.accept("attributes"):
                self.attr_dict()
            self.expect("{")
            wrapped = True
        while True:
            self.skip()
            if self.at >= len(self.text):
                if wrapped:
                    self.fail("the module is never closed")
                break
            if wrapped and self.accept("}"):
                self.trailing_location()
                self.skip()
                while self.peek("#"):  # location aliases after the module
                    self.skip_line()
                if self.at < len(self.text):
                    self.fail("text after the module")
                break
            if self.peek("#"):
                self.skip_line()  # an attribute or location alias: #loc = loc(...)
                continue
            if self.peek("func.func"):
                functions.append(self.function())
                continue
            if self.peek('"func.func"'):
                functions.append(self.generic_function())
                continue
            self.fail("expected func.func")
        if not functions:
            self.fail("no func.func in the text", 0)
        return functions

    def skip_line(self):
        end = self.text.find("\n", self.at)
        self.at = len(self.text) if end < 0 else end


def dense_value(body, t, reader, at):
    """The array a dense<...> attribute holds, of tensor type t."""
    dtype = np.dtype("uint16") if t.dtype == "bfloat16" else np.dtype(t.dtype)
    shape = tuple(1 if d is None else d for d in t.shape)
    count = int(np.prod(shape, dtype=np.int64))
    if body.startswith('"0x') or body.startswith('"0X'):
        raw = bytes.fromhex(body[3:-1])
        if len(raw) == dtype.itemsize:  # a splat
            return np.full(shape, np.frombuffer(raw, dtype)[0], dtype)
        if len(raw) != count * dtype.itemsize:
            reader.fail(f"dense hex of {len(raw)} bytes for {t} ({count * dtype.itemsize} bytes)", at)
        return np.frombuffer(raw, dtype).reshape(shape).copy()
    tokens = re.findall(r"\[|\]|,|true|false|[-+]?0x[0-9A-Fa-f]+|[-+]?(?:\d+\.?\d*(?:[eE][-+]?\d+)?|inf|nan)", body)
    if "".join(tokens).replace(",", "") != re.sub(r"[\s,]", "", body):
        reader.fail(f"dense<{body[:40]}> is not a list of numbers", at)
    values = []

    def number(tok):
        if tok in ("true", "false"):
            return tok == "true"
        if "0x" in tok.lower() and dtype.kind == "f":
            bits = int(tok, 16)
            return np.array([bits], np.uint32 if dtype.itemsize == 4 else np.uint16).view(dtype)[0]
        return int(tok, 0) if re.fullmatch(r"[-+]?(0x[0-9A-Fa-f]+|\d+)", tok) else float(tok)

    for tok in tokens:
        if tok not in "[],":
            values.append(number(tok))
    if t.dtype == "bfloat16":
        f = np.array(values, np.float32).view(np.uint32)
        values = ((f + 0x7FFF + ((f >> 16) & 1)) >> 16).astype(np.uint16)
    array = np.array(values, dtype)
    if array.size == 1:
        return np.full(shape, array.reshape(-1)[0], dtype)
    if array.size != count:
        reader.fail(f"dense value of {array.size} elements for {t}", at)
    return array.reshape(shape)


def parse(text, filename="<mlir>"):
    """[Function] of the text."""
    return Reader(text, filename).module()
