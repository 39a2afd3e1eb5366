// Kept for source compatibility: PolicySpec and its parts are in spillway/policy_spec.h.
#pragma once

#include "spillway/policy_spec.h"  // IWYU pragma: export
