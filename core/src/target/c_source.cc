// Prim IR -> C source; see loom/target/c_source.h for the contract.
#include "loom/target/c_source.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <unordered_set>

#include <dlpack/dlpack.h>

#include "loom/ir/text.h"
#include "loom/runtime/device_api.h"
#include "loom/object/traversal.h"
#include "loom/support/error.h"
#include "loom/support/strings.h"
#include "loom/tir/util.h"

namespace loom::target {
namespace {

using tir::is_float;
using tir::is_unsigned;
using tir::scalar_of;

// A message for loom_fail's format: '%' doubled except at the one "%lld".
std::string format_of(const std::string& message) {
  auto escape = [](const std::string& text) {
    std::string out;
    for (char c : text) out += c == '%' ? std::string("%%") : std::string(1, c);
    return out;
  };
  size_t at = message.find("%lld");
  if (at == std::string::npos) return escape(message);
  return escape(message.substr(0, at)) + "%lld" + escape(message.substr(at + 4));
}

// The shortest decimal text that reads back as the same float (or double).
std::string shortest(double value, bool single) {
  char buf[64];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, value);
    if (single ? std::strtof(buf, nullptr) == static_cast<float>(value) : std::strtod(buf, nullptr) == value) break;
  }
  std::string text = buf;
  if (text.find_first_of(".e") == std::string::npos) text += ".0";
  return text;
}

const std::unordered_set<std::string>& c_keywords() {
  static const std::unordered_set<std::string> words = {
      "auto",   "break",    "case",     "char",     "const",  "continue", "default",  "do",      "double",
      "else",   "enum",     "extern",   "float",    "for",    "goto",     "if",       "inline",  "int",
      "long",   "register", "restrict", "return",   "short",  "signed",   "sizeof",   "static",  "struct",
      "switch", "typedef",  "union",    "unsigned", "void",   "volatile", "while",    "bool",    "true",
      "false",  "main",     "errno",    "kernel",   "global", "local",    "constant", "private", "half"};
  return words;
}
}  // namespace

std::set<std::string> CSourcePrinter::intrinsics() {
  return {"exp",   "exp2",        "log",        "log2",        "log10",       "sqrt",       "tanh",
          "erf",   "floor",       "ceil",       "round",       "trunc",       "sin",        "cos",
          "abs",   "pow",         "fmod",       "isnan",       "isinf",       "ret",        "tan",
          "asin",  "acos",        "atan",       "sinh",        "cosh",        "asinh",      "acosh",
          "atanh", "bitwise_and", "bitwise_or", "bitwise_xor", "bitwise_not", "shift_left", "shift_right"};
}

std::string CSourcePrinter::symbol_for(const std::string& name) {
  std::string out = "__loom_fn_";
  for (char c : name) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

void CSourcePrinter::fail(const std::string& what) const {
  LOOM_THROW(Error) << "c: @" << function_name_ << ": " << what;
}

// ---- hooks ------------------------------------------------------------------------------

std::string CSourcePrinter::preamble() {
  return "#include <math.h>\n#include <stdbool.h>\n#include <stdint.h>\n#include <stdio.h>\n";
}

std::string CSourcePrinter::scalar_type(DataType t) {
  switch (t.code) {
    case DataType::kBool:
      return "bool";
    case DataType::kInt:
    case DataType::kUInt:
      if (t.bits == 8 || t.bits == 16 || t.bits == 32 || t.bits == 64) {
        return std::string(t.code == DataType::kUInt ? "uint" : "int") + std::to_string(t.bits) + "_t";
      }
      break;
    case DataType::kFloat:
      if (t.bits == 32) return "float";
      if (t.bits == 64) return "double";
      break;
    case DataType::kHandle:
      return "void*";
    case DataType::kBFloat:
      if (t.bits == 16) return "uint16_t";  // its bits; arithmetic in float (bf16_to_float, float_to_bf16)
      break;
    default:
      break;
  }
  fail("C has no type for " + t.to_string() + " (float16 needs a dialect that names it)");
}

std::string CSourcePrinter::vector_type(DataType t) {
  fail("a vector of " + std::to_string(t.lanes) + " lanes (" + t.to_string() +
       "): this printer writes scalar C, so nothing may be vectorized for its target (the c target has "
       "vector-bits 0; a dialect with vector types overrides vector_type)");
}

std::string CSourcePrinter::intrinsic_name(const std::string& op, DataType t) {
  static const std::set<std::string> libm = {"exp",   "exp2", "log",   "log2", "log10", "sqrt",  "tanh",  "erf",
                                             "floor", "ceil", "trunc", "sin",  "cos",   "pow",   "fmod",  "tan",
                                             "asin",  "acos", "atan",  "sinh", "cosh",  "asinh", "acosh", "atanh"};
  std::string name = op == "round" ? "nearbyint" : op;  // ties to even in the default rounding mode
  if (!libm.count(op) && op != "round") return "";
  if (!is_float(t) || t.bits == 16) fail(op + " of " + t.to_string() + ": C's math library has float and double");
  return t.bits == 32 ? name + "f" : name;
}

std::string CSourcePrinter::thread_index(const std::string& axis) {
  fail("a loop is bound to the GPU thread axis '" + axis + "'; C code runs on the CPU");
}

// ---- names, scopes and output ------------------------------------------------------------

std::string CSourcePrinter::type_name(DataType t) { return t.lanes > 1 ? vector_type(t) : scalar_type(t); }

bool CSourcePrinter::reserved_identifier(const std::string& name) {
  // The functions and macros the printer calls (a variable of that name
  // would hide them), in their float and double forms.
  static const std::unordered_set<std::string> called = [] {
    std::unordered_set<std::string> out = {"NAN", "INFINITY", "isnan", "isinf", "abs"};
    for (const char* f : {"exp",   "exp2", "log",  "log2", "log10", "sqrt",      "tanh",  "erf",   "floor", "ceil",
                          "trunc", "sin",  "cos",  "pow",  "fmod",  "nearbyint", "fabs",  "fmax",  "fmin",  "round",
                          "tan",   "asin", "acos", "atan", "sinh",  "cosh",      "asinh", "acosh", "atanh"}) {
      out.insert(f);
      out.insert(std::string(f) + "f");
    }
    return out;
  }();
  return c_keywords().count(name) || called.count(name) || name.rfind("loom_", 0) == 0 || name.rfind("__", 0) == 0 ||
         (name.size() > 2 && name.compare(name.size() - 2, 2, "_t") == 0);  // a typedef: int64_t, size_t
}

std::string CSourcePrinter::name_of(const tir::VarNode* v) {
  auto found = names_.find(v);
  if (found == names_.end() || !live_.count(v))
    fail("%" + v->name + " is used outside its scope (or is not a parameter)");
  return found->second;
}

std::string CSourcePrinter::declare(const tir::VarNode* v, const std::string& c_type) {
  std::string base;
  for (char c : v->name) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (base.empty() || std::isdigit(static_cast<unsigned char>(base[0]))) base = "v_" + base;
  if (reserved_identifier(base)) base += "_";
  if (reserved_identifier(base)) base = "v_" + base;  // a reserved prefix (GLSL's gl_)
  std::string name = base;
  for (int k = 1; used_names_.count(name); ++k) name = base + "_" + std::to_string(k);
  used_names_.insert(name);
  names_[v] = name;
  var_types_[v] = c_type;
  live_.insert(v);
  scope_.push_back(v);
  return name;
}

void CSourcePrinter::close_scope(size_t mark) {
  while (scope_.size() > mark) {
    live_.erase(scope_.back());
    scope_.pop_back();
  }
}

std::ostream& CSourcePrinter::line() {
  *out_ << std::string(2 * indent_, ' ');
  return *out_;
}

void CSourcePrinter::open_block(const std::string& head) {
  line() << head << (head.empty() ? "{\n" : " {\n");
  ++indent_;
}

void CSourcePrinter::close_block() {
  --indent_;
  line() << "}\n";
}

void CSourcePrinter::need_helper(const std::string& name, const std::string& definition) {
  if (helpers_.emplace(name, definition).second) helper_order_.push_back(name);
}

// A static inline helper for type t, defined once per file.
std::string CSourcePrinter::helper_call(const std::string& helper, DataType t, const std::vector<std::string>& args) {
  std::string T = scalar_type(t);
  std::string name = "loom_" + helper + "_" + t.to_string();
  std::string U = is_float(t) ? T : "uint" + std::to_string(t.bits) + "_t";  // the unsigned twin
  std::string body;
  bool signed_int = t.code == DataType::kInt;
  // The type's zero, and -a wrapping as the IR says (through the unsigned twin).
  std::string zero = cast_text(T, "0"),
              negate = cast_text(T, "(" + cast_text(U, "0") + " - " + cast_text(U, "a") + ")");
  if (helper == "min" || helper == "max") {
    const char* op = helper == "min" ? "<" : ">";
    // NumPy's minimum/maximum propagate NaN: a NaN a is kept, a NaN b
    // loses every ordered comparison.
    body = is_float(t) ? std::string("return (a ") + op + " b || a != a) ? a : b;"
                       : std::string("return a ") + op + " b ? a : b;";
  } else if (helper == "div") {  // integer division by zero gives 0, as NumPy's
    body = signed_int ? "return b == 0 ? " + zero + " : b == -1 ? " + negate + " : " + cast_text(T, "(a / b)") + ";"
                      : "return b == 0 ? " + zero + " : " + cast_text(T, "(a / b)") + ";";
  } else if (helper == "floordiv") {
    if (is_float(t)) {
      body = "return " + intrinsic_name("floor", t) + "(a / b);";
    } else if (signed_int) {
      body = "if (b == 0) return " + zero + ";\n  if (b == -1) return " + negate + ";\n  " + T +
             " q = " + cast_text(T, "(a / b)") + ", r = " + cast_text(T, "(a % b)") +
             ";\n  return (r != 0 && ((r < 0) != (b < 0))) ? " + cast_text(T, "(q - 1)") + " : q;";
    } else {
      body = "return b == 0 ? " + zero + " : " + cast_text(T, "(a / b)") + ";";
    }
  } else if (helper == "floormod") {
    if (is_float(t)) {
      body = "return a - " + intrinsic_name("floor", t) + "(a / b) * b;";
    } else if (signed_int) {
      body = "if (b == 0 || b == -1) return " + zero + ";\n  " + T + " r = " + cast_text(T, "(a % b)") +
             ";\n  return (r != 0 && ((r < 0) != (b < 0))) ? " + cast_text(T, "(r + b)") + " : r;";
    } else {
      body = "return b == 0 ? " + zero + " : " + cast_text(T, "(a % b)") + ";";
    }
  } else if (helper == "abs") {
    body = "return a < 0 ? " + negate + " : a;";
  } else {
    fail("internal error: no helper '" + helper + "'");
  }
  std::string params = args.size() == 1 ? T + " a" : T + " a, " + T + " b";
  need_helper(name, helper_qualifiers() + T + " " + name + "(" + params + ") {\n  " + body + "\n}\n");
  std::string call = name + "(";
  for (size_t k = 0; k < args.size(); ++k) call += (k ? ", " : "") + args[k];
  return call + ")";
}

// bfloat16 is kept as its bits (uint16_t) and computed in float: widened
// exactly, each result rounded back to nearest even (a NaN stays a quiet
// NaN), as the llvm target does; a double rounds to odd in float first,
// so that the two roundings are one.
std::string CSourcePrinter::bf16_to_float(const std::string& bits) {
  need_helper("loom_bf16_to_f32", helper_qualifiers() +
                                      "float loom_bf16_to_f32(uint16_t b) {\n  union { uint32_t u; float f; } v;\n"
                                      "  v.u = (uint32_t)b << 16;\n  return v.f;\n}\n");
  return "loom_bf16_to_f32(" + bits + ")";
}

std::string CSourcePrinter::float_to_bf16(const std::string& value, DataType from) {
  need_helper("loom_f32_to_bf16",
              helper_qualifiers() +
                  "uint16_t loom_f32_to_bf16(float f) {\n  union { float f; uint32_t u; } v;\n  v.f = f;\n"
                  "  if ((v.u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((v.u >> 16) | 0x40u);\n"
                  "  return (uint16_t)((v.u + 0x7fffu + ((v.u >> 16) & 1u)) >> 16);\n}\n");
  if (from.code == DataType::kBFloat) return value;
  if (from.code == DataType::kFloat && from.bits == 32) return "loom_f32_to_bf16(" + value + ")";
  need_helper("loom_f64_to_bf16", helper_qualifiers() +
                                      "uint16_t loom_f64_to_bf16(double d) {\n  union { float f; uint32_t u; } v;\n"
                                      "  v.f = (float)d;\n"
                                      "  if (d == d && !isinf(v.f) && (double)v.f != d) {  /* round to odd */\n"
                                      "    if (fabs((double)v.f) > fabs(d)) v.u -= 1;\n    v.u |= 1u;\n  }\n"
                                      "  return loom_f32_to_bf16(v.f);\n}\n");
  return "loom_f64_to_bf16((double)(" + value + "))";
}

// An operand as C arithmetic reads it: a bfloat16 widened to float.
std::string CSourcePrinter::arithmetic_operand(const tir::PrimExpr& e) {
  std::string text = print_expr(e);
  return e.dtype().code == DataType::kBFloat ? bf16_to_float(text) : text;
}

// ---- the module and its functions ---------------------------------------------------------

std::string CSourcePrinter::print_host_module(const ir::IRModule& module,
                                              std::vector<std::pair<std::string, std::string>>* functions) {
  std::ostringstream code;
  for (const std::string& name : module.names()) {
    ir::BaseFunc f = module.lookup(name);
    function_name_ = name;
    if (const auto* ext = f.as<ir::ExternFuncNode>()) {
      fail("is an extern function of kind '" + ext->kind + "'; its kind's plugin builds it, not the c codegen");
    }
    if (!f.as<tir::PrimFuncNode>()) fail("is not a prim function");
    begin_function(name);
    std::ostringstream text;
    out_ = &text;
    std::string symbol = symbol_for(name);
    auto func = downcast<tir::PrimFunc>(f);
    device_type_ = tir::device_type_of(*func.get());
    print_body_function(func, symbol + "_body");
    print_entry(func, symbol, symbol + "_body");
    for (const std::string& o : outlined_) code << o;
    code << text.str();
    if (functions) functions->emplace_back(name, symbol);
  }
  std::string out =
      "/* Generated by Loom's C printer (docs/target-c.md). */\n" + preamble() +
      "#include \"loom/runtime/c_backend_api.h\"\n\n"
      "extern const LoomHostApi* __loom_host_api;\n"
      "extern void* __loom_module_ctx;\n\n"
      "/* Reports a failure: the message with one number formatted in. */\n"
      "static int32_t loom_fail(const char* format, long long value) {\n"
      "  char text[512];\n"
      "  snprintf(text, sizeof text, format, value);\n"
      "  __loom_host_api->set_last_error(text);\n"
      "  return -1;\n"
      "}\n\n"
      "/* Argument `index` as a compact (row-major) CPU tensor of the dtype\n"
      " * (code, bits, lanes) and rank `ndim`; null with the error set if not. */\n"
      "static const DLTensor* loom_tensor(const LoomValue* args, const int32_t* codes, int32_t index,\n"
      "                                   const char* buffer, int code, int bits, int lanes,\n"
      "                                   const char* dtype, int32_t ndim, int32_t device_type,\n"
      "                                   const char* device) {\n"
      "  char text[512];\n"
      "  const DLTensor* t = codes[index] == kLoomDLTensor ? (const DLTensor*)args[index].v_handle : 0;\n"
      "  int64_t expected = 1;\n"
      "  int32_t d;\n"
      "  if (!t) {\n"
      "    snprintf(text, sizeof text, \"argument %d (buffer '%s') must be a tensor\", (int)index, buffer);\n"
      "  } else if (t->device.device_type != device_type && device_type == kDLCPU) {\n"
      "    snprintf(text, sizeof text, \"argument %d (buffer '%s') is not on the CPU\", (int)index, buffer);\n"
      "  } else if (t->device.device_type != device_type) {\n"
      "    snprintf(text, sizeof text, \"argument %d (buffer '%s') is not on the %s device\", (int)index, buffer, "
      "device);\n"
      "  } else if (device_type != kDLCPU && t->byte_offset != 0) {\n"
      "    snprintf(text, sizeof text, \"argument %d (buffer '%s') has a byte offset, which a %s buffer cannot "
      "have\",\n"
      "             (int)index, buffer, device);\n"
      "  } else if (t->dtype.code != code || t->dtype.bits != bits || t->dtype.lanes != lanes) {\n"
      "    snprintf(text, sizeof text, \"argument %d (buffer '%s') must have dtype %s\", (int)index, buffer, dtype);\n"
      "  } else if (t->ndim != ndim) {\n"
      "    snprintf(text, sizeof text, \"buffer '%s' has %d dimensions, expected %d\", buffer, (int)t->ndim, "
      "(int)ndim);\n"
      "  } else {\n"
      "    for (d = 0; d < ndim; ++d)\n"
      "      if (t->shape[d] == 0) return t; /* empty: any strides */\n"
      "    for (d = ndim - 1; t->strides && d >= 0; --d) {\n"
      "      if (t->shape[d] != 1 && t->strides[d] != expected) break;\n"
      "      expected *= t->shape[d];\n"
      "    }\n"
      "    if (!t->strides || d < 0) return t;\n"
      "    snprintf(text, sizeof text, \"argument %d (buffer '%s') is not compact (row-major)\", (int)index, buffer);\n"
      "  }\n"
      "  __loom_host_api->set_last_error(text);\n"
      "  return 0;\n"
      "}\n\n";
  return out + helper_definitions() + code.str();
}

void CSourcePrinter::begin_function(const std::string& name) {
  function_name_ = name;
  device_type_ = kDLCPU;
  names_.clear();
  var_types_.clear();
  used_names_.clear();
  live_.clear();
  scope_.clear();
  outlined_.clear();
  indent_ = 0;
}

std::string CSourcePrinter::print_function(const tir::PrimFunc& func, const std::string& name) {
  begin_function(name);
  std::ostringstream text;
  std::ostringstream* saved = out_;
  out_ = &text;
  print_body_function(func, name);
  out_ = saved;
  std::string out;
  for (const std::string& o : outlined_) out += o;
  return out + text.str();
}

std::string CSourcePrinter::helper_definitions() const {
  std::string out;
  for (const std::string& h : helper_order_) out += helpers_.at(h) + "\n";
  return out;
}

std::string CSourcePrinter::function_head(const std::string& name, const std::vector<std::string>& params) {
  std::string head = function_qualifiers() + " int32_t " + name + "(";
  for (const std::string& p : params) head += p + ", ";
  return head + "LoomValue* loom_ret, int32_t* loom_ret_code)";
}

std::string CSourcePrinter::memory_type(DataType t) {
  return t.code == DataType::kBool ? "uint8_t" : scalar_type(scalar_of(t));
}

void CSourcePrinter::print_body_function(const tir::PrimFunc& func, const std::string& name) {
  std::vector<std::string> params;
  for (const tir::Buffer& b : func.buffer_params()) {
    std::string space = pointer_space(b.get());
    std::string pointer = (space.empty() ? "" : space + " ") + memory_type(b->dtype) + "*";
    params.push_back(pointer + " restrict " + declare(b->data.get(), pointer));
  }
  for (const tir::VarNode* v : tir::entry_scalars(func))
    params.push_back(scalar_type(v->dtype) + " " + declare(v, scalar_type(v->dtype)));
  open_block(function_head(name, params));
  has_result_ = true;
  print_stmt(func->body);
  std::string tail = function_tail();
  if (!tail.empty()) line() << tail << "\n";
  close_block();
  *out_ << "\n";
}

void CSourcePrinter::print_entry(const tir::PrimFunc& func, const std::string& symbol, const std::string& body) {
  auto fail_if = [&](const std::string& condition, const std::string& message, const std::string& number) {
    line() << "if (" << condition << ") return loom_fail(" << c_string_literal(format_of(message)) << ", (long long)("
           << number << "));\n";
  };
  open_block("int32_t " + symbol +
             "(const LoomValue* loom_args, const int32_t* loom_codes, int32_t loom_num_args, LoomValue* loom_ret, "
             "int32_t* loom_ret_code, void* loom_resource)");
  line() << "(void)loom_resource;\n";
  std::vector<tir::Buffer> buffers = func.buffer_params();
  size_t num_params = func->params.size(), num_buffers = buffers.size();
  // Called with every parameter, or (destination passing) with the buffers
  // only: the scalars then come from the buffers' shapes.
  line() << "const int loom_full = loom_num_args == " << num_params << ";\n";
  fail_if("!loom_full && loom_num_args != " + std::to_string(num_buffers),
          "takes " + std::to_string(num_buffers) + " tensors (or " + std::to_string(num_params) + " values), got %lld",
          "loom_num_args");
  size_t next = 0;
  for (size_t i = 0; i < num_params; ++i) {
    const auto* buffer = func->params[i].as_object_ref().as<tir::BufferNode>();
    if (!buffer) continue;
    std::string t = "loom_t" + std::to_string(next);
    DataType dt = buffer->dtype;
    std::string index =
        i == next ? std::to_string(i) : "loom_full ? " + std::to_string(i) + " : " + std::to_string(next);
    ++next;
    line() << "const DLTensor* " << t << " = loom_tensor(loom_args, loom_codes, " << index << ", "
           << c_string_literal(buffer->name) << ", " << int{dt.code} << ", " << int{dt.bits} << ", " << dt.lanes << ", "
           << c_string_literal(dt.to_string()) << ", " << buffer->shape.size() << ", " << device_type_ << ", "
           << c_string_literal(runtime::device_name(device_type_)) << ");\n";
    line() << "if (!" << t << ") return -1;\n";
    line() << memory_type(dt) << "* " << name_of(buffer->data.get()) << " = (" << memory_type(dt) << "*)((char*)" << t
           << "->data + " << t << "->byte_offset);\n";
  }
  // Scalars: from the arguments (all parameters given) or from the first
  // buffer dimension that is the variable.
  for (const tir::VarNode* v : tir::entry_scalars(func)) {
    size_t i = 0;
    while (i < num_params && func->params[i].object() != v) ++i;
    std::string T = scalar_type(v->dtype), name = name_of(v);
    std::string from_shape;
    if (auto bound = tir::bind_from_shapes(buffers, v)) {
      from_shape = "loom_t" + std::to_string(bound->buffer) + "->shape[" + std::to_string(bound->dim) + "]";
      if (bound->offset != 0) from_shape = "(" + from_shape + " - " + std::to_string(bound->offset) + "LL)";
      // Exact when the shapes are right, which the checks below confirm.
      if (bound->scale != 1) from_shape = "(" + from_shape + " / " + std::to_string(bound->scale) + "LL)";
    }
    line() << T << " " << name << ";\n";
    if (i < num_params) {
      std::string slot = "loom_args[" + std::to_string(i) + "]", code = "loom_codes[" + std::to_string(i) + "]";
      open_block("if (loom_full)");
      if (is_float(v->dtype)) {
        fail_if(code + " != kLoomFloat && " + code + " != kLoomInt",
                "argument " + std::to_string(i) + " (%" + v->name + ") must be a number", "0");
        line() << name << " = (" << T << ")(" << code << " == kLoomFloat ? " << slot << ".v_float64 : (double)" << slot
               << ".v_int64);\n";
      } else {
        fail_if(code + " != kLoomInt", "argument " + std::to_string(i) + " (%" + v->name + ") must be an integer", "0");
        line() << name << " = "
               << (v->dtype.code == DataType::kBool ? "(" + slot + ".v_int64 != 0)" : "(" + T + ")" + slot + ".v_int64")
               << ";\n";
      }
      --indent_;
      line() << "} else {\n";
      ++indent_;
    }
    if (!from_shape.empty() && !is_float(v->dtype) && v->dtype.code != DataType::kBool) {
      line() << name << " = (" << T << ")" << from_shape << ";\n";
    } else {
      fail_if("1", "%" + v->name + " is not a dimension of any buffer, so it must be passed", "0");
    }
    if (i < num_params) close_block();
  }
  // Every dimension must agree with the buffer's shape.
  for (size_t k = 0; k < buffers.size(); ++k) {
    const tir::BufferNode* buffer = buffers[k].get();
    for (size_t d = 0; d < buffer->shape.size(); ++d) {
      std::string got = "loom_t" + std::to_string(k) + "->shape[" + std::to_string(d) + "]";
      fail_if(got + " != (int64_t)" + print_expr(buffer->shape[d].cast<tir::PrimExpr>()),
              "buffer '" + buffer->name + "' has dimension " + std::to_string(d) + " = %lld, but the buffer says " +
                  ir::to_text(buffer->shape[d]),
              got);
    }
  }
  line() << "*loom_ret_code = kLoomNull;\n";
  std::string call = body + "(";
  for (const tir::Buffer& b : buffers) call += name_of(b->data.get()) + ", ";
  for (const tir::VarNode* v : tir::entry_scalars(func)) call += name_of(v) + ", ";
  line() << "return " << call << "loom_ret, loom_ret_code);\n";
  close_block();
  *out_ << "\n";
}

// ---- statements --------------------------------------------------------------------------

void CSourcePrinter::print_stmt(const tir::Stmt& s) {
  if (const auto* op = s.as<tir::SeqStmtNode>()) {
    for (const Any& child : op->seq) print_stmt(child.cast<tir::Stmt>());
  } else if (const auto* op = s.as<tir::ForNode>()) {
    if (op->for_kind() == tir::ForKind::kParallel) {
      print_parallel_for(op);
    } else {
      print_for(op);
    }
  } else if (const auto* op = s.as<tir::BufferStoreNode>()) {
    print_store(op);
  } else if (const auto* op = s.as<tir::AllocateNode>()) {
    print_allocate(op);
  } else if (const auto* op = s.as<tir::LetStmtNode>()) {
    std::string value = print_expr(op->value);
    size_t mark = scope_mark();
    std::string T = type_name(op->var->dtype);
    line() << "const " << T << " " << declare(op->var.get(), T) << " = " << value << ";\n";
    print_stmt(op->body);
    close_scope(mark);
  } else if (const auto* op = s.as<tir::IfThenElseNode>()) {
    if (op->condition.dtype().lanes > 1) fail("an if with a vector condition: " + ir::to_text(Any(op->condition)));
    open_block("if (" + print_expr(op->condition) + ")");
    size_t mark = scope_mark();
    print_stmt(op->then_case);
    close_scope(mark);
    if (op->else_case.defined()) {
      --indent_;
      line() << "} else {\n";
      ++indent_;
      print_stmt(op->else_case);
      close_scope(mark);
    }
    close_block();
  } else if (const auto* op = s.as<tir::EvaluateNode>()) {
    print_evaluate(op);
  } else if (const auto* op = s.as<tir::AttrStmtNode>()) {
    print_stmt(op->body);
  } else {
    fail("cannot print the statement " + std::string(s->type_key()));
  }
}

void CSourcePrinter::print_for(const tir::ForNode* op) {
  std::string begin = print_expr(op->min), extent = print_expr(op->extent);
  std::string T = scalar_type(op->loop_var->dtype);
  size_t mark = scope_mark();
  if (op->for_kind() == tir::ForKind::kThreadBinding) {
    std::string index = thread_index(op->thread);
    open_block("");
    line() << "const " << T << " " << declare(op->loop_var.get(), T) << " = "
           << cast_text(T, "(" + begin + " + " + index + ")") << ";\n";
  } else {
    std::string i = declare(op->loop_var.get(), T);
    const auto* zero = op->min.as<tir::IntImmNode>();
    std::string end = zero && zero->value == 0 ? extent : "(" + begin + " + " + extent + ")";
    open_block("for (" + T + " " + i + " = " + begin + "; " + i + " < " + end + "; ++" + i + ")");
  }
  print_stmt(op->body);
  close_scope(mark);
  close_block();
}

// The loop body becomes a closure run by the host API's parallel_for; the
// values it uses travel in a struct on the caller's stack.
void CSourcePrinter::print_parallel_for(const tir::ForNode* op) {
  std::vector<const tir::VarNode*> captured =
      tir::used_vars(Any(op->body), [&](const tir::VarNode* v) { return live_.count(v) > 0; });
  std::string begin = print_expr(op->min), extent = print_expr(op->extent);
  int n = closures_++;
  std::string closure = symbol_for(function_name_) + "_parallel" + std::to_string(n);
  std::string record = "loom_closure_" + std::to_string(n) + "_" + symbol_for(function_name_);
  // The struct and the closure, printed before the function that uses them.
  std::ostringstream text;
  text << "struct " << record << " {\n";
  for (const tir::VarNode* v : captured) text << "  " << var_types_.at(v) << " " << names_.at(v) << ";\n";
  if (captured.empty()) text << "  char loom_unused;\n";
  text << "};\n\n";
  std::ostringstream* saved_out = out_;
  int saved_indent = indent_;
  bool saved_result = has_result_;
  out_ = &text;
  indent_ = 0;
  has_result_ = false;
  open_block("static int32_t " + closure + "(int64_t loom_begin, int64_t loom_end, void* loom_closure)");
  line() << "const struct " << record << "* loom_c = (const struct " << record << "*)loom_closure;\n";
  for (const tir::VarNode* v : captured) {
    std::string T = var_types_.at(v);
    bool pointer = !T.empty() && T.back() == '*';
    line() << T << (pointer ? " restrict " : " ") << names_.at(v) << " = loom_c->" << names_.at(v) << ";\n";
  }
  size_t mark = scope_mark();
  std::string T = scalar_type(op->loop_var->dtype), i = declare(op->loop_var.get(), T);
  open_block("for (" + T + " " + i + " = (" + T + ")loom_begin; " + i + " < (" + T + ")loom_end; ++" + i + ")");
  print_stmt(op->body);
  close_scope(mark);
  close_block();
  line() << "return 0;\n";
  close_block();
  text << "\n";
  outlined_.push_back(text.str());
  out_ = saved_out;
  indent_ = saved_indent;
  has_result_ = saved_result;

  std::string values;
  for (const tir::VarNode* v : captured) values += (values.empty() ? "" : ", ") + names_.at(v);
  open_block("");
  line() << "struct " << record << " loom_c = {" << (captured.empty() ? "0" : values) << "};\n";
  line() << "const int32_t loom_status = __loom_host_api->parallel_for(" << begin << ", " << begin << " + " << extent
         << ", " << closure << ", &loom_c);\n";
  line() << "if (loom_status != 0) return loom_status;\n";
  close_block();
}

void CSourcePrinter::print_allocate(const tir::AllocateNode* op) {
  const tir::BufferNode* buffer = op->buffer.get();
  if (buffer->scope != "global" && buffer->scope != "local") {
    fail("buffer '" + buffer->name + "' is in scope '" + buffer->scope + "', which the CPU does not have");
  }
  std::string T = memory_type(buffer->dtype);
  int64_t lanes = std::max<int>(1, buffer->dtype.lanes);
  std::string count = std::to_string(lanes) + "LL";
  bool constant = true;
  int64_t elements = lanes;
  for (const Any& d : buffer->shape) {
    auto dim = d.cast<tir::PrimExpr>();
    if (const auto* imm = dim.as<tir::IntImmNode>()) {
      elements *= imm->value;
    } else {
      constant = false;
    }
    count += " * (int64_t)(" + print_expr(dim) + ")";
  }
  size_t mark = scope_mark();
  std::string name = declare(buffer->data.get(), T + "*");
  // Allocations of at most this many constant bytes live on the stack.
  constexpr int64_t kMaxStackBytes = 64 * 1024;
  // A host function that launches kernels allocates its intermediate
  // buffers on their device.
  if (device_type_ == kDLCPU && constant && elements * std::max(1, buffer->dtype.bits / 8) <= kMaxStackBytes) {
    line() << T << " " << name << "[" << std::max<int64_t>(elements, 1) << "] __attribute__((aligned(64)));\n";
    print_stmt(op->body);
    close_scope(mark);
    return;
  }
  line() << T << "* " << name << " = (" << T << "*)__loom_host_api->alloc_workspace(" << device_type_
         << ", 0, (uint64_t)(" << count << ") * sizeof(" << T << "));\n";
  line() << "if (!" << name << ") return -1;\n";
  print_stmt(op->body);
  line() << "__loom_host_api->free_workspace(" << device_type_ << ", 0, " << name << ");\n";
  close_scope(mark);
}

void CSourcePrinter::print_store(const tir::BufferStoreNode* op) {
  const tir::BufferNode* buffer = op->buffer.get();
  DataType t = op->value.dtype();
  if (t.lanes > 1) vector_type(t);
  std::string value = print_expr(op->value);
  std::string index = element_index(buffer, op->indices);
  if (buffer->dtype.code == DataType::kBool) value = cast_text(memory_type(buffer->dtype), "(" + value + ")");
  line() << name_of(buffer->data.get()) << "[" << index << "] = " << value << ";\n";
}

void CSourcePrinter::print_evaluate(const tir::EvaluateNode* op) {
  const auto* c = op->value.as<tir::CallNode>();
  if (c && c->op == "tir.launch") return print_launch(c);
  if (c && c->op == "ret") {
    if (!has_result_) fail("ret inside a parallel loop");
    if (c->args.size() != 1) fail("ret takes one value");
    auto value = c->args[0].cast<tir::PrimExpr>();
    DataType t = value.dtype();
    if (t.lanes != 1) fail("ret of a vector");
    std::string v = arithmetic_operand(value);
    if (is_float(t) || t.code == DataType::kBFloat) {
      line() << "loom_ret->v_float64 = (double)(" << v << ");\n";
      line() << "*loom_ret_code = kLoomFloat;\n";
    } else {
      line() << "loom_ret->v_int64 = (int64_t)(" << v << ");\n";
      line() << "*loom_ret_code = kLoomInt;\n";
    }
    line() << "return 0;\n";
    return;
  }
  line() << "(void)(" << print_expr(op->value) << ");\n";
}

// ---- expressions -------------------------------------------------------------------------

std::string CSourcePrinter::element_index(const tir::BufferNode* buffer, const Array& indices) {
  std::string flat;
  if (indices.size() == 1 && buffer->strides.size() == 0) {
    flat = print_expr(indices[0].cast<tir::PrimExpr>());
  } else {
    if (indices.size() != buffer->shape.size()) {
      fail("buffer '" + buffer->name + "' has " + std::to_string(buffer->shape.size()) + " dimensions, indexed with " +
           std::to_string(indices.size()));
    }
    for (size_t d = 0; d < indices.size(); ++d) {
      std::string index = cast_text("int64_t", print_expr(indices[d].cast<tir::PrimExpr>()));
      if (buffer->strides.size() != 0) {
        std::string term = index + " * " + cast_text("int64_t", print_expr(buffer->strides[d].cast<tir::PrimExpr>()));
        flat = flat.empty() ? term : flat + " + " + term;
      } else {
        flat = flat.empty()
                   ? index
                   : "(" + flat + ") * " + cast_text("int64_t", print_expr(buffer->shape[d].cast<tir::PrimExpr>())) +
                         " + " + index;
      }
    }
    if (flat.empty()) flat = "0";  // a 0-d buffer's one element
  }
  const auto* zero = buffer->elem_offset.as<tir::IntImmNode>();
  if (buffer->elem_offset.defined() && !(zero && zero->value == 0))
    flat = print_expr(buffer->elem_offset) + " + " + flat;
  return flat;
}

std::string CSourcePrinter::print_float(DataType t, double value) {
  bool single = t.bits == 32;
  if (std::isnan(value)) return single ? "NAN" : "((double)NAN)";
  if (std::isinf(value)) return std::string(value < 0 ? "(-" : "(") + (single ? "INFINITY" : "(double)INFINITY") + ")";
  std::string text = shortest(value, single) + (single ? "f" : "");
  return value < 0 ? "(" + text + ")" : text;
}

std::string CSourcePrinter::print_int(DataType t, int64_t v) {
  if (t.code == DataType::kBool) return v ? "1" : "0";
  if (t.code == DataType::kUInt) {
    auto u = static_cast<uint64_t>(v);
    if (t.bits == 64) return std::to_string(u) + "ULL";
    if (t.bits == 32) return std::to_string(static_cast<uint32_t>(u)) + "U";
    return "(" + cast_text(scalar_type(t), std::to_string(u)) + ")";
  }
  if (t.bits == 64 && v == INT64_MIN) return "(-9223372036854775807LL - 1)";
  std::string digits = std::to_string(v) + (t.bits == 64 ? "LL" : "");
  if (t.bits == 32 && v == INT32_MIN) digits = "(-2147483647 - 1)";
  if (t.bits < 32) digits = cast_text(scalar_type(t), digits);
  return v < 0 || t.bits < 32 ? "(" + digits + ")" : digits;
}

std::string CSourcePrinter::print_expr(const tir::PrimExpr& e) {
  if (const auto* op = e.as<tir::IntImmNode>()) return print_int(op->dtype, op->value);
  if (const auto* op = e.as<tir::FloatImmNode>()) {
    if (op->dtype.code == DataType::kBFloat && op->dtype.lanes == 1) {
      return "(" +
             cast_text("uint16_t", float_to_bf16(print_float(DataType::Float(64), op->value), DataType::Float(64))) +
             ")";
    }
    return print_float(op->dtype, op->value);
  }
  if (const auto* op = e.as<tir::StringImmNode>()) return c_string_literal(op->value);
  if (const auto* op = e.as<tir::VarNode>()) return name_of(op);
  if (e.dtype().lanes > 1) vector_type(e.dtype());
  if (const auto* op = e.as<tir::BinaryOpNode>()) return print_binary(op);
  if (const auto* op = e.as<tir::NotNode>()) return "(!" + print_expr(op->a) + ")";
  if (const auto* op = e.as<tir::SelectNode>()) {
    return "(" + print_expr(op->condition) + " ? " + print_expr(op->true_value) + " : " + print_expr(op->false_value) +
           ")";
  }
  if (const auto* op = e.as<tir::CastNode>()) return print_cast(op->dtype, op->value);
  if (const auto* op = e.as<tir::BufferLoadNode>()) return print_load(op);
  if (const auto* op = e.as<tir::LetNode>()) {
    // Hoisted into a declaration before the statement being printed: the
    // IR's expressions have no side effects, and every branch is evaluated
    // as the llvm codegen evaluates them.
    std::string value = print_expr(op->value), T = type_name(op->var->dtype);
    line() << "const " << T << " " << declare(op->var.get(), T) << " = " << value << ";\n";
    return print_expr(op->body);
  }
  if (const auto* op = e.as<tir::CallNode>()) return print_call(op);
  fail("cannot print the expression " + ir::to_text(Any(e)));
}

std::string CSourcePrinter::print_binary(const tir::BinaryOpNode* op) {
  DataType t = op->a.dtype();
  if (t.code == DataType::kBFloat) return print_bf16_binary(op);
  std::string a = print_expr(op->a), b = print_expr(op->b);
  bool fl = is_float(t);
  auto is = [op](uint32_t index) { return op->type_index() == index; };
  auto infix = [&](const char* symbol) { return "(" + a + " " + symbol + " " + b + ")"; };
  // Arithmetic on integers narrower than int is done in int by C; the
  // result wraps to the IR's type.
  auto arithmetic = [&](const char* symbol) {
    std::string text = infix(symbol);
    return !fl && t.bits < 32 ? "(" + cast_text(scalar_type(t), text) + ")" : text;
  };
  if (is(tir::AddNode::runtime_type_index())) return arithmetic("+");
  if (is(tir::SubNode::runtime_type_index())) return arithmetic("-");
  if (is(tir::MulNode::runtime_type_index())) return arithmetic("*");
  if (is(tir::DivNode::runtime_type_index())) return fl ? infix("/") : helper_call("div", t, {a, b});
  if (is(tir::FloorDivNode::runtime_type_index())) return helper_call("floordiv", t, {a, b});
  if (is(tir::FloorModNode::runtime_type_index())) return helper_call("floormod", t, {a, b});
  if (is(tir::MinNode::runtime_type_index())) return helper_call("min", t, {a, b});
  if (is(tir::MaxNode::runtime_type_index())) return helper_call("max", t, {a, b});
  if (is(tir::EQNode::runtime_type_index())) return infix("==");
  if (is(tir::NENode::runtime_type_index())) return infix("!=");
  if (is(tir::LTNode::runtime_type_index())) return infix("<");
  if (is(tir::LENode::runtime_type_index())) return infix("<=");
  if (is(tir::GTNode::runtime_type_index())) return infix(">");
  if (is(tir::GENode::runtime_type_index())) return infix(">=");
  if (is(tir::AndNode::runtime_type_index())) return infix("&&");
  if (is(tir::OrNode::runtime_type_index())) return infix("||");
  fail("cannot print the operator " + std::string(op->type_key()));
}

// A binary operator on bfloat16: in float, an arithmetic result rounded
// back (a comparison's is a bool).
std::string CSourcePrinter::print_bf16_binary(const tir::BinaryOpNode* op) {
  DataType f32 = DataType::Float(32);
  std::string a = arithmetic_operand(op->a), b = arithmetic_operand(op->b);
  auto is = [op](uint32_t index) { return op->type_index() == index; };
  auto rounded = [&](const std::string& value) { return float_to_bf16(value, f32); };
  if (is(tir::AddNode::runtime_type_index())) return rounded("(" + a + " + " + b + ")");
  if (is(tir::SubNode::runtime_type_index())) return rounded("(" + a + " - " + b + ")");
  if (is(tir::MulNode::runtime_type_index())) return rounded("(" + a + " * " + b + ")");
  if (is(tir::DivNode::runtime_type_index())) return rounded("(" + a + " / " + b + ")");
  if (is(tir::FloorDivNode::runtime_type_index())) return rounded(helper_call("floordiv", f32, {a, b}));
  if (is(tir::FloorModNode::runtime_type_index())) return rounded(helper_call("floormod", f32, {a, b}));
  if (is(tir::MinNode::runtime_type_index())) return rounded(helper_call("min", f32, {a, b}));
  if (is(tir::MaxNode::runtime_type_index())) return rounded(helper_call("max", f32, {a, b}));
  static const std::map<uint32_t, const char*> comparisons = {
      {tir::EQNode::runtime_type_index(), "=="}, {tir::NENode::runtime_type_index(), "!="},
      {tir::LTNode::runtime_type_index(), "<"},  {tir::LENode::runtime_type_index(), "<="},
      {tir::GTNode::runtime_type_index(), ">"},  {tir::GENode::runtime_type_index(), ">="}};
  auto found = comparisons.find(op->type_index());
  if (found != comparisons.end()) return "(" + a + " " + found->second + " " + b + ")";
  fail("cannot print the operator " + std::string(op->type_key()) + " of bfloat16");
}

tir::PrimFunc CSourcePrinter::device_kernel(const ir::IRModule& module, const std::string& name,
                                            std::vector<std::string>* args) {
  ir::BaseFunc f = module.lookup(name);
  function_name_ = name;
  const auto* prim = f.as<tir::PrimFuncNode>();
  if (!prim || !prim->attrs.contains("device_kernel")) {
    fail(
        "is not a device kernel (SplitHostDevice makes kernels of thread-bound loops; the host code goes to the "
        "host target)");
  }
  auto func = downcast<tir::PrimFunc>(f);
  for (size_t k = 0; k < func.buffer_params().size(); ++k) args->push_back("buffer");
  for (const tir::VarNode* v : tir::entry_scalars(func)) {
    if (v->dtype.code == DataType::kBool || v->dtype.lanes != 1) {
      fail("the scalar %" + v->name + " of type " + v->dtype.to_string() + " cannot be a kernel argument");
    }
    args->push_back(v->dtype.to_string());
  }
  return func;
}

int64_t CSourcePrinter::constant_elements(const tir::BufferNode* buffer) {
  int64_t elements = std::max<int>(1, buffer->dtype.lanes);
  for (const Any& d : buffer->shape) {
    std::optional<int64_t> n = tir::const_int(d.cast<tir::PrimExpr>());
    if (!n) {
      fail("buffer '" + buffer->name +
           "' is allocated inside a kernel with a size known only at run time; a "
           "thread's or a block's array needs a constant size");
    }
    elements *= *n;
  }
  return std::max<int64_t>(elements, 1);
}

std::string CSourcePrinter::print_cast(DataType to, const tir::PrimExpr& value) {
  DataType from = value.dtype();
  if (to.code == DataType::kBFloat && to.lanes == 1) {
    std::string v = print_expr(value);
    if (from.code == DataType::kBFloat) return v;
    if (from.code != DataType::kFloat) v = cast_text("double", v);  // integers: exactly below 2^53
    return float_to_bf16(v, from.code == DataType::kFloat && from.bits == 32 ? from : DataType::Float(64));
  }
  std::string v = from.code == DataType::kBFloat ? bf16_to_float(print_expr(value)) : print_expr(value);
  if (to.code == DataType::kBool) return value.dtype().code == DataType::kBool ? v : "(" + v + " != 0)";
  return "(" + cast_text(scalar_type(to), v) + ")";
}

std::string CSourcePrinter::cast_text(const std::string& type, const std::string& value) {
  return "(" + type + ")" + value;
}

std::string CSourcePrinter::print_load(const tir::BufferLoadNode* op) {
  const tir::BufferNode* buffer = op->buffer.get();
  std::string text = name_of(buffer->data.get()) + "[" + element_index(buffer, op->indices) + "]";
  return buffer->dtype.code == DataType::kBool ? "(" + text + " != 0)" : text;
}

std::string CSourcePrinter::print_call(const tir::CallNode* op) {
  if (op->dtype.code == DataType::kBFloat && op->dtype.lanes == 1) {
    // A math function of bfloat16: in float, rounded back.
    std::string function = op->op == "abs" ? "fabsf" : intrinsic_name(op->op, DataType::Float(32));
    if (function.empty()) fail("the intrinsic '" + op->op + "' of bfloat16 has no C implementation");
    std::string call = function + "(";
    for (size_t k = 0; k < op->args.size(); ++k)
      call += (k ? ", " : "") + arithmetic_operand(op->args[k].cast<tir::PrimExpr>());
    return float_to_bf16(call + ")", DataType::Float(32));
  }
  std::vector<std::string> args;
  for (const Any& a : op->args) {
    auto e = a.cast<tir::PrimExpr>();
    bool widen = e.dtype().code == DataType::kBFloat && (op->op == "isnan" || op->op == "isinf");
    args.push_back(widen ? arithmetic_operand(e) : print_expr(e));
  }
  auto arity = [&](size_t n) {
    if (args.size() != n)
      fail(op->op + " takes " + std::to_string(n) + " argument(s), got " + std::to_string(args.size()));
  };
  const std::string& name = op->op;
  DataType t = op->dtype;
  if (name == "ret") fail("ret is a statement (evaluate it), not a value");
  if (name == "isnan" || name == "isinf") return arity(1), "(" + name + "(" + args[0] + ") != 0)";
  if (name == "bitwise_not") return arity(1), cast_text(type_name(t), "(~" + args[0] + ")");
  static const std::map<std::string, std::string> infix = {
      {"bitwise_and", "&"}, {"bitwise_or", "|"}, {"bitwise_xor", "^"}, {"shift_left", "<<"}, {"shift_right", ">>"}};
  if (auto found = infix.find(name); found != infix.end()) {
    arity(2);
    std::string T = type_name(t);
    std::string value = cast_text(T, "(" + args[0] + " " + found->second + " " + args[1] + ")");
    if (found->first.rfind("shift", 0) != 0) return value;
    // A shift by the width or more is undefined in C: 0 here (as in the
    // llvm target; an arithmetic right shift saturates at width - 1).  The
    // amount compares as unsigned: a negative one is past the width.
    std::string in_range =
        "(" + cast_text("uint64_t", args[1]) + " < " + cast_text("uint64_t", std::to_string(t.bits)) + ")";
    if (found->first == "shift_right" && !is_unsigned(t)) {
      return cast_text(
          T, "(" + args[0] + " >> (" + in_range + " ? " + args[1] + " : " +
                 cast_text(type_name(op->args[1].cast<tir::PrimExpr>().dtype()), std::to_string(t.bits - 1)) + "))");
    }
    return "(" + in_range + " ? " + value + " : " + cast_text(T, "0") + ")";
  }
  if (name == "abs") {
    arity(1);
    if (is_float(t)) return (t.bits == 32 ? "fabsf(" : "fabs(") + args[0] + ")";
    return is_unsigned(t) ? args[0] : helper_call("abs", t, args);
  }
  std::string function = intrinsic_name(name, t);
  if (function.empty()) {
    fail("the intrinsic '" + name + "' has no C implementation (run LowerIntrinsics for this target)");
  }
  arity(name == "pow" || name == "fmod" ? 2 : 1);
  std::string call = function + "(";
  for (size_t k = 0; k < args.size(); ++k) call += (k ? ", " : "") + args[k];
  return call + ")";
}

// tir.launch("kernel", grid x/y/z, block x/y/z, args...): the kernel,
// found by name among the module's imports, called through the host API
// with the six sizes and the arguments as LoomValues (buffers as their
// device handles).
void CSourcePrinter::print_launch(const tir::CallNode* op) {
  const auto* kernel = op->args.size() >= 7 ? op->args[0].as_object_ref().as<tir::StringImmNode>() : nullptr;
  if (!kernel) fail("tir.launch takes the kernel's name, six launch sizes and the kernel's arguments");
  size_t n = op->args.size() - 1;
  open_block("");
  line() << "void* loom_kernel;\n";
  line() << "LoomValue loom_a[" << n << "], loom_r;\n";
  line() << "int32_t loom_c[" << n << "], loom_rc;\n";
  for (size_t k = 0; k < n; ++k) {
    auto arg = op->args[k + 1].cast<tir::PrimExpr>();
    DataType t = arg.dtype();
    std::string value = print_expr(arg), at = std::to_string(k);
    if (t.code == DataType::kHandle) {
      line() << "loom_a[" << at << "].v_handle = (void*)(" << value << "); loom_c[" << at << "] = kLoomHandle;\n";
    } else if (is_float(t)) {
      line() << "loom_a[" << at << "].v_float64 = (double)(" << value << "); loom_c[" << at << "] = kLoomFloat;\n";
    } else {
      line() << "loom_a[" << at << "].v_int64 = (int64_t)(" << value << "); loom_c[" << at << "] = kLoomInt;\n";
    }
  }
  line() << "if (__loom_host_api->get_function(__loom_module_ctx, " << c_string_literal(kernel->value)
         << ", &loom_kernel) != 0) return -1;\n";
  line() << "if (__loom_host_api->call_function(loom_kernel, loom_a, loom_c, " << n
         << ", &loom_r, &loom_rc) != 0) return -1;\n";
  close_block();
}

}  // namespace loom::target
