// The wrapper stack: which wrappers open_store (spillway/open_store.h) puts around a Redis
// backend, under which option, in which order. One list (kRedisWrappers in wrapper_stack.cc),
// innermost first; open_store applies each entry whose option is set, in that order, so the
// order is read there and nowhere else. The memory backend is never wrapped.
//
// Thread safety: the list is constant; wrap_redis_backend builds a store, from any thread.
#pragma once

#include <memory>
#include <span>
#include <string_view>

#include "spillway/open_store.h"
#include "spillway/store.h"

namespace spillway {

// One wrapper of the stack.
struct StoreWrapper {
  std::string_view name;                           // the wrapper's class, as docs/ARCHITECTURE.md
  bool (*enabled)(const BackendOptions& options);  // whether the options ask for it
  // `inner` wrapped; may move from `options` what the wrapper takes (it is applied once).
  std::unique_ptr<Store> (*wrap)(std::unique_ptr<Store> inner, BackendOptions& options);
};

// The stack, innermost first.
std::span<const StoreWrapper> redis_wrapper_stack();

// `backend` wrapped by every entry of the stack that `options` enable, innermost first; the
// backend itself when none is. Moves from `options` what the wrappers take.
std::unique_ptr<Store> wrap_redis_backend(std::unique_ptr<Store> backend, BackendOptions& options);

}  // namespace spillway
