// The parser of the IR text format (docs/ir-text-format.md): a hand-written
// recursive-descent parser over the lexer's tokens (lexer.h).  Every error is a ParseError at the
// offending token, with the source line and a caret.  Nodes are built with
// their checked constructors, so a type error in the text (int32 + int64)
// is reported where it is written.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <cstdlib>
#include <functional>
#include <limits>
#include <memory>
#include <set>
#include <unordered_map>

#include "lexer.h"
#include "loom/graph/function.h"
#include "loom/ir/op.h"
#include "loom/text/text.h"
#include "loom/object/serialization.h"
#include "loom/support/json.h"
#include "loom/support/stack.h"
#include "loom/support/strings.h"
#include "loom/tir/function.h"

namespace loom::text {

namespace {

using namespace loom::ir;   // NOLINT: types, functions, the module
using namespace loom::tir;  // NOLINT: the prim IR's nodes

// Where each byte of a string literal's decoded text stands in the source
// (ir::PayloadSource): the literal at `at` is re-read, a piece starting at
// each escape and after each line break.  Null when the re-reading does not
// give `decoded`'s size (it always should).
std::shared_ptr<const PayloadSource> payload_source(const std::string& text, const std::string& source, const Token& at,
                                                    const std::string& decoded) {
  auto out = std::make_shared<PayloadSource>();
  out->source = source;
  out->payload_size = decoded.size();
  out->payload_hash = std::hash<std::string>()(decoded);
  size_t offset = 0;  // in the decoded text
  size_t pos = at.offset;
  int line = at.line, column = at.column;
  auto piece = [&]() {
    if (!out->pieces.empty() && out->pieces.back().offset == offset) out->pieces.pop_back();
    out->pieces.push_back({offset, line, column});
  };
  if (text.compare(pos, 3, "\"\"\"") == 0) {  // multi-line: verbatim after the line break
    pos += 4;
    ++line;
    column = 1;
    piece();
    while (pos < text.size() && text.compare(pos, 3, "\"\"\"") != 0) {
      ++offset;
      if (text[pos++] == '\n') {
        ++line;
        column = 1;
        piece();
      } else {
        ++column;
      }
    }
  } else {  // a JSON string on one line
    ++pos;
    ++column;
    piece();
    while (pos < text.size() && text[pos] != '"') {
      if (text[pos] != '\\') {
        ++offset;
        ++pos;
        ++column;
        continue;
      }
      size_t length = 2, bytes = 1;  // of the escape in the source, of what it stands for
      if (pos + 6 <= text.size() && text[pos + 1] == 'u') {
        unsigned code = std::strtoul(text.substr(pos + 2, 4).c_str(), nullptr, 16);
        length = 6;
        if (code >= 0xD800 && code < 0xDC00 && text.compare(pos + 6, 2, "\\u") == 0) {
          length = 12;  // a surrogate pair: one code point of four bytes
          bytes = 4;
        } else {
          bytes = code < 0x80 ? 1 : code < 0x800 ? 2 : 3;
        }
      }
      piece();
      offset += bytes;
      pos += length;
      column += static_cast<int>(length);
      piece();
    }
  }
  piece();  // the closing quote
  if (offset != decoded.size()) return nullptr;
  return out;
}

class Parser {
 public:
  Parser(const std::string& text, const std::string& source, const BlobSource& blobs)
      : text_(text), source_(source), blobs_(blobs) {}

  IRModule module() {
    tokens_ = lex(text_, source_);
    load_meta();
    std::map<std::string, Any> functions, attrs, infos;
    while (!at_end()) {
      if (is_ident("module")) {
        next();
        const Token& which = expect_ident("'attrs' or 'global_infos'");
        Any v = value();
        if (v.kind() != AnyKind::kObject || !v.object()->is_instance<MapNode>()) fail(which, "expected a map {...}");
        if (which.text == "attrs")
          attrs = v.cast<Map>()->items;
        else if (which.text == "global_infos")
          infos = v.cast<Map>()->items;
        else
          fail(which,
               "unknown module section '" + which.text + "'" + did_you_mean(which.text, {"attrs", "global_infos"}));
      } else if (peek().kind == Tok::kGlobal) {
        const Token& name = next();
        expect("=");
        if (functions.count(name.text)) fail(name, "function @" + name.text + " is defined twice");
        functions[name.text] = function();
      } else {
        fail(peek(), "expected a function definition '@name = ...' or a 'module' line, got " + describe(peek()));
      }
    }
    return IRModule(functions, Map(attrs), Map(infos));
  }

 private:
  // ---- tokens --------------------------------------------------------------
  const Token& peek(size_t ahead = 0) const {
    size_t i = std::min(pos_ + ahead, end_ - 1);
    return tokens_[i];
  }
  bool at_end() const { return pos_ >= end_ - 1; }
  const Token& next() {
    const Token& t = peek();
    if (pos_ < end_ - 1) ++pos_;
    return t;
  }
  bool is(const char* punct, size_t ahead = 0) const {
    const Token& t = peek(ahead);
    return t.kind == Tok::kPunct && t.text == punct;
  }
  bool is_ident(const char* word, size_t ahead = 0) const {
    const Token& t = peek(ahead);
    return t.kind == Tok::kIdent && t.text == word;
  }
  bool accept(const char* punct) {
    if (!is(punct)) return false;
    next();
    return true;
  }
  static std::string describe(const Token& t) {
    switch (t.kind) {
      case Tok::kEnd:
        return "the end of the input";
      case Tok::kLocal:
        return "'%" + t.text + "'";
      case Tok::kGlobal:
        return "'@" + t.text + "'";
      case Tok::kString:
        return "a string";
      default:
        return "'" + t.text + "'";
    }
  }
  const Token& expect(const char* punct) {
    if (!is(punct)) fail(peek(), std::string("expected '") + punct + "', got " + describe(peek()));
    return next();
  }
  const Token& expect_ident(const std::string& what) {
    if (peek().kind != Tok::kIdent) fail(peek(), "expected " + what + ", got " + describe(peek()));
    return next();
  }
  void expect_word(const char* word) {
    if (!is_ident(word)) fail(peek(), std::string("expected '") + word + "', got " + describe(peek()));
    next();
  }
  int64_t expect_int(bool allow_negative = false) {
    bool negative = allow_negative && accept("-");
    const Token& t = peek();
    if (t.kind != Tok::kInt) fail(t, "expected an integer, got " + describe(t));
    next();
    errno = 0;
    long long v = std::strtoll(t.text.c_str(), nullptr, 10);
    if (errno == ERANGE) fail(t, "integer " + t.text + " does not fit in 64 bits");
    return negative ? -v : v;
  }
  std::string expect_string() {
    if (peek().kind != Tok::kString) fail(peek(), "expected a string, got " + describe(peek()));
    return next().text;
  }

  [[noreturn]] void fail(const Token& t, const std::string& message) {
    fail_at(text_, source_, t.line, t.column, message);
  }

  // ---- meta ----------------------------------------------------------------
  // The meta section ("meta {JSON}") runs to the end; references to it come
  // before it, so it is loaded first.
  void load_meta() {
    end_ = tokens_.size();
    int depth = 0;
    for (size_t i = 0; i + 1 < tokens_.size(); ++i) {
      const Token& t = tokens_[i];
      if (t.kind == Tok::kPunct && (t.text == "(" || t.text == "[" || t.text == "{")) ++depth;
      if (t.kind == Tok::kPunct && (t.text == ")" || t.text == "]" || t.text == "}")) --depth;
      if (depth == 0 && t.kind == Tok::kIdent && t.text == "meta" && tokens_[i + 1].kind == Tok::kPunct &&
          tokens_[i + 1].text == "{") {
        const Token& start = tokens_[i + 1];
        try {
          Any entries = load_json(text_.substr(start.offset), source_, blobs_);
          if (!entries.object() || !entries.object()->is_instance<ArrayNode>())
            fail(start, "the meta section must hold an array");
          meta_ = entries.cast<Array>();
        } catch (const ParseError& e) {
          // The JSON's positions are relative to its start.
          int line = e.line() + start.line - 1;
          int column = e.line() == 1 ? e.column() + start.column - 1 : e.column();
          fail_at(text_, source_, line, column, "in the meta section: " + e.message());
        }
        end_ = i + 1;  // the meta keyword acts as the end of the module text
        tokens_[i] = Token{Tok::kEnd, "", t.line, t.column, t.offset};
        return;
      }
    }
  }

  Any meta_entry() {
    const Token& at = peek();
    expect_word("meta");
    expect("[");
    int64_t index = expect_int();
    expect("]");
    if (index < 0 || index >= static_cast<int64_t>(meta_.size())) {
      fail(at, "meta[" + std::to_string(index) + "] does not exist (the meta section has " +
                   std::to_string(meta_.size()) + " entries)");
    }
    return meta_[index];
  }

  template <class Node>
  Any meta_of(const char* what) {
    const Token& at = peek();
    Any v = meta_entry();
    if (!v.object() || !v.object()->is_instance<Node>())
      fail(at, std::string("meta entry is not ") + what + ": " + v.describe());
    return v;
  }

  // ---- scopes --------------------------------------------------------------
  // Each name maps to its bindings, innermost last, each with the depth of
  // the scope that made it; each scope lists the names it bound, so
  // leaving it is proportional to what it bound and a lookup is one hash
  // probe however deep the scopes nest (a let chain opens one per binding).
  void begin_function() {
    bindings_.clear();
    scope_names_.assign(1, {});
  }
  void push() { scope_names_.emplace_back(); }
  void pop() {
    for (const std::string& name : scope_names_.back()) {
      auto found = bindings_.find(name);
      found->second.pop_back();
      if (found->second.empty()) bindings_.erase(found);
    }
    scope_names_.pop_back();
  }
  void bind(const std::string& name, Any v) {
    size_t depth = scope_names_.size() - 1;
    auto& stack = bindings_[name];
    if (!stack.empty() && stack.back().first == depth) {
      stack.back().second = std::move(v);
      return;
    }
    stack.emplace_back(depth, std::move(v));
    scope_names_.back().push_back(name);
  }
  void bind_function_level(const std::string& name, Any v) {
    auto& stack = bindings_[name];
    if (!stack.empty() && stack.front().first == 0) {
      stack.front().second = std::move(v);
      return;
    }
    stack.emplace(stack.begin(), 0, std::move(v));
    // Found at the front of the name's bindings when the function's scope
    // ends (begin_function clears everything).
  }
  const Any* lookup(const std::string& name) const {
    auto found = bindings_.find(name);
    return found == bindings_.end() ? nullptr : &found->second.back().second;
  }
  std::vector<std::string> names_in_scope() const {
    std::vector<std::string> out;
    for (const auto& item : bindings_) out.push_back("%" + item.first);
    std::sort(out.begin(), out.end());
    return out;
  }

  // ---- nesting -------------------------------------------------------------
  // Every construct that may contain itself parses through nested(): it
  // counts the depth (refused past kMaxNestingDepth, at the token where it
  // happens) and gives the recursion more stack when it runs low.
  template <class F>
  auto nested(F&& parse) {
    if (++depth_ > kMaxNestingDepth) too_deep(peek());
    struct Leave {
      int& depth;
      ~Leave() { --depth; }
    } leave{depth_};
    return with_stack(parse);
  }
  // A construct that adds `levels` of nesting without recursing here (a
  // chain of binary operators, of lets, of tuple items or calls).
  void check_depth(const Token& at, int64_t levels) {
    if (depth_ + levels > kMaxNestingDepth) too_deep(at);
  }
  [[noreturn]] void too_deep(const Token& at) {
    fail(at, "nesting deeper than " + std::to_string(kMaxNestingDepth) + " levels (docs/reliability.md, \"Depth\")");
  }
  [[noreturn]] void undefined(const Token& t) {
    fail(t, "undefined variable '%" + t.text + "'" + did_you_mean("%" + t.text, names_in_scope()) +
                " (a free variable is declared with its type at its first use: %" + t.text + ": TYPE)");
  }

  DataType dtype() {
    const Token& t = peek();
    if (t.kind != Tok::kIdent) fail(t, "expected a data type, got " + describe(t));
    next();
    try {
      return DataType::parse(t.text);
    } catch (const Error& e) {
      fail(t, e.what());
    }
  }
  bool is_dtype(const Token& t) const {
    if (t.kind != Tok::kIdent) return false;
    try {
      DataType::parse(t.text);
      return true;
    } catch (const Error&) {
      return false;
    }
  }

  // ---- values --------------------------------------------------------------
  Any value() {
    return nested([&] { return value_unnested(); });
  }
  Any value_unnested() {
    const Token& t = peek();
    if (t.kind == Tok::kString) return Any(next().text);
    if (t.kind == Tok::kInt || t.kind == Tok::kFloat || is("-")) {
      // A number, or the start of a dimension the printer writes with a
      // number first (4 * %n, 0 - %n): then the whole expression.
      size_t start = pos_;
      Any number = number_value();
      if (binary_precedence(peek()) == 0) return number;
      pos_ = start;
      return Any(prim());
    }
    if (is("[")) {
      next();
      std::vector<Any> items;
      while (!is("]")) {
        items.push_back(value());
        if (!accept(",")) break;
      }
      expect("]");
      return Array(items);
    }
    if (is("{")) {
      next();
      std::map<std::string, Any> items;
      while (!is("}")) {
        const Token& key = peek();
        if (key.kind != Tok::kIdent && key.kind != Tok::kString) fail(key, "expected a key, got " + describe(key));
        next();
        if (items.count(key.text)) fail(key, "duplicate key '" + key.text + "'");
        expect(":");
        items[key.text] = value();
        if (!accept(",")) break;
      }
      expect("}");
      return Map(items);
    }
    if (is("(")) return prim_ahead() ? Any(prim()) : Any(type());
    if (t.kind == Tok::kLocal) return Any(prim());  // a dimension: %n * 4
    if (t.kind == Tok::kIdent) {
      // a dimension the printer writes as a call: min(%n, 150), max(...), select(...)
      if ((t.text == "min" || t.text == "max" || t.text == "select") && is("(", 1)) return Any(prim());
      if (t.text == "none") return (next(), Any());
      if (t.text == "true") return (next(), Any(true));
      if (t.text == "false") return (next(), Any(false));
      if (t.text == "meta") return meta_entry();
      if (t.text == "float" && is("(", 1)) {
        next();
        expect("(");
        const Token& s = peek();
        std::string text = expect_string();
        expect(")");
        if (text == "nan") return Any(std::numeric_limits<double>::quiet_NaN());
        if (text == "inf") return Any(std::numeric_limits<double>::infinity());
        if (text == "-inf") return Any(-std::numeric_limits<double>::infinity());
        fail(s, "float(...) takes \"nan\", \"inf\" or \"-inf\"");
      }
      if (t.text == "device" && is("(", 1)) {
        next();
        expect("(");
        const Token& s = peek();
        std::string text = expect_string();
        expect(")");
        try {
          return Any(Device::parse(text));
        } catch (const Error& e) {
          fail(s, e.what());
        }
      }
      if (t.text == "Prim" && is("[", 1)) {
        next();
        expect("[");
        DataType d = dtype();
        expect("]");
        return Any(PrimType(d));
      }
      if (t.text == "Tensor" || t.text == "Opaque" || t.text == "fn") return Any(type());
      if (is_dtype(t)) return Any(dtype());
    }
    fail(t, "expected a value, got " + describe(t));
  }

  // Whether the '('s at the current token open a prim expression
  // ((%n + 1) // 2) rather than a tuple type ((Tensor[...], ...)).
  bool prim_ahead() const {
    size_t k = 0;
    while (is("(", k)) ++k;
    const Token& t = peek(k);
    if (t.kind == Tok::kLocal || t.kind == Tok::kInt || t.kind == Tok::kFloat) return true;
    if (t.kind == Tok::kPunct) return t.text == "-" || t.text == "!";
    static const std::set<std::string> starts = {"min",  "max",       "select", "cast", "call",
                                                 "ramp", "broadcast", "let",    "true", "false"};
    return t.kind == Tok::kIdent && starts.count(t.text) > 0;
  }

  Any number_value() {
    bool negative = accept("-");
    const Token& t = peek();
    if (t.kind == Tok::kInt) {
      next();
      std::string text = (negative ? "-" : "") + t.text;  // so that INT64_MIN reads
      errno = 0;
      long long v = std::strtoll(text.c_str(), nullptr, 10);
      if (errno == ERANGE) fail(t, "integer " + text + " does not fit in 64 bits");
      return Any(static_cast<int64_t>(v));
    }
    if (t.kind == Tok::kFloat) {
      next();
      double d = std::strtod(t.text.c_str(), nullptr);
      return Any(negative ? -d : d);
    }
    fail(t, "expected a number after '-', got " + describe(t));
  }

  // ---- types ---------------------------------------------------------------
  Type type() {
    return nested([&] { return type_unnested(); });
  }
  Type type_unnested() {
    const Token& t = peek();
    if (is("(")) {
      next();
      std::vector<Type> fields;
      bool trailing_comma = false;
      while (!is(")")) {
        fields.push_back(type());
        trailing_comma = accept(",");
        if (!trailing_comma) break;
      }
      expect(")");
      (void)trailing_comma;
      return TupleType(fields);
    }
    if (t.kind != Tok::kIdent) fail(t, "expected a type, got " + describe(t));
    if (t.text == "meta") return meta_of<TypeNode>("a type").cast<Type>();
    if (t.text == "none") {
      next();
      return Type();
    }
    if (t.text == "Tensor") {
      next();
      expect("[");
      Array shape;
      if (!accept("?")) {
        expect("(");
        std::vector<Any> dims;
        while (!is(")")) {
          dims.push_back(prim());
          if (!accept(",")) break;
        }
        expect(")");
        shape = Array(dims);
      }
      expect(",");
      DataType d = dtype();
      expect("]");
      return TensorType(shape, d);
    }
    if (t.text == "Opaque") {
      next();
      expect("[");
      std::string name = expect_string();
      expect("]");
      return OpaqueType(name);
    }
    if (t.text == "fn") {
      next();
      expect("(");
      std::vector<Type> params;
      while (!is(")")) {
        params.push_back(type());
        if (!accept(",")) break;
      }
      expect(")");
      expect("->");
      return FuncType(params, type());
    }
    if (t.text == "Prim" && is("[", 1)) {
      next();
      expect("[");
      DataType d = dtype();
      expect("]");
      return PrimType(d);
    }
    if (is_dtype(t)) return PrimType(dtype());
    fail(t, "expected a type (a data type, Tensor[...], (...), fn(...) -> ..., Opaque[...]), got " + describe(t) +
                did_you_mean(t.text, {"Tensor", "Opaque", "fn", "none", "float32", "int64", "bool"}));
  }

  // ---- prim expressions ----------------------------------------------------
  template <class Build>
  PrimExpr checked(const Token& at, Build build) {
    try {
      return build();
    } catch (const ParseError&) {
      throw;
    } catch (const Error& e) {
      fail(at, e.what());
    }
  }

  PrimExpr prim(int min_precedence = 1) {
    return nested([&] { return prim_unnested(min_precedence); });
  }
  PrimExpr prim_unnested(int min_precedence) {
    PrimExpr lhs = prim_unary();
    for (int64_t chain = 1;; ++chain) {
      const Token& op = peek();
      int precedence = binary_precedence(op);
      if (precedence < min_precedence || precedence == 0) return lhs;
      check_depth(op, chain);
      next();
      PrimExpr rhs = prim(precedence + 1);
      lhs = checked(op, [&]() -> PrimExpr { return make_binary(op.text, lhs, rhs); });
    }
  }

  static int binary_precedence(const Token& t) {
    if (t.kind != Tok::kPunct) return 0;
    const std::string& s = t.text;
    if (s == "||") return 1;
    if (s == "&&") return 2;
    if (s == "==" || s == "!=" || s == "<" || s == "<=" || s == ">" || s == ">=") return 3;
    if (s == "+" || s == "-") return 4;
    if (s == "*" || s == "/" || s == "//" || s == "%") return 5;
    return 0;
  }

  static PrimExpr make_binary(const std::string& op, PrimExpr a, PrimExpr b) {
    if (op == "||") return Or(a, b);
    if (op == "&&") return And(a, b);
    if (op == "==") return EQ(a, b);
    if (op == "!=") return NE(a, b);
    if (op == "<") return LT(a, b);
    if (op == "<=") return LE(a, b);
    if (op == ">") return GT(a, b);
    if (op == ">=") return GE(a, b);
    if (op == "+") return Add(a, b);
    if (op == "-") return Sub(a, b);
    if (op == "*") return Mul(a, b);
    if (op == "/") return Div(a, b);
    if (op == "//") return FloorDiv(a, b);
    return FloorMod(a, b);
  }

  PrimExpr prim_unary() {
    return nested([&] { return prim_unary_unnested(); });
  }
  PrimExpr prim_unary_unnested() {
    const Token& t = peek();
    if (accept("!")) {
      PrimExpr a = prim_unary();
      return checked(t, [&]() -> PrimExpr { return Not(a); });
    }
    if (is("-")) {
      if (peek(1).kind != Tok::kInt && peek(1).kind != Tok::kFloat) {
        fail(t, "unary '-' applies to number literals only; write 0 - x");
      }
      Any v = number_value();
      if (v.kind() == AnyKind::kInt) return IntImm(DataType::Int(64), v.as_int());
      return FloatImm(DataType::Float(32), v.as_float());
    }
    return prim_primary();
  }

  // "%name: dtype", declaring a new prim variable (bound by the caller).
  Var typed_var_decl(const char* what) {
    const Token& name = peek();
    if (name.kind != Tok::kLocal) fail(name, std::string("expected ") + what + " '%NAME', got " + describe(name));
    next();
    expect(":");
    return Var(name.text, dtype());
  }

  std::vector<PrimExpr> prim_args() {
    std::vector<PrimExpr> args;
    expect("(");
    while (!is(")")) {
      args.push_back(prim());
      if (!accept(",")) break;
    }
    expect(")");
    return args;
  }

  void expect_arity(const Token& at, const std::string& fn, const std::vector<PrimExpr>& args, size_t n) {
    if (args.size() != n) {
      fail(at, fn + " takes " + std::to_string(n) + " arguments, got " + std::to_string(args.size()));
    }
  }

  PrimExpr immediate(const Token& at, DataType d) {
    expect("(");
    PrimExpr result;
    const Token& v = peek();
    if (v.kind == Tok::kString) {
      std::string text = next().text;
      double value = text == "nan"    ? std::numeric_limits<double>::quiet_NaN()
                     : text == "inf"  ? std::numeric_limits<double>::infinity()
                     : text == "-inf" ? -std::numeric_limits<double>::infinity()
                                      : (fail(v, "a string immediate is \"nan\", \"inf\" or \"-inf\""), 0.0);
      result = checked(at, [&]() -> PrimExpr { return FloatImm(d, value); });
    } else if (is_ident("true") || is_ident("false")) {
      bool b = next().text == "true";
      result = checked(at, [&]() -> PrimExpr { return IntImm(d, b ? 1 : 0); });
    } else {
      Any number = number_value();
      if (number.kind() == AnyKind::kInt && d.code != DataType::kFloat && d.code != DataType::kBFloat) {
        result = checked(at, [&]() -> PrimExpr { return IntImm(d, number.as_int()); });
      } else {
        result = checked(at, [&]() -> PrimExpr { return FloatImm(d, number.as_float()); });
      }
    }
    expect(")");
    return result;
  }

  PrimExpr prim_primary() {
    const Token& t = peek();
    switch (t.kind) {
      case Tok::kInt: {
        Any v = number_value();
        return IntImm(DataType::Int(64), v.as_int());
      }
      case Tok::kFloat:
        return FloatImm(DataType::Float(32), number_value().as_float());
      case Tok::kString:
        return StringImm(next().text);
      case Tok::kLocal:
        if (is(":", 1) && is_ident("Buffer", 2)) {  // a free buffer's first use
          Buffer buffer = buffer_decl(/*function_level=*/true);
          std::vector<PrimExpr> idx = indices();
          return BufferLoad(buffer, idx);
        }
        return prim_name();
      case Tok::kPunct:
        if (is("(")) {
          next();
          if (is_ident("let")) {
            next();
            Var var = typed_var_decl("a variable");
            expect("=");
            PrimExpr value = prim();
            expect_word("in");
            push();
            bind(var->name, var);
            PrimExpr body = prim();
            pop();
            expect(")");
            return Let(var, value, body);
          }
          PrimExpr inner = prim();
          expect(")");
          return inner;
        }
        break;
      case Tok::kIdent: {
        if (t.text == "true" || t.text == "false") {
          next();
          return IntImm(DataType::Bool(), t.text == "true");
        }
        if (t.text == "meta") return meta_of<PrimExprNode>("a prim expression").cast<PrimExpr>();
        if (is("(", 1) && is_dtype(t)) {
          DataType d = dtype();
          return immediate(t, d);
        }
        if (t.text == "min" || t.text == "max") {
          next();
          auto args = prim_args();
          expect_arity(t, t.text, args, 2);
          return checked(t, [&]() -> PrimExpr {
            return t.text == "min" ? PrimExpr(Min(args[0], args[1])) : PrimExpr(Max(args[0], args[1]));
          });
        }
        if (t.text == "select") {
          next();
          auto args = prim_args();
          expect_arity(t, "select", args, 3);
          return checked(t, [&]() -> PrimExpr { return Select(args[0], args[1], args[2]); });
        }
        if (t.text == "cast" || t.text == "call") {
          next();
          expect("(");
          DataType d = dtype();
          std::string op;
          if (t.text == "call") {
            expect(",");
            op = expect_string();
          }
          std::vector<PrimExpr> args;
          while (accept(",")) args.push_back(prim());
          expect(")");
          if (t.text == "cast") {
            std::vector<PrimExpr> one = args;
            expect_arity(t, "cast", one, 1);
            return Cast(d, args[0]);
          }
          return Call(d, op, args);
        }
        if (t.text == "ramp" || t.text == "broadcast") {
          next();
          expect("(");
          PrimExpr first = prim();
          expect(",");
          PrimExpr stride;
          if (t.text == "ramp") {
            stride = prim();
            expect(",");
          }
          int64_t lanes = expect_int();
          expect(")");
          return checked(t, [&]() -> PrimExpr {
            return t.text == "ramp" ? PrimExpr(Ramp(first, stride, lanes)) : PrimExpr(Broadcast(first, lanes));
          });
        }
        fail(t,
             "expected a prim expression, got " + describe(t) +
                 did_you_mean(t.text, {"min", "max", "select", "cast", "call", "ramp", "broadcast", "true", "false"}));
      }
      default:
        break;
    }
    fail(t, "expected a prim expression, got " + describe(t));
  }

  // %x (a variable), %x: dtype (a free variable's first use), %A[...] (a load).
  PrimExpr prim_name() {
    const Token& name = next();
    if (is(":")) {
      next();
      if (lookup(name.text)) fail(name, "'%" + name.text + "' is already declared; only a first use carries a type");
      Var var(name.text, dtype());
      bind_function_level(name.text, var);
      return var;
    }
    const Any* found = lookup(name.text);
    if (!found) undefined(name);
    if (found->object() && found->object()->is_instance<BufferNode>()) {
      Buffer buffer = found->cast<Buffer>();
      if (!is("[")) fail(name, "buffer '%" + name.text + "' is used as a value; index it: %" + name.text + "[...]");
      std::vector<PrimExpr> idx = indices();
      return BufferLoad(buffer, idx);
    }
    if (!found->object() || !found->object()->is_instance<VarNode>()) {
      fail(name, "'%" + name.text + "' is a graph variable, not a prim expression");
    }
    return found->cast<Var>();
  }

  std::vector<PrimExpr> indices() {
    expect("[");
    std::vector<PrimExpr> idx;
    while (!is("]")) {
      idx.push_back(prim());
      if (!accept(",")) break;
    }
    expect("]");
    return idx;
  }

  // ---- buffers -------------------------------------------------------------
  // %A: Buffer[(shape), dtype, strides=(...), offset=e, scope="...", data=%p]
  Buffer buffer_decl(bool function_level = false) {
    const Token& name = peek();
    if (name.kind != Tok::kLocal) fail(name, "expected a buffer name '%NAME', got " + describe(name));
    next();
    expect(":");
    expect_word("Buffer");
    expect("[");
    auto node = make_object<BufferNode>();
    node->name = name.text;
    expect("(");
    std::vector<Any> shape;
    while (!is(")")) {
      shape.push_back(prim());
      if (!accept(",")) break;
    }
    expect(")");
    node->shape = Array(shape);
    expect(",");
    node->dtype = dtype();
    node->strides = Array(std::vector<Any>{});
    node->elem_offset = IntImm(DataType::Int(64), 0);
    while (accept(",")) {
      const Token& key = expect_ident("a buffer option (strides, offset, scope, data)");
      expect("=");
      if (key.text == "strides") {
        expect("(");
        std::vector<Any> strides;
        while (!is(")")) {
          strides.push_back(prim());
          if (!accept(",")) break;
        }
        expect(")");
        node->strides = Array(strides);
      } else if (key.text == "offset") {
        node->elem_offset = prim();
      } else if (key.text == "scope") {
        node->scope = expect_string();
      } else if (key.text == "data") {
        const Token& data = peek();
        if (data.kind != Tok::kLocal) fail(data, "expected the data variable '%NAME'");
        next();
        if (accept(":")) {
          node->data = Var(data.text, dtype());
          bind_function_level(data.text, node->data);
        } else if (const Any* found = lookup(data.text)) {
          if (!found->object() || !found->object()->is_instance<VarNode>())
            fail(data, "'%" + data.text + "' is not a variable");
          node->data = found->cast<Var>();
        } else {
          node->data = Var(data.text, DataType::Handle());
          bind_function_level(data.text, node->data);
        }
      } else {
        fail(key, "unknown buffer option '" + key.text + "'" +
                      did_you_mean(key.text, {"strides", "offset", "scope", "data"}));
      }
    }
    expect("]");
    if (!node->data.defined()) {
      node->data = Var(name.text + "_data", DataType::Handle());
      bind_function_level(name.text + "_data", node->data);
    }
    if (lookup(name.text) && function_level) fail(name, "'%" + name.text + "' is already declared");
    Buffer buffer(node);
    if (function_level)
      bind_function_level(name.text, buffer);
    else
      bind(name.text, buffer);
    return buffer;
  }

  // ---- statements ----------------------------------------------------------
  Stmt block() {
    expect("{");
    push();
    std::vector<Stmt> stmts = statements();
    pop();
    expect("}");
    if (stmts.size() == 1) return stmts[0];
    return SeqStmt(stmts);
  }

  std::vector<Stmt> statements() {
    std::vector<Stmt> out;
    while (!is("}") && !at_end()) out.push_back(statement());
    return out;
  }

  Stmt statement() {
    return nested([&] { return statement_unnested(); });
  }
  Stmt statement_unnested() {
    const Token& t = peek();
    if (t.kind == Tok::kLocal && is(":", 1) && is_ident("Buffer", 2)) {  // a free buffer's first use
      Buffer buffer = buffer_decl(/*function_level=*/true);
      std::vector<PrimExpr> idx = indices();
      expect("=");
      PrimExpr value = prim();
      expect(";");
      return BufferStore(buffer, value, idx);
    }
    if (t.kind == Tok::kLocal) {
      const Any* found = lookup(t.text);
      if (!found) undefined(t);
      if (!found->object() || !found->object()->is_instance<BufferNode>()) {
        fail(t, "'%" + t.text + "' is not a buffer; a statement starts with a keyword or a buffer store");
      }
      next();
      Buffer buffer = found->cast<Buffer>();
      std::vector<PrimExpr> idx = indices();
      expect("=");
      PrimExpr value = prim();
      expect(";");
      return BufferStore(buffer, value, idx);
    }
    if (t.kind != Tok::kIdent) fail(t, "expected a statement, got " + describe(t));
    static const std::vector<std::string> keywords = {"for", "alloc", "let", "if", "eval", "attr", "seq"};
    const std::string word = t.text;
    if (word == "meta") {
      Stmt s = meta_of<StmtNode>("a statement").cast<Stmt>();
      expect(";");
      return s;
    }
    next();
    if (word == "for") {
      Var var = typed_var_decl("the loop variable");
      expect_word("from");
      PrimExpr min = prim();
      expect_word("extent");
      PrimExpr extent = prim();
      ForKind kind = ForKind::kSerial;
      std::string thread;
      if (is_ident("thread")) {
        next();
        expect("(");
        thread = expect_string();
        expect(")");
        kind = ForKind::kThreadBinding;
      } else if (peek().kind == Tok::kIdent && !is_ident("annotations")) {
        const Token& k = next();
        try {
          kind = parse_for_kind(k.text);
        } catch (const Error& e) {
          fail(k, e.what());
        }
        if (kind == ForKind::kThreadBinding) fail(k, "write a thread-bound loop as thread(\"threadIdx.x\")");
      }
      Map annotations = Map::empty();
      if (is_ident("annotations")) {
        next();
        const Token& at = peek();
        Any v = value();
        if (!v.object() || !v.object()->is_instance<MapNode>()) fail(at, "annotations are a map {...}");
        annotations = v.cast<Map>();
      }
      push();
      bind(var->name, var);
      Stmt body = block();
      pop();
      return For(var, min, extent, kind, body, thread, annotations);
    }
    if (word == "alloc") {
      push();
      Buffer buffer = buffer_decl();
      Stmt body = block();
      pop();
      return Allocate(buffer, body);
    }
    if (word == "let") {
      Var var = typed_var_decl("a variable");
      expect("=");
      PrimExpr value = prim();
      push();
      bind(var->name, var);
      Stmt body = block();
      pop();
      return LetStmt(var, value, body);
    }
    if (word == "if") {
      PrimExpr cond = prim();
      Stmt then_case = block();
      Stmt else_case;
      if (is_ident("else")) {
        next();
        else_case = block();
      }
      return IfThenElse(cond, then_case, else_case);
    }
    if (word == "eval") {
      PrimExpr value = prim();
      expect(";");
      return Evaluate(value);
    }
    if (word == "attr") {
      std::string key = expect_string();
      expect("=");
      PrimExpr value = prim();
      return AttrStmt(key, value, block());
    }
    if (word == "seq") {
      expect("{");
      push();
      std::vector<Stmt> stmts = statements();
      pop();
      expect("}");
      return SeqStmt(stmts);
    }
    fail(t, "unknown statement '" + word + "'" + did_you_mean(word, keywords));
  }

  // ---- graph expressions ---------------------------------------------------
  graph::Var graph_decl(bool free) {
    const Token& name = peek();
    if (name.kind != Tok::kLocal) fail(name, "expected a variable '%NAME', got " + describe(name));
    next();
    Type annotation;
    if (accept(":")) {
      if (is_ident("_"))
        next();
      else
        annotation = type();
    }
    graph::Var var(name.text, annotation);
    if (free) bind_function_level(name.text, var);
    return var;
  }

  // let-chains then a result, up to a closing '}'.  A loop, not a
  // recursion: a chain is as long as the model (each binding is one level
  // of nesting in the IR and opens a scope for the rest).
  // `%v = value;` names a value used in several places: %v then reads as
  // that node itself (shared), with no let.
  Expr graph_sequence() {
    std::vector<std::pair<graph::Var, Expr>> bindings;  // no var: a shared value
    while (is_ident("let") || (peek().kind == Tok::kLocal && is("=", 1))) {
      check_depth(peek(), static_cast<int64_t>(bindings.size()) + 1);
      if (!is_ident("let")) {
        const Token& name = next();
        if (lookup(name.text)) fail(name, "'%" + name.text + "' is already declared");
        expect("=");
        Expr value = graph();
        expect(";");
        push();
        bind(name.text, value);
        bindings.emplace_back(graph::Var(), value);
        continue;
      }
      next();
      graph::Var var = graph_decl(false);
      expect("=");
      Expr value = graph();
      expect(";");
      push();
      bind(var->name, var);
      bindings.emplace_back(var, value);
    }
    Expr body = graph();
    for (size_t i = bindings.size(); i-- > 0;) {
      pop();
      if (bindings[i].first.defined()) body = graph::Let(bindings[i].first, bindings[i].second, body);
    }
    return body;
  }

  Expr graph_block() {
    expect("{");
    push();
    Expr e = graph_sequence();
    pop();
    expect("}");
    return e;
  }

  Expr graph() {
    return nested([&] { return graph_unnested(); });
  }
  Expr graph_unnested() {
    Expr e = graph_primary();
    for (int64_t chain = 1;; ++chain) {
      check_depth(peek(), chain);
      if (is(".") && peek(1).kind == Tok::kInt) {
        next();
        e = graph::TupleGetItem(e, expect_int());
      } else if (is("(") || is("<")) {
        e = graph_call(e);
      } else {
        return e;
      }
    }
  }

  Expr graph_call(Expr callee) {
    std::vector<Type> type_args;
    if (accept("<")) {
      while (!is(">")) {
        type_args.push_back(type());
        if (!accept(",")) break;
      }
      expect(">");
    }
    expect("(");
    std::vector<Expr> args;
    std::map<std::string, Any> attrs;
    while (!is(")")) {
      if (peek().kind == Tok::kIdent && is("=", 1)) {
        const Token& key = next();
        next();
        if (attrs.count(key.text)) fail(key, "attribute '" + key.text + "' is given twice");
        attrs[key.text] = value();
      } else {
        if (!attrs.empty()) fail(peek(), "positional arguments come before attributes");
        args.push_back(graph());
      }
      if (!accept(",")) break;
    }
    expect(")");
    return graph::Call(callee, args, Map(attrs), type_args);
  }

  Expr graph_primary() {
    const Token& t = peek();
    if (t.kind == Tok::kLocal) {
      if (is(":", 1)) {
        if (lookup(t.text)) fail(t, "'%" + t.text + "' is already declared; only a first use carries a type");
        return graph_decl(true);
      }
      next();
      const Any* found = lookup(t.text);
      if (!found) undefined(t);
      if (!found->object() || !found->object()->is_instance<ExprNode>()) {
        fail(t, "'%" + t.text + "' is a prim variable, not a graph expression");
      }
      return found->cast<Expr>();  // a variable, or a shared value
    }
    if (t.kind == Tok::kGlobal) return GlobalVar(next().text);
    if (is("(")) {
      next();
      if (accept(")")) return graph::Tuple(std::vector<Expr>{});
      std::vector<Expr> fields = {graph()};
      if (accept(")")) return fields[0];
      expect(",");
      while (!is(")")) {
        fields.push_back(graph());
        if (!accept(",")) break;
      }
      expect(")");
      return graph::Tuple(fields);
    }
    if (is("{")) return graph_block();
    if (t.kind == Tok::kIdent) {
      if (t.text == "meta") {
        Any entry = meta_entry();
        if (entry.object() && entry.object()->is_instance<runtime::NDArrayNode>()) {
          return graph::Constant(entry.cast<runtime::NDArray>());
        }
        if (!entry.object() || !entry.object()->is_instance<ExprNode>()) {
          fail(t, "meta entry is neither an NDArray nor an expression: " + entry.describe());
        }
        return entry.cast<Expr>();
      }
      if (t.text == "if") {
        next();
        expect("(");
        Expr cond = graph();
        expect(")");
        Expr then_branch = graph_block();
        expect_word("else");
        Expr else_branch = graph_block();
        return graph::If(cond, then_branch, else_branch);
      }
      if (t.text == "op" && is("(", 1) && peek(2).kind == Tok::kString && is(")", 3)) {
        next();
        next();
        const Token& name = next();
        next();
        return operator_named(name, name.text);
      }
      next();
      if (!is("(") && !is("<"))
        fail(t, "an operator is called: " + t.text + "(...); got " + describe(peek()) + " after it");
      return operator_named(t, t.text);
    }
    fail(t, "expected a graph expression, got " + describe(t));
  }

  Expr operator_named(const Token& at, const std::string& name) {
    try {
      return Op::get(name);
    } catch (const Error& e) {
      fail(at, e.what());
    }
  }

  // ---- functions -----------------------------------------------------------
  Map function_attrs() {
    if (!is_ident("attrs")) return Map::empty();
    next();
    const Token& at = peek();
    Any v = value();
    if (!v.object() || !v.object()->is_instance<MapNode>()) fail(at, "attrs are a map {...}");
    return v.cast<Map>();
  }

  Any function() {
    const Token& t = peek();
    if (t.kind != Tok::kIdent) fail(t, "expected fn, prim_func or extern, got " + describe(t));
    if (t.text == "meta") return meta_of<BaseFuncNode>("a function");
    begin_function();
    next();
    if (t.text == "fn") {
      expect("(");
      std::vector<graph::Var> params;
      while (!is(")")) {
        graph::Var p = graph_decl(false);
        if (lookup(p->name)) fail(tokens_[pos_ - 1], "parameter '%" + p->name + "' is declared twice");
        bind(p->name, p);
        params.push_back(p);
        if (!accept(",")) break;
      }
      expect(")");
      Type ret;
      if (accept("->")) ret = type();
      Map attrs = function_attrs();
      Expr body = graph_block();
      return graph::Function(params, body, ret, attrs);
    }
    if (t.text == "prim_func") {
      expect("(");
      predeclare_scalar_params();
      std::vector<Any> params;
      while (!is(")")) {
        const Token& name = peek();
        if (name.kind == Tok::kLocal && is(":", 1) && is_ident("Buffer", 2)) {
          params.push_back(buffer_decl());
        } else {
          if (name.kind != Tok::kLocal) fail(name, "expected a parameter '%NAME: TYPE', got " + describe(name));
          next();
          expect(":");
          dtype();  // already declared by predeclare_scalar_params
          params.push_back(*lookup(name.text));
        }
        if (!accept(",")) break;
      }
      expect(")");
      Type ret;
      if (accept("->")) ret = type();
      Map attrs = function_attrs();
      expect("{");
      std::vector<Stmt> stmts = statements();
      expect("}");
      Stmt body = stmts.size() == 1 ? stmts[0] : Stmt(SeqStmt(stmts));
      return PrimFunc(params, body, ret, attrs);
    }
    if (t.text == "extern") {
      std::string kind = expect_string();
      const Token& convention = expect_ident("a calling convention (dps or packed)");
      const Token& sig_at = peek();
      Type signature = type();
      if (!signature.as<FuncTypeNode>()) fail(sig_at, "an extern signature is fn(...) -> ...");
      Map attrs = function_attrs();
      std::string encoding = "text";
      if (is_ident("encoding")) {
        next();
        encoding = expect_string();
      }
      expect_word("payload");
      const Token& payload_at = peek();
      std::string payload = expect_string();
      try {
        ExternFunc f(kind, payload, downcast<FuncType>(signature), convention.text, attrs);
        auto* node = const_cast<ExternFuncNode*>(f.get());  // a new node: not shared yet
        node->encoding = encoding;
        if (encoding == "text") node->payload_source = payload_source(text_, source_, payload_at, payload);
        return f;
      } catch (const Error& e) {
        fail(convention, e.what());
      }
    }
    fail(t,
         "expected fn, prim_func or extern, got " + describe(t) + did_you_mean(t.text, {"fn", "prim_func", "extern"}));
  }

  // Scalar parameters "%n: dtype" of the list starting here are declared
  // first, so that buffer parameters before them can use them in shapes.
  void predeclare_scalar_params() {
    int depth = 0;
    for (size_t i = pos_; i + 2 < end_; ++i) {
      const Token& t = tokens_[i];
      if (t.kind == Tok::kPunct && (t.text == "(" || t.text == "[" || t.text == "{")) ++depth;
      if (t.kind == Tok::kPunct && (t.text == ")" || t.text == "]" || t.text == "}")) {
        if (depth == 0) return;
        --depth;
      }
      bool at_param_start = i == pos_ || (tokens_[i - 1].kind == Tok::kPunct && tokens_[i - 1].text == ",");
      if (depth == 0 && at_param_start && t.kind == Tok::kLocal && tokens_[i + 1].text == ":" &&
          tokens_[i + 2].kind == Tok::kIdent && tokens_[i + 2].text != "Buffer") {
        if (lookup(t.text)) fail(t, "parameter '%" + t.text + "' is declared twice");
        try {
          bind(t.text, Var(t.text, DataType::parse(tokens_[i + 2].text)));
        } catch (const Error& e) {
          fail(tokens_[i + 2], e.what());
        }
      }
    }
  }

  const std::string& text_;
  std::string source_;
  const BlobSource& blobs_;
  std::vector<Token> tokens_;
  size_t pos_ = 0;
  size_t end_ = 0;
  Array meta_ = Array(std::vector<Any>{});
  std::unordered_map<std::string, std::vector<std::pair<size_t, Any>>> bindings_;
  std::vector<std::vector<std::string>> scope_names_;
  int depth_ = 0;
};

}  // namespace

std::string payload_position(const ExternFuncNode& f, int line, int column) {
  const PayloadSource* at = f.payload_source.get();
  const std::string& payload = f.payload;
  if (!at || at->pieces.empty() || line < 1 || at->payload_size != payload.size() ||
      at->payload_hash != std::hash<std::string>()(payload))
    return "";
  size_t start = 0;  // of the line in the payload
  for (int l = 1; l < line; ++l) {
    start = payload.find('\n', start);
    if (start == std::string::npos) return "";
    ++start;
  }
  size_t end = std::min(payload.find('\n', start), payload.size());
  size_t offset = std::min(start + static_cast<size_t>(std::max(column, 1)) - 1, end);
  auto piece = std::upper_bound(at->pieces.begin(), at->pieces.end(), offset,
                                [](size_t o, const PayloadSource::Piece& p) { return o < p.offset; });
  --piece;  // the first piece is at offset 0
  return at->source + ":" + std::to_string(piece->line) + ":" +
         std::to_string(piece->column + static_cast<int>(offset - piece->offset));
}

IRModule parse_module(const std::string& text, const std::string& source) {
  return Parser(text, source, nullptr).module();
}

IRModule parse_module(const std::string& text, const std::string& source, const BlobSource& blobs) {
  return Parser(text, source, blobs).module();
}

}  // namespace loom::text
