#pragma once
// Internal: boxed-argument matching shared by boxing.cpp and overloads.cpp.
#include <optional>

#include <strata/dispatch/ivalue.h>
#include <strata/dispatch/schema.h>

namespace strata::detail {

// How well a boxed call's arguments fit a schema (lower is better: 0 when every kind is exact);
// nullopt when they do not fit. See Note [Overload resolution] in overloads.cpp.
std::optional<int> boxed_match_cost(const FunctionSchema& schema, const Stack& stack);

}  // namespace strata::detail
