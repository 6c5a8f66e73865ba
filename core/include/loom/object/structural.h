// Generic algorithms over reflected objects: a printer, structural equality
// (with the path of the first difference) and a structural hash.  They work
// for every object type, including those a plugin defines, by walking the
// fields that the type's reflect() declared; String, Array and Map are known
// by type.  See StructuralKind for how variables and unique nodes compare.
#ifndef LOOM_OBJECT_STRUCTURAL_H_
#define LOOM_OBJECT_STRUCTURAL_H_

#include <cstdint>
#include <optional>
#include <string>

#include "loom/object/any.h"

namespace loom {

// A readable, deterministic rendering: "test.Point(x=1, y=2)", "[1, 2]",
// "{a: 1}", "'text'", "float32", "cpu:0".
std::string repr(const Any& value);

bool structural_equal(const Any& lhs, const Any& rhs);

// Structural equality in which variables are equal only to themselves (no
// renaming): whether two expressions over the same variables compute the
// same thing, as a simplifier needs.  (structural_equal would match
// `i + 1` with `j + 1`, its free variables being renamed consistently.)
bool same_expression(const Any& lhs, const Any& rhs);

// The first difference as "<path>: <lhs> vs <rhs>", for example
// "root.items[1].x: 2 vs 3"; nullopt when the values are structurally equal.
std::optional<std::string> structural_difference(const Any& lhs, const Any& rhs);

uint64_t structural_hash(const Any& value);

// The hash that goes with same_expression: variables hash by identity, so
// `relu(%a)` and `relu(%b)` (different variables) hash apart.
uint64_t expression_hash(const Any& value);

}  // namespace loom

#endif  // LOOM_OBJECT_STRUCTURAL_H_
