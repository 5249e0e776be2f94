// Parsing the text form of a Graph back into a Graph. See Note [Graph text] in ir_text.cpp.
#include <strata/jit/ir_text.h>

#include <charconv>
#include <cmath>
#include <limits>

namespace strata::jit::detail {
namespace {

using strata::detail::str_cat;
using strata::detail::throw_error;

// A literal or reference as written, before the schema says what it is.
struct Literal {
  enum class Kind { Value, Constant, None, Int, Double, Bool, String, Identifier, List };
  Kind kind = Kind::None;
  int64_t integer = 0;
  double real = 0;
  std::string text;
  std::vector<Literal> items;
};

class Parser {
 public:
  Parser(const std::string& text, const char* op_name) : text_(text), op_name_(op_name) {}

  [[noreturn]] void fail(std::string_view what) const {
    size_t line = 1, start = 0;
    for (size_t i = 0; i < position_ && i < text_.size(); ++i)
      if (text_[i] == '\n') ++line, start = i + 1;
    size_t end = text_.find('\n', start);
    throw_error<ValueError>("[", op_name_, "] line ", line, ": ", what, ": '",
                            text_.substr(start, end == std::string::npos ? std::string::npos : end - start), "'");
  }
  void skip_spaces() {
    while (position_ < text_.size() && text_[position_] == ' ') ++position_;
  }
  bool at_end() const { return position_ >= text_.size(); }
  char peek() {
    skip_spaces();
    return at_end() ? '\0' : text_[position_];
  }
  bool accept(std::string_view token) {
    skip_spaces();
    if (text_.compare(position_, token.size(), token) != 0) return false;
    position_ += token.size();
    return true;
  }
  void expect(std::string_view token) {
    if (!accept(token)) fail(str_cat("expected '", token, "'"));
  }
  std::string_view word() {  // identifiers, op names, numbers: up to a delimiter
    skip_spaces();
    size_t start = position_;
    while (position_ < text_.size() && std::string_view(" ,()[]\n").find(text_[position_]) == std::string_view::npos)
      ++position_;
    if (start == position_) fail("expected a name or number");
    return std::string_view(text_).substr(start, position_ - start);
  }
  int64_t integer() {
    std::string_view digits = word();
    int64_t value = 0;
    auto [end, error] = std::from_chars(digits.data(), digits.data() + digits.size(), value);
    if (error != std::errc() || end != digits.data() + digits.size()) fail(str_cat("expected an integer, got ", digits));
    return value;
  }
  int value_id() {
    expect("%");
    return static_cast<int>(integer());
  }

  ValueInfo info() {
    expect(":");
    std::string_view type = word();  // "Float32[2, 3]" stops at '['
    std::optional<ScalarType> dtype = dtype_named(type);
    if (!dtype) fail(str_cat("unknown dtype ", type));
    ValueInfo info{*dtype, {}, Device(kCPU)};
    expect("[");
    while (!accept("]")) {
      info.sizes.push_back(integer());
      accept(",");
    }
    info.device = Device(word());
    return info;
  }

  Literal literal() {
    Literal out;
    const char c = peek();
    if (c == '%') {
      out.kind = Literal::Kind::Value;
      out.integer = value_id();
    } else if (c == '$') {
      ++position_;
      out.kind = Literal::Kind::Constant;
      out.integer = integer();
    } else if (c == '[') {
      ++position_;
      out.kind = Literal::Kind::List;
      while (!accept("]")) {
        out.items.push_back(literal());
        accept(",");
      }
    } else if (c == '"') {
      ++position_;
      out.kind = Literal::Kind::String;
      while (!at_end() && text_[position_] != '"') {
        char next = text_[position_++];
        if (next == '\\' && !at_end()) next = text_[position_] == 'n' ? '\n' : text_[position_], ++position_;
        out.text += next;
      }
      expect("\"");
    } else {
      number_or_name(word(), out);
    }
    return out;
  }

  void number_or_name(std::string_view token, Literal& out) {
    if (token == "None") return;
    if (token == "True" || token == "False") {
      out.kind = Literal::Kind::Bool;
      out.integer = token == "True";
      return;
    }
    if (token == "inf" || token == "-inf" || token == "nan") {
      out.kind = Literal::Kind::Double;
      out.real = token == "nan" ? std::numeric_limits<double>::quiet_NaN()
                                : (token[0] == '-' ? -1.0 : 1.0) * std::numeric_limits<double>::infinity();
      return;
    }
    const bool numeric = std::isdigit(static_cast<unsigned char>(token[0])) || token[0] == '-';
    if (!numeric) {
      out.kind = Literal::Kind::Identifier;
      out.text = std::string(token);
      return;
    }
    const char* end = token.data() + token.size();
    if (token.find_first_of(".e") == std::string_view::npos) {
      out.kind = Literal::Kind::Int;
      auto [stop, error] = std::from_chars(token.data(), end, out.integer);
      if (error != std::errc() || stop != end) fail(str_cat("bad integer ", token));
    } else {
      out.kind = Literal::Kind::Double;
      auto [stop, error] = std::from_chars(token.data(), end, out.real);
      if (error != std::errc() || stop != end) fail(str_cat("bad number ", token));
    }
  }

  size_t position_ = 0;
  const std::string& text_;
  const char* op_name_;
};

// A literal as an IValue of its own kind (for arguments whose schema type says no more).
IValue plain_value(const Parser& parser, const Literal& literal) {
  switch (literal.kind) {
    case Literal::Kind::None: return IValue();
    case Literal::Kind::Int: return IValue(literal.integer);
    case Literal::Kind::Double: return IValue(literal.real);
    case Literal::Kind::Bool: return IValue(literal.integer != 0);
    case Literal::Kind::String: return IValue(literal.text);
    case Literal::Kind::Identifier:
      if (auto dtype = dtype_named(literal.text)) return IValue(*dtype);
      return IValue(Device(literal.text));
    case Literal::Kind::List: {
      if (literal.items.empty()) return IValue(std::vector<int64_t>{});
      const Literal::Kind first = literal.items[0].kind;
      if (first == Literal::Kind::Double) {
        std::vector<double> items;
        for (const Literal& item : literal.items) items.push_back(item.kind == Literal::Kind::Int ? item.integer : item.real);
        return IValue(items);
      }
      if (first == Literal::Kind::Bool) {
        std::vector<bool> items;
        for (const Literal& item : literal.items) items.push_back(item.integer != 0);
        return IValue(items);
      }
      std::vector<int64_t> items;
      for (const Literal& item : literal.items) items.push_back(item.integer);
      return IValue(items);
    }
    default: parser.fail("a value or constant tensor where a literal was expected");
  }
}

// The literal as the schema's argument type wants it.
IValue typed_value(const Parser& parser, const Literal& literal, const SchemaType& type) {
  if (literal.kind == Literal::Kind::None) return IValue();
  if (type.is_list) {
    if (type.base == BaseType::Float && literal.kind == Literal::Kind::List) {
      std::vector<double> items;
      for (const Literal& item : literal.items) items.push_back(item.kind == Literal::Kind::Int ? item.integer : item.real);
      return IValue(items);
    }
    if (type.base == BaseType::Bool && literal.kind == Literal::Kind::List) {
      std::vector<bool> items;
      for (const Literal& item : literal.items) items.push_back(item.integer != 0);
      return IValue(items);
    }
    return plain_value(parser, literal);
  }
  switch (type.base) {
    case BaseType::Float:
      if (literal.kind == Literal::Kind::Int) return IValue(static_cast<double>(literal.integer));
      return plain_value(parser, literal);
    case BaseType::Scalar:
      if (literal.kind == Literal::Kind::Int) return IValue(Scalar(literal.integer));
      if (literal.kind == Literal::Kind::Double) return IValue(Scalar(literal.real));
      if (literal.kind == Literal::Kind::Bool) return IValue(Scalar(literal.integer != 0));
      return plain_value(parser, literal);
    default: return plain_value(parser, literal);
  }
}

Operand operand(const Parser& parser, const Literal& literal, const SchemaType& type) {
  if (literal.kind == Literal::Kind::Value) return Operand::of_value(static_cast<int>(literal.integer));
  if (type.base == BaseType::Tensor && type.is_list && literal.kind == Literal::Kind::List) {
    Operand out{type.element_optional ? Operand::Kind::OptionalValueList : Operand::Kind::ValueList, -1, {}, {}};
    for (const Literal& item : literal.items) {
      if (item.kind != Literal::Kind::Value && item.kind != Literal::Kind::None) parser.fail("a tensor list holds values");
      out.values.push_back(item.kind == Literal::Kind::Value ? static_cast<int>(item.integer) : -1);
    }
    return out;
  }
  if (literal.kind == Literal::Kind::Constant) parser.fail("constant tensors ($k) enter through prim::Constant");
  return Operand::of_constant(typed_value(parser, literal, type));
}

class GraphReader {
 public:
  GraphReader(const std::string& text, const tensor_list& constants, const char* op_name)
      : parser_(text, op_name), constants_(constants), op_name_(op_name) {}

  Graph read() {
    parser_.expect("graph(");
    while (!parser_.accept(")")) {
      int id = parser_.value_id();
      define(id, parser_.info());
      graph_.add_input(id);
      parser_.accept(",");
    }
    parser_.expect(":");
    line_end();
    while (!parser_.accept("return")) read_node();
    parser_.expect("(");
    while (!parser_.accept(")")) {
      int id = parser_.value_id();
      check_defined(id);
      graph_.add_output(id);
      parser_.accept(",");
    }
    line_end();
    return std::move(graph_);
  }

 private:
  void line_end() {
    parser_.skip_spaces();
    if (!parser_.accept("\n") && !parser_.at_end()) parser_.fail("expected the end of the line");
  }
  void define(int id, ValueInfo info) {
    if (id != static_cast<int>(graph_.values().size())) parser_.fail(str_cat("values are numbered in order; expected %", graph_.values().size()));
    graph_.add_value(std::move(info));
  }
  void check_defined(int id) {
    if (id < 0 || id >= static_cast<int>(graph_.values().size())) parser_.fail(str_cat("%", id, " is used before it is defined"));
  }

  Operand output() {
    if (parser_.accept("_")) return Operand{};
    if (parser_.accept("[")) {
      Operand out{Operand::Kind::ValueList, -1, {}, {}};
      while (!parser_.accept("]")) {
        int id = parser_.value_id();
        define(id, parser_.info());
        out.values.push_back(id);
        parser_.accept(",");
      }
      return out;
    }
    int id = parser_.value_id();
    define(id, parser_.info());
    return Operand::of_value(id);
  }

  void read_node();
  void resolve_op(Node& node, std::string_view name);

  Parser parser_;
  const tensor_list& constants_;
  const char* op_name_;
  Graph graph_;
};

void GraphReader::resolve_op(Node& node, std::string_view name) {
  node.op = std::string(name);
  if (name == "prim::Function") {
    parser_.expect("[");
    std::string_view function = parser_.word();
    parser_.fail(str_cat("node calls the bare Function ", function,
                         ", which only replays in the process that traced it; make it an op (def a schema and "
                         "impl autograd::kernel<", function, ">() for Autograd) and call the op instead"));
  }
  if (name == "prim::Constant") return;
  STRATA_CHECK_VALUE(has_op(name), "[", op_name_, "] operator ", name,
                     " is not registered; load the library that defines it (load_library) first");
  node.handle = find_op(name);
}

void GraphReader::read_node() {
  Node node;
  do node.outputs.push_back(output());
  while (parser_.accept(","));
  parser_.expect("=");
  resolve_op(node, parser_.word());
  parser_.expect("(");
  if (node.op == "prim::Constant") {
    parser_.expect("$");
    const int64_t index = parser_.integer();
    STRATA_CHECK_VALUE(index >= 0 && index < static_cast<int64_t>(constants_.size()), "[", op_name_,
                       "] constant $", index, " is missing (", constants_.size(), " constant tensors given)");
    node.inputs.push_back(Operand::of_constant(IValue(constants_[index])));
    parser_.expect(")");
  } else {
    const FunctionSchema& schema = node.handle.schema();
    while (!parser_.accept(")")) {
      if (node.inputs.size() >= schema.arguments.size()) parser_.fail(str_cat(node.op, " takes ", schema.arguments.size(), " arguments"));
      Literal literal = parser_.literal();
      Operand input = operand(parser_, literal, schema.arguments[node.inputs.size()].type);
      if (input.is_value()) check_defined(input.value);
      for (int id : input.values) if (id >= 0) check_defined(id);
      node.inputs.push_back(std::move(input));
      parser_.accept(",");
    }
    if (node.outputs.size() == 1 && node.outputs[0].is_constant() && schema.returns.empty()) node.outputs.clear();
  }
  line_end();
  graph_.add_node(std::move(node));
}

}  // namespace

std::optional<ScalarType> dtype_named(std::string_view name) {
  for (int i = 0; i <= static_cast<int>(ScalarType::Float64); ++i)
    if (scalar_type_name(static_cast<ScalarType>(i)) == name) return static_cast<ScalarType>(i);
  return std::nullopt;
}

Graph parse_graph(const std::string& text, const tensor_list& constants, const char* op_name) {
  return GraphReader(text, constants, op_name).read();
}

}  // namespace strata::jit::detail
