// The IR text format (docs/ir-text-format.md): a deterministic printer and
// a parser whose result is structurally equal to what was printed, and
// module files (the text with its weights beside it).  The printer also
// gives ir::to_text (loom/ir/text.h) its text.
#ifndef LOOM_TEXT_TEXT_H_
#define LOOM_TEXT_TEXT_H_

#include <cstdint>
#include <string>

#include "loom/ir/function.h"
#include "loom/ir/module.h"
#include "loom/ir/text.h"
#include "loom/object/serialization.h"

namespace loom::text {

using ir::IRModule;

// The canonical text of a module.
std::string print_module(const IRModule& module);

// The same, with each constant of more than `elide_constants_over` bytes
// shown in the meta section by a description (dtype, shape, size) instead
// of its data, and a comment saying so: for reading a model's IR, not for
// parsing back.
std::string print_module(const IRModule& module, uint64_t elide_constants_over);

// The text with each constant's bytes handed to `sink`, which writes a
// blob reference in their place (loom/object/serialization.h).
std::string print_module(const IRModule& module, const BlobSink& sink);

// Parses a module.  Throws ParseError with "SOURCE:LINE:COL: message",
// followed by the source line and a caret under the column.
IRModule parse_module(const std::string& text, const std::string& source = "<text>");
// The same, with the meta section's blob references resolved by `blobs`.
IRModule parse_module(const std::string& text, const std::string& source, const BlobSource& blobs);

// "SOURCE:LINE:COL", where the (1-based) `line` and `column` of extern
// function `f`'s payload stand in the text it was parsed from (SOURCE as
// given to parse_module: the file's path for a file); a column past the
// end of its line is that line's end.  "" when `f` was not parsed from text
// (built in Python or C++, read from JSON), its payload changed since, or
// the payload has no such line.  For an extern kind's diagnostics
// (docs/ir-text-format.md, "Extern functions").
std::string payload_position(const ir::ExternFuncNode& f, int line, int column);

// ---- module files: the text, and its weights beside it -------------------
// (docs/ir-text-format.md, "Weights beside the text")

// Constants of more than this many bytes go to the weights file.
constexpr uint64_t kWeightsFileOver = 1024;

struct ModuleFileContents {
  std::string text;
  std::string weights;  // the weights file's bytes; empty when no constant goes there
};

// What save_module_file writes, for a weights file named `weights_name`
// (a plain file name, in the text's folder).
ModuleFileContents module_file_contents(const IRModule& module, const std::string& weights_name);

// Writes the text to `path` and, when a constant is larger than
// kWeightsFileOver, the raw bytes of every such constant to PATH.weights,
// which the text names with each constant's offset and size and the
// file's checksum (a PATH.weights of an earlier save is removed when no
// constant is that large).
void save_module_file(const IRModule& module, const std::string& path);

// Reads a module file written by save_module_file or by hand.  A blob
// reference names a weights file in the same folder as `path`; it must
// exist, be a Loom weights file, and have the checksum the text names
// (else a ParseError at the reference: text and weights were saved
// apart).  `weights_name`, when given, receives the name of the weights
// file the text uses (empty if none).
IRModule load_module_file(const std::string& path, std::string* weights_name = nullptr);

}  // namespace loom::text

#endif  // LOOM_TEXT_TEXT_H_
