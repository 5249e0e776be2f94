// Printing a Graph as text and parsing it back. See Note [Graph text].
#include <strata/jit/ir_text.h>

#include <charconv>
#include <cmath>
#include <sstream>

namespace strata::jit::detail {

// Note [Graph text]
// One line per node, in the style of TorchScript's IR print-out:
//   graph(%0 : Float32[2, 3] cpu, %1 : Float32[3] cpu):
//     %2 : Float32[3, 4] cpu = prim::Constant($0)
//     %3 : Float32[2, 4] cpu = strata::matmul(%0, %2)
//     %4 : Float32[2] cpu, %5 : Int64[2] cpu = strata::max.dim(%3, 1, False)
//     return (%3, %4)
// Operands are values (%n), lists of values ([%1, None] for Tensor?[]), tensor constants ($k,
// the k-th prim::Constant's tensor, stored beside the text by Graph::save) and literals: ints
// (1), floats (0.5, 1e-05, inf, nan: always with a '.', 'e' or name, and shortest round-trip
// digits, so parsing gives the same double), True/False, None, "strings", dtypes (Float32),
// devices (cpu, cuda:0, meta) and lists of those. A non-tensor result is `_`. The parser
// converts each literal to what the operator's schema says the argument is, so an int literal
// passed as a Scalar comes back as an integral Scalar and prints the same.

namespace {

void print_info(std::ostream& out, const ValueInfo& info) {
  out << scalar_type_name(info.dtype) << IntArrayRef(info.sizes) << ' ' << info.device.str();
}

void print_quoted(std::ostream& out, const std::string& text) {
  out << '"';
  for (char c : text) {
    if (c == '"' || c == '\\') out << '\\' << c;
    else if (c == '\n') out << "\\n";
    else out << c;
  }
  out << '"';
}

template <class T>
void print_list(std::ostream& out, const std::vector<T>& items) {
  out << '[';
  for (size_t i = 0; i < items.size(); ++i) out << (i ? ", " : "") << print_constant(IValue(T(items[i])));
  out << ']';
}

void print_values(std::ostream& out, const std::vector<int>& ids) {
  out << '[';
  for (size_t i = 0; i < ids.size(); ++i) {
    out << (i ? ", " : "");
    if (ids[i] < 0) out << "None";
    else out << '%' << ids[i];
  }
  out << ']';
}

void print_output(std::ostream& out, const Graph& graph, const Operand& output) {
  if (output.kind == Operand::Kind::Value) {
    out << '%' << output.value << " : ";
    print_info(out, graph.values()[output.value]);
  } else if (output.kind == Operand::Kind::ValueList) {
    out << '[';
    for (size_t i = 0; i < output.values.size(); ++i) {
      out << (i ? ", " : "") << '%' << output.values[i] << " : ";
      print_info(out, graph.values()[output.values[i]]);
    }
    out << ']';
  } else {
    out << '_';
  }
}

}  // namespace

std::string print_constant(const IValue& value) {
  std::ostringstream out;
  switch (value.kind()) {
    case IValue::Kind::None: out << "None"; break;
    case IValue::Kind::Tensor: out << (value.to_tensor().defined() ? "<tensor>" : "None"); break;
    case IValue::Kind::Double: out << Scalar(value.to_double()); break;
    case IValue::Kind::Int: out << value.to_int(); break;
    case IValue::Kind::Bool: out << (value.to_bool() ? "True" : "False"); break;
    case IValue::Kind::String: print_quoted(out, value.to_string()); break;
    case IValue::Kind::Scalar: out << value.to_scalar(); break;
    case IValue::Kind::ScalarType: out << scalar_type_name(value.to_scalar_type()); break;
    case IValue::Kind::Device: out << value.to_device().str(); break;
    case IValue::Kind::IntList: print_list(out, value.to_int_list()); break;
    case IValue::Kind::DoubleList: print_list(out, value.to_double_list()); break;
    case IValue::Kind::BoolList: {
      const std::vector<bool>& items = value.to_bool_list();
      out << '[';
      for (size_t i = 0; i < items.size(); ++i) out << (i ? ", " : "") << (items[i] ? "True" : "False");
      out << ']';
      break;
    }
    default: out << '<' << value.kind_name() << '>'; break;
  }
  return out.str();
}

tensor_list graph_constants(const Graph& graph) {
  tensor_list constants;
  for (const Node& node : graph.nodes())
    if (node.op == "prim::Constant") constants.push_back(node.inputs[0].constant.to_tensor());
  return constants;
}

std::string print_graph(const Graph& graph) {
  std::ostringstream out;
  out << "graph(";
  for (size_t i = 0; i < graph.inputs().size(); ++i) {
    out << (i ? ", " : "") << '%' << graph.inputs()[i] << " : ";
    print_info(out, graph.values()[graph.inputs()[i]]);
  }
  out << "):\n";
  int constant_index = 0;
  for (const Node& node : graph.nodes()) {
    out << "  ";
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      out << (i ? ", " : "");
      print_output(out, graph, node.outputs[i]);
    }
    if (node.outputs.empty()) out << '_';
    out << " = " << node.op;
    if (node.is_function()) out << '[' << node.function->name << ']';
    out << '(';
    if (node.op == "prim::Constant") {
      out << '$' << constant_index++;
    } else {
      for (size_t i = 0; i < node.inputs.size(); ++i) {
        const Operand& input = node.inputs[i];
        out << (i ? ", " : "");
        if (input.kind == Operand::Kind::Value) out << '%' << input.value;
        else if (input.kind == Operand::Kind::Constant) out << print_constant(input.constant);
        else print_values(out, input.values);
      }
    }
    out << ")\n";
  }
  out << "  return (";
  for (size_t i = 0; i < graph.outputs().size(); ++i) out << (i ? ", " : "") << '%' << graph.outputs()[i];
  out << ")\n";
  return out.str();
}

}  // namespace strata::jit::detail
