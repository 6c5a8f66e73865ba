// Generic traversal of object graphs: a Visitor and a copy-on-write Mutator
// that work for every node type, including those a plugin defines, by
// walking reflected fields (Arrays and Maps are walked through).
//
// Handlers are registered per node type with on<Node>(...) and also apply
// to subtypes, so one handler for tir.BinaryOp sees every binary node; the
// most derived registered type wins.  Without a handler, a node's children
// are traversed.
//
// Both memoise by default: a node shared by several parents (a variable,
// a common subexpression) is visited once, and mutated once to one result.
//
// The Mutator is copy-on-write: a node whose children all come back
// unchanged is returned as the same object, so a pass that changes nothing
// returns its input.  A changed node is copied field by field (including a
// raw bytes payload) with the new children; fields derived from children
// (a dtype) are copied as they were, so a mutator that changes types
// rebuilds those nodes itself in a handler.
#ifndef LOOM_OBJECT_TRAVERSAL_H_
#define LOOM_OBJECT_TRAVERSAL_H_

#include <functional>
#include <unordered_map>
#include <unordered_set>

#include "loom/object/any.h"
#include "loom/object/reflection.h"

namespace loom {

class Visitor {
 public:
  explicit Visitor(bool memoize = true) : memoize_(memoize) {}
  virtual ~Visitor() = default;

  // Visits `value` if it holds an object (str and function values are leaves).
  void visit(const Any& value);
  // Visits the children of `node` (what happens without a handler).
  void visit_children(const Object* node);

  template <class Node>
  void on(std::function<void(const Node*)> handler) {
    handlers_[Node::runtime_type_index()] = [handler](const Object* node) { handler(static_cast<const Node*>(node)); };
    resolved_.clear();
  }

 private:
  using Handler = std::function<void(const Object*)>;
  const Handler* handler_for(uint32_t type_index);
  bool memoize_;
  std::unordered_map<uint32_t, Handler> handlers_;
  std::unordered_map<uint32_t, const Handler*> resolved_;
  std::unordered_set<const Object*> seen_;
};

class Mutator {
 public:
  explicit Mutator(bool memoize = true) : memoize_(memoize) {}
  virtual ~Mutator() = default;

  // The mutated value; the same object when nothing changed.
  Any mutate(const Any& value);
  template <class R>
  R mutate_as(const R& ref) {
    return mutate(Any(ref)).template cast<R>();
  }
  // Mutates the children of `node`, copying it only if one changed.
  ObjectRef mutate_children(const ObjectRef& node);

  // handler(node, self): returns the replacement; `self` is the node as a
  // handle, for returning it unchanged or calling mutate_children(self).
  template <class Node>
  void on(std::function<Any(const Node*, const ObjectRef& self)> handler) {
    handlers_[Node::runtime_type_index()] = [handler](const ObjectRef& self) {
      return handler(static_cast<const Node*>(self.get()), self);
    };
    resolved_.clear();
  }

 private:
  using Handler = std::function<Any(const ObjectRef&)>;
  const Handler* handler_for(uint32_t type_index);
  bool memoize_;
  std::unordered_map<uint32_t, Handler> handlers_;
  std::unordered_map<uint32_t, const Handler*> resolved_;
  std::unordered_map<const Object*, Any> memo_;
};

}  // namespace loom

#endif  // LOOM_OBJECT_TRAVERSAL_H_
