// The base of a named builder: a declaration written one named call per
// field (PassInfo::named("FuseOps").summary(...).needs(...)) instead of a
// positional initialiser.  A builder converts to what it builds.
#ifndef LOOM_SUPPORT_BUILDER_H_
#define LOOM_SUPPORT_BUILDER_H_

#include <utility>

namespace loom {

// `Self` derives from FieldBuilder<T, Self> and names its setters; each
// setter returns set(&T::field, value).
template <class T, class Self>
class FieldBuilder {
 public:
  T build() const { return value_; }
  operator T() const { return value_; }  // NOLINT: a builder stands for what it builds

 protected:
  template <class F, class V>
  Self& set(F T::*field, V value) {
    value_.*field = std::move(value);
    return static_cast<Self&>(*this);
  }
  T value_;
};

}  // namespace loom

#endif  // LOOM_SUPPORT_BUILDER_H_
