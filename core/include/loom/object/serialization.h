// JSON save and load of any object graph, through reflection only: every
// node type, including those plugins define, is covered without code of
// its own.  Sharing is preserved (a node referenced twice is stored once and
// loaded as one object).  The format (docs/json-format.md):
//
//   {"loom_json": 1, "loom_version": "0.1.0", "root": VALUE, "nodes": [NODE, ...]}
//   NODE  = {"type": KEY, "fields": {NAME: VALUE, ...}, "bytes": BASE64?}
//         | {"type": "Array", "items": [VALUE, ...]}
//         | {"type": "Map", "items": {KEY: VALUE, ...}}
//   VALUE = null | true | false | INTEGER | "string" | {"float": "1.5"}
//         | {"dtype": "float32"} | {"device": "cpu:0"} | {"ref": INDEX}
//
// Nodes come children first, so a reference always points to an earlier
// node; the loader enforces it, which also rules out cycles.  Functions and
// opaque handles cannot be saved (Error naming the field).
#ifndef LOOM_OBJECT_SERIALIZATION_H_
#define LOOM_OBJECT_SERIALIZATION_H_

#include <string>

#include "loom/object/any.h"

namespace loom {

constexpr int kJsonFormatVersion = 1;

std::string save_json(const Any& root);

// Throws ParseError ("SOURCE:LINE:COL: ...") for malformed or truncated
// text, a newer format version, unknown types or fields (with a
// suggestion), missing fields, wrong field types and bad references.
Any load_json(const std::string& text, const std::string& source = "<json>");

}  // namespace loom

#endif  // LOOM_OBJECT_SERIALIZATION_H_
