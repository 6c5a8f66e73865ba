// The IR text format (docs/ir-text-format.md): a deterministic printer and
// a parser whose result is structurally equal to what was printed.
#ifndef LOOM_IR_TEXT_H_
#define LOOM_IR_TEXT_H_

#include <cstdint>
#include <string>

#include "loom/ir/module.h"

namespace loom::ir {

// The canonical text of a module.
std::string print_module(const IRModule& module);

// The same, with each constant of more than `elide_constants_over` bytes
// shown in the meta section by a description (dtype, shape, size) instead
// of its data, and a comment saying so: for reading a model's IR, not for
// parsing back.
std::string print_module(const IRModule& module, uint64_t elide_constants_over);

// The text of any IR node on its own (a function, an expression, a
// statement, a type, a value), for messages.  Variables and buffers bound
// outside the node print as bare names; nodes without syntax are shown as
// meta[N] without a meta section.  It is not meant to be parsed back.
std::string to_text(const Any& node);

// Parses a module.  Throws ParseError with "SOURCE:LINE:COL: message",
// followed by the source line and a caret under the column.
IRModule parse_module(const std::string& text, const std::string& source = "<text>");

}  // namespace loom::ir

#endif  // LOOM_IR_TEXT_H_
