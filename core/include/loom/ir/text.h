// The text of an IR node for messages.  The printer is the text area's
// (loom/text/text.h, above graph and tir), which installs it when the core
// library loads; the areas below it print nodes through this function.
#ifndef LOOM_IR_TEXT_H_
#define LOOM_IR_TEXT_H_

#include <string>

#include "loom/object/any.h"

namespace loom::ir {

// The text of any IR node on its own (a function, an expression, a
// statement, a type, a value), for messages.  Variables and buffers bound
// outside the node print as bare names; nodes without syntax are shown as
// meta[N] without a meta section.  It is not meant to be parsed back.
std::string to_text(const Any& node);

// Installs the printer to_text uses (the text area does, once).  Before
// that, and when the printer throws, to_text shows the node's reflected
// fields (loom/object/structural.h, repr).
void set_node_printer(std::string (*printer)(const Any& node));

}  // namespace loom::ir

#endif  // LOOM_IR_TEXT_H_
