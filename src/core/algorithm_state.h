// Which state type each algorithm keeps, so that code generic over the algorithm list (the memory
// store's tables, the tests) can name it: core::StateOf<Algorithm::kGcra> is core::GcraState.
//
// Each algorithm's header (src/core/<name>.h) declares, next to its State and decide():
//   GcraState state_of(AlgorithmTag<Algorithm::kGcra>);   // declared only, never defined
// src/core/all_algorithms.h (generated from spillway/algorithm_list.h) includes every such header.
#pragma once

#include "spillway/algorithm.h"

namespace spillway::core {

template <Algorithm A>
struct AlgorithmTag {};

template <Algorithm A>
using StateOf = decltype(state_of(AlgorithmTag<A>{}));

}  // namespace spillway::core
