// JSON save and load of any object graph, through reflection only: every
// node type, including those plugins define, is covered without code of
// its own.  Sharing is preserved (a node referenced twice is stored once and
// loaded as one object).  The format (docs/json-format.md):
//
//   {"loom_json": 1, "loom_version": "0.2.0", "root": VALUE, "nodes": [NODE, ...]}
//   NODE  = {"type": KEY, "fields": {NAME: VALUE, ...}, "bytes": BYTES?}
//         | {"type": "Array", "items": [VALUE, ...]}
//         | {"type": "Map", "items": {KEY: VALUE, ...}}
//   VALUE = null | true | false | INTEGER | "string" | {"float": "1.5"}
//         | {"dtype": "float32"} | {"device": "cpu:0"} | {"ref": INDEX}
//
//   BYTES = "BASE64" | {"offset": N, "size": N, ...}  (a blob reference)
//
// Nodes come children first, so a reference always points to an earlier
// node; the loader enforces it, which also rules out cycles.  Functions and
// opaque handles cannot be saved (Error naming the field).
#ifndef LOOM_OBJECT_SERIALIZATION_H_
#define LOOM_OBJECT_SERIALIZATION_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/object/any.h"

namespace loom {

class JsonWriter;
struct JsonValue;

constexpr int kJsonFormatVersion = 1;

// Where raw payloads (an NDArray's data) go instead of base64 text: the
// sink stores the bytes and writes the node's "bytes" value, a JSON object
// that describes where they are ({"offset": .., "size": .., ...}), and
// returns true; returning false writes them inline as base64.
using BlobSink = std::function<bool(std::string_view bytes, JsonWriter& json)>;
// The other direction: the bytes a "bytes" object describes.  An Error it
// throws is reported at that object's position.
using BlobSource = std::function<std::string(const JsonValue& reference)>;

std::string save_json(const Any& root, const BlobSink& sink = nullptr);

// What a BlobSource reads from a reference: the checked offset and size of
// a `kind` reference ("blob", "weights") whose keys are `other_keys`,
// "offset" and "size" (non-negative integers), inside a section of
// `section_bytes` bytes described by `section` in messages.  Error for an
// unknown key, a missing or negative field, or a range outside the section.
struct BlobRange {
  uint64_t offset = 0, size = 0;
};
BlobRange blob_range(const JsonValue& reference, const std::string& kind, const std::vector<std::string>& other_keys,
                     uint64_t section_bytes, const std::string& section);

// Throws ParseError ("SOURCE:LINE:COL: ...") for malformed or truncated
// text, a newer format version, unknown types or fields (with a
// suggestion), missing fields, wrong field types and bad references.  A
// "bytes" object is resolved through `blobs`; without one it is an error.
Any load_json(const std::string& text, const std::string& source = "<json>", const BlobSource& blobs = nullptr);

// The binary form (docs/json-format.md, "Blob references and the binary
// form"): a header, the JSON document, and every raw payload as bytes in a
// trailing, 64-byte aligned blob section that the JSON references by
// offset and size.  What runtime modules save (VM executables and their
// constants): no base64, no payload in the JSON parser.
std::string save_binary(const Any& root);
bool is_binary_document(std::string_view bytes);
// Errors name `source`: a bad header, a section past the end, a reference
// outside the blob section, and everything load_json refuses.
Any load_binary(const std::string& bytes, const std::string& source = "<binary>");
// load_binary for a binary document, else load_json: what a runtime
// module's loader calls, so payloads saved as JSON by earlier Loom still load.
Any load_document(const std::string& bytes, const std::string& source);

}  // namespace loom

#endif  // LOOM_OBJECT_SERIALIZATION_H_
