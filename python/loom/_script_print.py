"""IR as hybrid script (docs/hybrid-script.md): the core's printer writes
the text format, with its naming, shared values and meta section; this
module writes the same tree in Python syntax, which loom.script reads
back.  A recursive-descent reader of the printed text."""
import json
import keyword
import re

_PUNCT = ["->", "//", "==", "!=", "<=", ">=", "&&", "||", "(", ")", "{", "}", "[", "]", "<", ">", ",", ";", ":", "=",
          "+", "-", "*", "/", "%", "!", "?", "."]
_NUMBER = re.compile(r"-?(?:\d+\.\d*(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+|\d+)")
_NAME = re.compile(r"[A-Za-z0-9_.]+")
_LOCAL = re.compile(r"[A-Za-z0-9_]+")  # '.' after a local is a tuple index
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_PREC = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3, "+": 4, "-": 4, "*": 5, "/": 5,
         "//": 5, "%": 5}
_PY_BINARY = {"||": "or", "&&": "and"}
_LOOP_KINDS = {"parallel": "parallel", "vectorized": "vectorized", "unrolled": "unroll", "serial": "serial"}
_DTYPE = re.compile(r"(bool|handle|bfloat16|u?int\d+|float\d+)(x\d+)?$")


class Tok:
    __slots__ = ("kind", "text", "pos")

    def __init__(self, kind, text, pos):
        self.kind, self.text, self.pos = kind, text, pos

    def __repr__(self):
        return f"{self.kind}:{self.text}"


def tokenize(text):
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in " \t\r\n":
            i += 1
        elif c == "#":
            while i < n and text[i] != "\n":
                i += 1
        elif c == '"':
            j = i + 1
            while text[j] != '"':
                j += 2 if text[j] == "\\" else 1
            out.append(Tok("str", json.loads(text[i:j + 1]), i))
            i = j + 1
        elif c in "%@" and i + 1 < n and (text[i + 1].isalnum() or text[i + 1] in "_\""):
            if text[i + 1] == '"':
                j = i + 2
                while text[j] != '"':
                    j += 2 if text[j] == "\\" else 1
                out.append(Tok("global", json.loads(text[i + 1:j + 1]), i))
                i = j + 1
            else:
                m = (_LOCAL if c == "%" else _NAME).match(text, i + 1)
                out.append(Tok("local" if c == "%" else "global", m.group(0), i))
                i = m.end()
        elif c.isdigit():
            m = _NUMBER.match(text, i)
            kind = "int" if re.fullmatch(r"-?\d+", m.group(0)) else "float"
            out.append(Tok(kind, m.group(0), i))
            i = m.end()
        elif c.isalpha() or c == "_":
            m = _IDENT.match(text, i)
            word = m.group(0)
            out.append(Tok("ident", word, i))
            i = m.end()
            if word == "meta" and text[i:].lstrip().startswith("{"):  # the meta section: JSON to the end
                out.append(Tok("json", text[i:].strip(), i))
                break
        else:
            for p in _PUNCT:
                if text.startswith(p, i):
                    out.append(Tok("punct", p, i))
                    i += len(p)
                    break
            else:
                raise ValueError(f"cannot read {text[i:i + 20]!r}")
    out.append(Tok("eof", "", n))
    return out


def py_name(name):
    """A local name of the text as a Python identifier (names are hints)."""
    name = re.sub(r"\W", "_", name)
    if not name or name[0].isdigit():
        name = "v_" + name
    if keyword.iskeyword(name) or name in ("S", "None", "True", "False"):
        name += "_"
    return name


class Printer:
    def __init__(self, text, check_types=True):
        self.check_types = check_types
        self.toks = tokenize(text)
        self.i = 0
        self.lines = []
        self.meta_json = None
        self.globals = {}  # text name -> Python name

    # -- tokens --
    def peek(self, k=0):
        return self.toks[self.i + k]

    def next(self):
        t = self.toks[self.i]
        self.i += 1
        return t

    def is_(self, text, k=0):
        t = self.peek(k)
        return t.kind in ("punct", "ident") and t.text == text

    def accept(self, text):
        if self.is_(text):
            self.i += 1
            return True
        return False

    def expect(self, text):
        t = self.next()
        if t.text != text:
            raise ValueError(f"expected {text!r} at {t.pos}, got {t.text!r}")
        return t

    def listed(self, close, item):
        """ITEM, ITEM, ... up to `close` (the opening bracket already read;
        a trailing comma allowed): the items' results."""
        out = []
        while not self.is_(close):
            out.append(item())
            if not self.accept(","):
                break
        self.expect(close)
        return out

    def wrapped(self, open_="(", close=")"):
        """WORD ( TOKEN ) or WORD [ TOKEN ]: the token's text."""
        self.next()
        self.expect(open_)
        text = self.next().text
        self.expect(close)
        return text

    # -- the module --
    def module(self):
        header, functions = [], []
        while self.peek().kind != "eof":
            t = self.peek()
            if t.kind == "ident" and t.text == "module":
                self.next()
                which = self.next().text
                value = self.value()
                header.append(f"    S.module_{which}({value})")
            elif t.kind == "global":
                name = self.next().text
                self.expect("=")
                functions.append((name, self.i))
                self.skip_function()
            elif t.kind == "ident" and t.text == "meta":
                self.next()
                self.meta_json = self.next().text
            else:
                raise ValueError(f"unexpected {t.text!r}")
        used = set()
        for name, _ in functions:
            py = py_name(name.replace(".", "_"))
            while py in used:
                py += "_"
            used.add(py)
            self.globals[name] = py
        decorator = "@S.ir_module" if self.check_types else "@S.ir_module(check_types=False)"
        out = ["from loom import script as S", "", "", decorator, "class Module:"]
        out += header
        for name, start in functions:
            self.i = start
            out.append("")
            out += self.function(name)
        if len(out) == 5:
            out.append("    pass")
        if self.meta_json is not None:
            out += ["", "", f"__loom_meta__ = {self.meta_json!r}"]
        return "\n".join(out) + "\n"

    def skip_function(self):
        depth = 0
        while True:
            t = self.peek()
            if t.kind == "eof" or (depth == 0 and t.kind in ("global",) and self.is_("=", 1)) or \
                    (depth == 0 and t.kind == "ident" and t.text in ("module", "meta") and
                     (self.peek(1).kind == "json" or t.text == "module")):
                return
            if t.kind == "punct" and t.text in "({[":
                depth += 1
            elif t.kind == "punct" and t.text in ")}]":
                depth -= 1
            self.next()

    def function(self, name):
        py = self.globals[name]
        rename = [] if py == name else [f"name={json.dumps(name)}"]
        self.scope = {}
        t = self.peek()
        if t.kind == "ident" and t.text == "meta":
            return [f"    {py} = S.meta[{self.meta_index()}]" + ("" if not rename else f"  # {name}")]
        if t.kind == "ident" and t.text == "extern":
            self.next()
            kind = self.next().text
            convention = self.next().text
            signature = self.type_()
            extra = []
            if self.is_("attrs"):
                self.next()
                extra.append(f"attrs={self.value()}")
            if self.is_("encoding"):
                self.next()
                extra.append(f"encoding={json.dumps(self.next().text)}")
            self.expect("payload")
            extra.append(f"payload={json.dumps(self.next().text)}")
            extra += rename
            return [f"    {py} = S.extern({json.dumps(kind)}, {json.dumps(convention)}, {signature}, {', '.join(extra)})"]
        if t.kind == "ident" and t.text in ("fn", "prim_func"):
            # a graph or a prim function: parameters, result, attrs, body
            self.next()
            graph = t.text == "fn"
            params = self.params(graph=graph)
            ret = f" -> {self.type_()}" if self.accept("->") else ""
            options = self.function_attrs() + rename
            body = self.graph_body(2) if graph else self.prim_block_body(2)
            deco = ("@S.graph_func" if graph else "@S.prim_func") + (f"({', '.join(options)})" if options else "")
            return [f"    {deco}", f"    def {py}({params}){ret}:"] + body
        raise ValueError(f"unknown function form {t.text!r}")

    def function_attrs(self):
        if self.is_("attrs"):
            self.next()
            return [f"attrs={self.value()}"]
        return []

    def local(self, text_name):
        name = self.scope.get(text_name)
        if name is None:
            name = py_name(text_name)
            taken = set(self.scope.values())
            while name in taken or name in self.globals.values():
                name += "_"
            self.scope[text_name] = name
        return name

    def params(self, graph):
        self.expect("(")
        out = []
        while not self.is_(")"):
            t = self.next()
            name = self.local(t.text)
            if self.accept(":"):
                if self.is_("_"):
                    self.next()
                    out.append(name)
                elif self.is_("Buffer"):
                    out.append(f"{name}: {self.buffer_type()}")
                else:
                    out.append(f"{name}: {self.type_()}")
            else:
                out.append(name)
            if not self.accept(","):
                break
        self.expect(")")
        return ", ".join(out)

    def meta_index(self):
        self.expect("meta")
        self.expect("[")
        n = self.next().text
        self.expect("]")
        return n

    # -- values and types --
    def value(self):
        t = self.peek()
        if t.kind == "local":  # a dimension: extent=%n, shape=[%b * 4, 8]
            return f"S.dim({json.dumps(self.prim())})"
        if t.kind == "ident":
            if t.text == "none":
                self.next()
                return "None"
            if t.text in ("true", "false"):
                self.next()
                return "True" if t.text == "true" else "False"
            if t.text == "meta":
                return f"S.meta[{self.meta_index()}]"
            if t.text == "float" and self.is_("(", 1):  # float("nan"), float("-inf")
                return f"float({json.dumps(self.wrapped())})"
            if t.text == "device":
                return f"S.device({json.dumps(self.wrapped())})"
            if t.text == "Prim":
                return f"S.Prim({json.dumps(self.wrapped('[', ']'))})"
            if t.text in ("Tensor", "Opaque", "fn") or _DTYPE.match(t.text):
                if _DTYPE.match(t.text) and not self.is_("[", 1):
                    self.next()
                    return f"S.dtype({json.dumps(t.text)})"
                return self.type_()
            raise ValueError(f"unknown value {t.text!r}")
        if t.kind in ("int", "float"):
            self.next()
            return t.text
        if t.kind == "punct" and t.text == "-":
            self.next()
            return "-" + self.next().text
        if t.kind == "str":
            self.next()
            return json.dumps(t.text)
        if self.accept("["):
            return "[" + ", ".join(self.listed("]", self.value)) + "]"
        if self.accept("{"):
            def item():
                key = self.next().text
                self.expect(":")
                return f"{json.dumps(key)}: {self.value()}"
            items = self.listed("}", item)
            return "{" + ", ".join(items) + "}"
        if self.is_("("):
            return self.type_()
        raise ValueError(f"unknown value {t.text!r}")

    def type_(self):
        t = self.peek()
        if self.accept("("):
            return f"S.Tuple({', '.join(self.listed(')', self.type_))})"
        if t.kind == "ident" and t.text == "none":
            self.next()
            return "None"
        if t.kind == "ident" and t.text == "Tensor":
            self.next()
            self.expect("[")
            if self.accept("?"):
                shape = "None"
            else:
                shape = self.dims()
            self.expect(",")
            dtype = self.next().text
            self.expect("]")
            return f"S.Tensor({shape}, {json.dumps(dtype)})"
        if t.kind == "ident" and t.text == "Opaque":
            return f"S.Opaque({json.dumps(self.wrapped('[', ']'))})"
        if t.kind == "ident" and t.text == "fn":
            self.next()
            self.expect("(")
            params = self.listed(")", self.type_)
            self.expect("->")
            ret = self.type_()
            return f"S.Func([{', '.join(params)}], {ret})"
        if t.kind == "ident" and t.text == "meta":
            return f"S.meta[{self.meta_index()}]"
        if t.kind == "ident" and _DTYPE.match(t.text):
            self.next()
            return f"S.{t.text}" if re.fullmatch(r"[a-z]+\d*", t.text) else f"S.dtype({json.dumps(t.text)})"
        raise ValueError(f"unknown type at {t.text!r}")

    def dims(self):
        """(d, ...) of a tensor or buffer: ints, or prim expressions as
        Python text in a string."""
        self.expect("(")
        dims = [e if re.fullmatch(r"-?\d+", e) else json.dumps(e) for e in self.listed(")", self.prim)]
        return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"

    def buffer_type(self):
        self.expect("Buffer")
        self.expect("[")
        shape = self.dims()
        self.expect(",")
        dtype = self.next().text
        options = []
        while self.accept(","):
            key = self.next().text
            self.expect("=")
            if key == "scope":
                options.append(f"scope={json.dumps(self.next().text)}")
            elif key == "strides":
                options.append(f"strides={self.dims()}")
            elif key == "data":
                options.append(f"data={json.dumps(self.local(self.next().text))}")
            else:
                options.append(f"{key}={json.dumps(self.prim())}")
        self.expect("]")
        return f"S.Buffer({', '.join([shape, json.dumps(dtype)] + options)})"

    # -- prim expressions (Python text, parenthesised) --
    def prim(self, min_prec=1):
        left = self.prim_unary()
        while True:
            t = self.peek()
            prec = _PREC.get(t.text) if t.kind == "punct" else None
            if prec is None or prec < min_prec:
                return left
            self.next()
            right = self.prim(prec + 1)
            left = f"({left} {_PY_BINARY.get(t.text, t.text)} {right})"

    def prim_unary(self):
        if self.accept("!"):
            return f"(not {self.prim_unary()})"
        if self.is_("-") and self.peek(1).kind in ("int", "float"):
            self.next()
            return f"-{self.next().text}"
        return self.prim_primary()

    def prim_args(self):
        self.expect("(")
        return self.listed(")", self.prim)

    def prim_primary(self):
        t = self.peek()
        if t.kind == "int":
            self.next()
            return t.text
        if t.kind == "float":
            self.next()
            return t.text
        if t.kind == "str":
            self.next()
            return json.dumps(t.text)
        if t.kind == "local":
            self.next()
            if self.is_(":") and self.is_("Buffer", 1):
                self.next()
                name = self.local(t.text)
                buf = self.buffer_type()
                index = self.indices()
                return f"S.buffer({json.dumps(name)}, {buf})[{index}]"
            if self.accept(":"):
                dtype = self.next().text
                name = self.local(t.text)
                return f"S.var({json.dumps(name)}, {json.dumps(dtype)})"
            name = self.local(t.text)
            if self.is_("["):
                return f"{name}[{self.indices()}]"
            return name
        if self.accept("("):
            if self.is_("let"):
                self.next()
                var = self.next()
                self.expect(":")
                dtype = self.next().text
                self.expect("=")
                value = self.prim()
                self.expect("in")
                name = self.local(var.text)
                body = self.prim()
                self.expect(")")
                return f"S.let_in({json.dumps(name)}, {json.dumps(dtype)}, {value}, {body})"
            e = self.prim()
            self.expect(")")
            return e
        if t.kind == "ident":
            word = t.text
            if word in ("true", "false"):
                self.next()
                return "True" if word == "true" else "False"
            if word == "meta":
                return f"S.meta[{self.meta_index()}]"
            self.next()
            if word in ("min", "max", "select", "ramp", "broadcast"):
                return f"S.{word}({', '.join(self.prim_args())})"
            if word in ("cast", "call"):
                self.expect("(")
                dtype = self.next().text
                rest = []
                while self.accept(","):
                    rest.append(self.prim())
                self.expect(")")
                return f"S.{word}({', '.join([json.dumps(dtype)] + rest)})"
            if _DTYPE.match(word):
                self.expect("(")
                if self.peek().kind == "str":
                    arg = json.dumps(self.next().text)
                else:
                    arg = self.prim_unary()
                self.expect(")")
                return f"S.{word}({arg})" if re.fullmatch(r"[a-z]+\d*", word) else \
                    f"S.imm({json.dumps(word)}, {arg})"
            raise ValueError(f"unknown prim expression {word!r}")
        raise ValueError(f"unknown prim expression {t.text!r}")

    def indices(self):
        self.expect("[")
        out = self.listed("]", self.prim)
        return ", ".join(out) if out else "()"  # a 0-d buffer: B[()]

    # -- prim statements --
    def prim_block_body(self, depth):
        """{ statements } as the lines of a Python block."""
        self.expect("{")
        lines = []
        while not self.is_("}"):
            lines += self.statement(depth)
        self.expect("}")
        return lines or ["    " * depth + "pass"]

    def statement(self, depth):
        pad = "    " * depth
        t = self.peek()
        if t.kind == "local":
            target = self.prim_primary()
            self.expect("=")
            value = self.prim()
            self.expect(";")
            return [f"{pad}{target} = {value}"]
        word = t.text
        if word == "meta":
            return [f"{pad}S.stmt(S.meta[{self.meta_index()}])"] + ([] if not self.accept(";") else [])
        self.next()
        if word == "for":
            var = self.next()
            self.expect(":")
            dtype = self.next().text
            self.expect("from")
            begin = self.prim()
            self.expect("extent")
            extent = self.prim()
            kind, extra = "serial", []
            if self.is_("thread"):
                thread = self.wrapped()
                kind = "thread_binding"
                extra.append(json.dumps(thread))
            elif self.peek().kind == "ident" and not self.is_("annotations"):
                kind = _LOOP_KINDS[self.next().text]
            if begin != "0":
                extra.append(f"begin={begin}")
            if dtype != "int64":
                extra.append(f"dtype={json.dumps(dtype)}")
            if self.is_("annotations"):
                self.next()
                extra.append(f"annotations={self.value()}")
            name = self.local(var.text)
            head = f"{pad}for {name} in S.{kind}({', '.join([extent] + extra)}):"
            return [head] + self.prim_block_body(depth + 1)
        if word == "alloc":
            var = self.next()
            self.expect(":")
            name = self.local(var.text)
            buf = self.buffer_type()
            return [f"{pad}with S.alloc_buffer({buf}) as {name}:"] + self.prim_block_body(depth + 1)
        if word == "let":
            var = self.next()
            self.expect(":")
            dtype = self.next().text
            self.expect("=")
            value = self.prim()
            name = self.local(var.text)
            return [f"{pad}with S.let_stmt({value}, {json.dumps(dtype)}) as {name}:"] + \
                self.prim_block_body(depth + 1)
        if word == "if":
            cond = self.prim()
            lines = [f"{pad}if {cond}:"] + self.prim_block_body(depth + 1)
            if self.is_("else"):
                self.next()
                lines += [f"{pad}else:"] + self.prim_block_body(depth + 1)
            return lines
        if word == "eval":
            value = self.prim()
            self.expect(";")
            return [f"{pad}S.evaluate({value})"]
        if word == "attr":
            key = self.next().text
            self.expect("=")
            value = self.prim()
            return [f"{pad}with S.attr({json.dumps(key)}, {value}):"] + self.prim_block_body(depth + 1)
        if word == "seq":
            return [f"{pad}with S.seq():"] + self.prim_block_body(depth + 1)
        raise ValueError(f"unknown statement {word!r}")

    # -- graph --
    def graph_body(self, depth):
        self.expect("{")
        lines = self.graph_sequence(depth, ret=True)
        self.expect("}")
        return lines

    def graph_sequence(self, depth, ret):
        """let-chains then a result: Python statements ending in return."""
        pad = "    " * depth
        lines = []
        while self.is_("let") or (self.peek().kind == "local" and self.is_("=", 1)):
            if self.is_("let"):
                self.next()
                var = self.next()
                annotation = ""
                if self.accept(":"):
                    if self.is_("_"):
                        self.next()
                    else:
                        annotation = f": {self.type_()}"
                self.expect("=")
                pre, value = self.graph_expr(depth)
                self.expect(";")
                name = self.local(var.text)
                lines += pre + [f"{pad}{name}{annotation} = S.let({value})"]
            else:
                var = self.next()
                self.expect("=")
                pre, value = self.graph_expr(depth)
                self.expect(";")
                name = self.local(var.text)
                lines += pre + [f"{pad}{name} = {value}"]
        if ret and self.is_("if"):
            # the result is an if: Python's if/else, each branch returning
            self.next()
            self.expect("(")
            pre, cond = self.graph_expr(depth)
            self.expect(")")
            lines += pre + [f"{pad}if {cond}:"] + self.graph_body(depth + 1)
            self.expect("else")
            lines += [f"{pad}else:"] + self.graph_body(depth + 1)
            return lines
        pre, value = self.graph_expr(depth)
        return lines + pre + [f"{pad}return {value}"]

    def new_block_name(self):
        self.blocks = getattr(self, "blocks", 0) + 1
        name = f"_block{self.blocks}"
        self.scope[f" block{self.blocks}"] = name
        return name

    def graph_expr(self, depth):
        """(lines defining nested blocks, expression text)."""
        pre = []
        e = self.graph_primary(depth, pre)
        while True:
            if self.is_(".") and self.peek(1).kind == "int":
                self.next()
                e = f"{e}[{self.next().text}]"
            elif self.is_(".") and self.peek(1).kind == "float" and re.fullmatch(r"\d+\.\d+", self.peek(1).text):
                self.next()  # t.1.0 reads as '.' then the number 1.0: two items
                first, second = self.next().text.split(".")
                e = f"{e}[{first}][{second}]"
            elif self.is_("(") or self.is_("<"):
                e = self.graph_call(e, depth, pre)
            else:
                return pre, e

    def graph_call(self, callee, depth, pre):
        type_args = self.listed(">", self.type_) if self.accept("<") else []
        self.expect("(")
        args, attrs = [], []
        while not self.is_(")"):
            if self.peek().kind == "ident" and self.is_("=", 1):
                key = self.next().text
                self.next()
                attrs.append(f"{key}={self.value()}")
            else:
                p, a = self.graph_expr(depth)
                pre += p
                args.append(a)
            if not self.accept(","):
                break
        self.expect(")")
        if callee == "S.op.call_dps" and len(type_args) == 1 and len(args) == 2 and not attrs:
            return f"S.call_dps({type_args[0]}, {args[0]}, {args[1]})"
        if callee == "S.op.call_packed" and len(type_args) == 1 and len(args) == 1 and len(attrs) == 1 \
                and attrs[0].startswith("name="):
            return f"S.call_packed({type_args[0]}, {attrs[0][5:]}, {args[0]})"
        extra = [f"type_args=[{', '.join(type_args)}]"] if type_args else []
        simple = re.fullmatch(r"S\.op\.[\w.]+", callee) or (re.fullmatch(r"\w+", callee) and not (attrs or extra))
        if not simple:  # any other expression called, or a function called with attributes
            return f"S.call({', '.join([callee] + args + attrs + extra)})"
        return f"{callee}({', '.join(args + attrs + extra)})"

    def graph_primary(self, depth, pre):
        t = self.peek()
        if t.kind == "local":
            self.next()
            if self.accept(":"):
                annotation = "None" if self.accept("_") else self.type_()
                name = self.local(t.text)
                return f"S.var({json.dumps(name)}, {annotation})"
            return self.local(t.text)
        if t.kind == "global":
            self.next()
            return self.globals.get(t.text) or f"S.global_var({json.dumps(t.text)})"
        if self.accept("("):
            if self.accept(")"):
                return "()"
            p, first = self.graph_expr(depth)
            pre += p
            if self.accept(")"):
                return first
            self.expect(",")
            fields = [first]
            while not self.is_(")"):
                p, f = self.graph_expr(depth)
                pre += p
                fields.append(f)
                if not self.accept(","):
                    break
            self.expect(")")
            return "(" + ", ".join(fields) + ("," if len(fields) == 1 else "") + ")"
        if self.is_("{"):
            return self.block_expr(depth, pre)
        if t.kind == "ident":
            if t.text == "meta":
                return f"S.meta[{self.meta_index()}]"
            if t.text == "if":
                self.next()
                self.expect("(")
                p, cond = self.graph_expr(depth)
                pre += p
                self.expect(")")
                then = self.block_expr(depth, pre)
                self.expect("else")
                other = self.block_expr(depth, pre)
                return f"S.if_({cond}, {then}, {other})"
            if t.text == "op" and self.is_("(", 1) and self.peek(2).kind == "str":
                return f"S.op_value({json.dumps(self.wrapped())})"
            self.next()
            return f"S.op.{t.text}"
        raise ValueError(f"unknown graph expression {t.text!r}")

    def block_expr(self, depth, pre):
        """A { ... } block in an operand position: a nested def before the
        statement, used as S.block(name)."""
        name = self.new_block_name()
        pad = "    " * depth
        self.expect("{")
        body = self.graph_sequence(depth + 1, ret=True)
        self.expect("}")
        pre += [f"{pad}def {name}():"] + body
        return f"S.block({name})"


def to_script(text, check_types=True):
    """The hybrid script of a module's text (print_module's output);
    check_types=False: its decorator does not check types (the module does
    not type)."""
    return Printer(text, check_types).module()
