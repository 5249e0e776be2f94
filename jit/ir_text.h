#pragma once
// The text form of a Graph: printing (Graph::str) and parsing it back (jit::parse, jit::load).
#include <optional>
#include <string>
#include <string_view>

#include <strata/jit/graph.h>

namespace strata::jit::detail {

std::string print_graph(const Graph& graph);
// A constant as the text form writes it: 1, 0.5, True, None, "text", Float32, cpu, [1, 2].
std::string print_constant(const IValue& value);
// The dtype whose name (scalar_type_name) is `name`, if any.
std::optional<ScalarType> dtype_named(std::string_view name);
// The tensors of the graph's prim::Constant nodes, in order: $0, $1, ...
tensor_list graph_constants(const Graph& graph);
Graph parse_graph(const std::string& text, const tensor_list& constants, const char* op_name);

}  // namespace strata::jit::detail
