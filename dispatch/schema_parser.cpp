// Parser and printer for operator schemas; see Note [Schema language].
#include <strata/dispatch/schema.h>
#include <strata/tensor/errors.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <span>
#include <string>
#include <system_error>
#include <unordered_set>
#include <utility>

namespace strata {

// Note [Schema language]
// ~~~~~~~~~~~~~~~~~~~~~~
// We accept PyTorch's operator schema language with a hand-written recursive-descent parser.
// Whitespace may appear between any two tokens.
//
//   schema   := name ['.' ident] '(' [param (',' param)*] ')' '->' returns
//   name     := ident ['::' ident]                  "aten::add"
//   param    := '*' | type ident ['=' default]      arguments after the one '*' are keyword-only;
//                                                   '*' must be followed by an argument
//   returns  := '(' [ret (',' ret)*] ')' | ret      "()" means nothing is returned
//   ret      := type [ident]                        no defaults, no '*'
//   type     := base [alias] ['?'] ['[' [size] ']' ['?'] [alias]]
//                 "Tensor?" optional, "Tensor?[]" list of optional Tensors,
//                 "int[2]" list of 2 ints, "int[]?" optional list
//   base     := Tensor | int | SymInt | float | bool | str | Scalar | ScalarType | Device
//             | Layout | MemoryFormat | Generator   (SymInt is read as int)
//   alias    := '(' ident ['!'] ['->' after] ')'   Tensor only; '!' marks a write.
//   after    := set ('|' set)*, set: ident or '*'   "Tensor(a -> *)": in set a before the op,
//                                                   in any set after it (ATen's chunk, split)
//   size     := digits                              1 .. k_max_list_size
//   default  := None | True | False | int | float | string | ident
//             | '[' [scalar (',' scalar)*] ']'      scalar: int, float, True or False
//   int      := ['-'] digits
//   float    := ['-'] digits '.' digits* [exp] | ['-'] digits exp | ['-'] inf | nan
//   exp      := ('e' | 'E') ['+' | '-'] digits
//   string   := '...' | "..."                       escapes: \\ \' \" \n \t \r
//   ident    := [A-Za-z_][A-Za-z0-9_]*
//
// Defaults are checked against the argument's type and stored typed: None needs an optional
// type; int takes an integer or identifier (`int reduction=Mean`); float takes any number
// (stored as double); bool takes True/False; str a string; Scalar a number or bool (kept as
// int64_t, double or bool as written); ScalarType/Layout/MemoryFormat an identifier; Device an
// identifier or string; Tensor and Generator only None. int[], float[] and bool[] take a list
// literal or a single value, which becomes N copies for "T[N]" and one element for "T[]".
//
// The parser never recurses, rejects schemas over k_max_schema_bytes and caps list sizes, so
// hostile input costs time linear in its length. Errors are strata::ValueError:
//   [name.overload] invalid schema: <what> at column <c>
//   <schema text>
//   <caret under column c>

namespace {

constexpr size_t k_max_schema_bytes = 64 * 1024;
constexpr int64_t k_max_list_size = 1024;
constexpr size_t k_max_quoted = 40;  // longest token quoted in an error message

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_ident_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_ident_char(char c) { return is_ident_start(c) || is_digit(c); }

struct TypeName {
  std::string_view text;
  BaseType base;
};
// The first spelling of each BaseType is its canonical name.
constexpr std::array<TypeName, 12> k_type_names = {{
    {"Tensor", BaseType::Tensor}, {"int", BaseType::Int}, {"SymInt", BaseType::Int},
    {"float", BaseType::Float}, {"bool", BaseType::Bool}, {"str", BaseType::Str},
    {"Scalar", BaseType::Scalar}, {"ScalarType", BaseType::ScalarType},
    {"Device", BaseType::Device}, {"Layout", BaseType::Layout},
    {"MemoryFormat", BaseType::MemoryFormat}, {"Generator", BaseType::Generator}}};

// A default value as written, before it is checked against the argument's type.
struct Literal {
  enum class Kind { None, Int, Float, Bool, Str, Ident, List };
  Kind kind = Kind::None;
  int64_t int_value = 0;
  double float_value = 0.0;
  bool bool_value = false;
  std::string text;               // Str contents or Ident spelling
  std::vector<Literal> elements;  // List: Int, Float or Bool literals
  size_t begin = 0;               // offsets into the schema text
  size_t end = 0;
};

std::string format_double(double value) {
  if (std::isnan(value)) return "nan";
  std::array<char, 64> buffer{};
  auto result = std::to_chars(buffer.data(), buffer.data() + buffer.size(), value);
  std::string text(buffer.data(), result.ptr);
  // Keep a '.' or exponent so the text reads back as a float ("inf" contains an 'n').
  if (text.find_first_of(".en") == std::string::npos) text += '.';
  return text;
}

std::string quote_string(const std::string& value) {
  std::string out = "'";
  for (char c : value) {
    switch (c) {
      case '\\': out += "\\\\"; break;
      case '\'': out += "\\'"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default: out += c;
    }
  }
  return out + "'";
}

struct DefaultPrinter {
  std::string operator()(const DefaultValue::None&) const { return "None"; }
  std::string operator()(int64_t value) const { return std::to_string(value); }
  std::string operator()(double value) const { return format_double(value); }
  std::string operator()(bool value) const { return value ? "True" : "False"; }
  std::string operator()(const std::string& value) const { return quote_string(value); }
  std::string operator()(const DefaultValue::Identifier& value) const { return value.text; }
  template <class T>
  std::string operator()(const std::vector<T>& values) const {
    std::string out = "[";
    for (size_t i = 0; i < values.size(); ++i) {
      if (i > 0) out += ", ";
      out += (*this)(static_cast<T>(values[i]));
    }
    return out + "]";
  }
};

std::string type_text(const SchemaType& type, const std::optional<AliasInfo>& alias) {
  std::string out(base_type_name(type.base));
  if (alias) {
    out += "(" + alias->set + (alias->is_write ? "!" : "");
    for (size_t i = 0; i < alias->after_sets.size(); ++i) out += (i == 0 ? " -> " : "|") + alias->after_sets[i];
    out += ")";
  }
  if (!type.is_list) return type.optional ? out + "?" : out;
  if (type.element_optional) out += '?';
  out += '[';
  if (type.list_size) out += std::to_string(*type.list_size);
  out += ']';
  if (type.optional) out += '?';
  return out;
}

// Which literal kinds (a bit mask) a non-list type takes as its default, and how to say so.
struct DefaultRule {
  unsigned kinds;
  std::string_view expected;
};

constexpr unsigned bit(Literal::Kind kind) { return 1u << static_cast<unsigned>(kind); }
constexpr unsigned k_list_element_kinds =
    bit(Literal::Kind::Int) | bit(Literal::Kind::Float) | bit(Literal::Kind::Bool);

DefaultRule default_rule(BaseType base) {
  using K = Literal::Kind;
  switch (base) {
    case BaseType::Int: return {bit(K::Int) | bit(K::Ident), "an integer, Mean or Sum"};
    case BaseType::Float: return {bit(K::Int) | bit(K::Float), "a number"};
    case BaseType::Bool: return {bit(K::Bool), "True or False"};
    case BaseType::Str: return {bit(K::Str), "a quoted string"};
    case BaseType::Scalar:
      return {bit(K::Int) | bit(K::Float) | bit(K::Bool), "a number, True or False"};
    case BaseType::Device:
      return {bit(K::Ident) | bit(K::Str), "cpu, cuda, meta or a device string such as 'cuda:1'"};
    case BaseType::ScalarType: return {bit(K::Ident), "a dtype name such as float, long or bfloat16"};
    case BaseType::Layout: return {bit(K::Ident), "strided"};
    case BaseType::MemoryFormat:
      return {bit(K::Ident), "contiguous_format, preserve_format, channels_last or channels_last_3d"};
    case BaseType::Tensor:
    case BaseType::Generator: break;
  }
  return {0, "None"};
}

// The identifiers each type takes as a default; see Note [Identifier defaults] in boxing.cpp.
constexpr std::string_view k_int_identifiers[] = {"Mean", "Sum"};
constexpr std::string_view k_dtype_identifiers[] = {"bool",    "uint8", "int32",    "int",     "int64",
                                                    "long",    "float16", "half",   "bfloat16", "float32",
                                                    "float",   "float64", "double", "int8",    "char",
                                                    "int16",   "short"};
constexpr std::string_view k_layout_identifiers[] = {"strided"};
constexpr std::string_view k_memory_format_identifiers[] = {"contiguous_format", "preserve_format",
                                                            "channels_last", "channels_last_3d"};
constexpr std::string_view k_device_identifiers[] = {"cpu", "cuda", "meta"};

std::span<const std::string_view> identifiers_for(BaseType base) {
  switch (base) {
    case BaseType::Int: return k_int_identifiers;
    case BaseType::ScalarType: return k_dtype_identifiers;
    case BaseType::Layout: return k_layout_identifiers;
    case BaseType::MemoryFormat: return k_memory_format_identifiers;
    case BaseType::Device: return k_device_identifiers;
    default: return {};
  }
}

bool is_identifier_for(BaseType base, std::string_view text) {
  auto names = identifiers_for(base);
  return std::find(names.begin(), names.end(), text) != names.end();
}

// "cpu", "meta", "cuda" or "cuda:N", as Device(std::string_view) reads them.
bool is_device_text(std::string_view text) {
  if (text == "cpu" || text == "meta" || text == "cuda") return true;
  if (!text.starts_with("cuda:") || text.size() == 5 || text.size() > 8) return false;
  return std::all_of(text.begin() + 5, text.end(), is_digit);
}

// Converts a literal to a default for a non-list `base`, or nullopt when it does not fit.
std::optional<DefaultValue> scalar_default(const Literal& lit, BaseType base) {
  using K = Literal::Kind;
  if ((default_rule(base).kinds & bit(lit.kind)) == 0) return std::nullopt;
  if (lit.kind == K::Ident && !is_identifier_for(base, lit.text)) return std::nullopt;
  if (lit.kind == K::Str && base == BaseType::Device && !is_device_text(lit.text)) return std::nullopt;
  switch (lit.kind) {
    case K::Int:
      if (base == BaseType::Float) return DefaultValue{static_cast<double>(lit.int_value)};
      return DefaultValue{lit.int_value};
    case K::Float: return DefaultValue{lit.float_value};
    case K::Bool: return DefaultValue{lit.bool_value};
    case K::Str: return DefaultValue{lit.text};
    case K::Ident: return DefaultValue{DefaultValue::Identifier{lit.text}};
    case K::None:
    case K::List: break;
  }
  return std::nullopt;
}

// What an element of an int[], float[] or bool[] default must be.
std::string_view element_expected(BaseType base) {
  return base == BaseType::Int ? "an integer" : default_rule(base).expected;
}

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}
  FunctionSchema parse();

 private:
  using NameSet = std::unordered_set<std::string>;

  [[noreturn]] void fail(size_t pos, const std::string& what) const;
  [[noreturn]] void fail_expected(std::string_view expected);
  std::string describe(size_t pos) const;
  std::string excerpt(size_t begin, size_t end) const;
  char char_at(size_t pos) const { return pos < text_.size() ? text_[pos] : '\0'; }
  size_t skip_digits(size_t pos) const;
  void skip_space();
  bool peek(std::string_view token);
  bool consume(std::string_view token);
  void expect(std::string_view token, std::string_view expected);
  std::string_view identifier(std::string_view what);

  void parse_name(FunctionSchema& schema);
  void parse_arguments(FunctionSchema& schema);
  void parse_star(bool& kwarg_only, size_t star_pos);
  void parse_returns(FunctionSchema& schema);
  Argument parse_argument(bool is_return, NameSet& names);
  void parse_type(Argument& arg);
  BaseType parse_base_type();
  AliasInfo parse_alias(BaseType base, size_t paren_pos);
  void parse_list_suffix(SchemaType& type);

  Literal parse_list_literal();
  Literal parse_atom();
  Literal parse_word();
  Literal parse_number();
  Literal parse_string();
  char parse_escape(size_t pos);

  DefaultValue convert_default(const Literal& lit, const Argument& arg) const;
  template <class T>
  DefaultValue list_default(const Literal& lit, const Argument& arg) const;
  template <class T>
  T list_element(const Literal& element, const Argument& arg, bool in_list) const;
  [[noreturn]] void fail_default(const Literal& lit, const Argument& arg,
                                 std::string_view expected) const;

  std::string_view text_;
  size_t pos_ = 0;
  std::string label_ = "schema";
};

// ---- errors and tokens ------------------------------------------------------------------

void Parser::fail(size_t pos, const std::string& what) const {
  // Show the whole schema when it is short, otherwise a window around the column.
  size_t begin = 0;
  size_t end = text_.size();
  if (end > 200) {
    begin = pos > 100 ? pos - 100 : 0;
    end = std::min(text_.size(), pos + 60);
  }
  std::string line = begin > 0 ? "..." : "";
  size_t caret = line.size() + (pos - begin);
  for (size_t i = begin; i < end; ++i) {
    unsigned char c = static_cast<unsigned char>(text_[i]);
    line += (c < 0x20 || c == 0x7f) ? ' ' : text_[i];
  }
  if (end < text_.size()) line += "...";
  detail::throw_error<ValueError>("[", label_, "] invalid schema: ", what, " at column ", pos + 1,
                                  "\n", line, "\n", std::string(caret, ' '), "^");
}

void Parser::fail_expected(std::string_view expected) {
  skip_space();
  fail(pos_, detail::str_cat("expected ", expected, " but found ", describe(pos_)));
}

std::string Parser::excerpt(size_t begin, size_t end) const {
  end = std::min(end, text_.size());
  if (end - begin > k_max_quoted) return std::string(text_.substr(begin, k_max_quoted)) + "...";
  return std::string(text_.substr(begin, end - begin));
}

// Names the token at `pos` for "expected X but found Y" messages.
std::string Parser::describe(size_t pos) const {
  if (pos >= text_.size()) return "end of schema";
  char c = text_[pos];
  size_t end = pos + 1;
  if (is_ident_start(c) || is_digit(c) || (c == '-' && is_digit(char_at(pos + 1)))) {
    while (end < text_.size() && (is_ident_char(text_[end]) || text_[end] == '.')) ++end;
  } else if (text_.substr(pos, 2) == "->" || text_.substr(pos, 2) == "::") {
    end = pos + 2;
  } else if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
    auto byte = static_cast<unsigned char>(c);
    return detail::str_cat("byte 0x", "0123456789abcdef"[byte >> 4],
                           "0123456789abcdef"[byte & 0xf]);
  }
  return "'" + excerpt(pos, end) + "'";
}

size_t Parser::skip_digits(size_t pos) const {
  while (pos < text_.size() && is_digit(text_[pos])) ++pos;
  return pos;
}

void Parser::skip_space() {
  while (pos_ < text_.size() && is_space(text_[pos_])) ++pos_;
}

bool Parser::peek(std::string_view token) {
  skip_space();
  return text_.substr(pos_, token.size()) == token;
}

bool Parser::consume(std::string_view token) {
  if (!peek(token)) return false;
  pos_ += token.size();
  return true;
}

void Parser::expect(std::string_view token, std::string_view expected) {
  if (!consume(token)) fail_expected(expected);
}

std::string_view Parser::identifier(std::string_view what) {
  skip_space();
  if (!is_ident_start(char_at(pos_))) fail_expected(what);
  size_t begin = pos_;
  while (pos_ < text_.size() && is_ident_char(text_[pos_])) ++pos_;
  return text_.substr(begin, pos_ - begin);
}

// ---- schema structure -------------------------------------------------------------------

FunctionSchema Parser::parse() {
  if (text_.size() > k_max_schema_bytes) {
    fail(k_max_schema_bytes, detail::str_cat("schema is ", text_.size(),
                                             " bytes long; the limit is ", k_max_schema_bytes));
  }
  FunctionSchema schema;
  parse_name(schema);
  parse_arguments(schema);
  parse_returns(schema);
  skip_space();
  if (pos_ < text_.size()) fail_expected("end of schema");
  return schema;
}

void Parser::parse_name(FunctionSchema& schema) {
  schema.name = identifier("an operator name");
  if (consume("::")) schema.name += "::" + std::string(identifier("an operator name after '::'"));
  label_ = schema.name;
  if (consume(".")) {
    const size_t begin = pos_;
    schema.overload_name = identifier("an overload name after '.'");
    // As in PyTorch: `default` names the overload without a name, and `__...` names clash with
    // Python attributes of torch.ops (so schemas stay portable).
    if (schema.overload_name == "default" || schema.overload_name.starts_with("__"))
      fail(begin, "overload name '" + schema.overload_name + "' is reserved");
  }
  label_ = schema.full_name();
}

void Parser::parse_arguments(FunctionSchema& schema) {
  expect("(", "'('");
  if (consume(")")) return;
  NameSet names;
  bool kwarg_only = false;
  do {
    skip_space();
    size_t star_pos = pos_;
    if (consume("*")) {
      parse_star(kwarg_only, star_pos);
      continue;
    }
    schema.arguments.push_back(parse_argument(false, names));
    schema.arguments.back().kwarg_only = kwarg_only;
  } while (consume(","));
  expect(")", "',' or ')'");
}

void Parser::parse_star(bool& kwarg_only, size_t star_pos) {
  if (kwarg_only) fail(star_pos, "duplicate '*'; keyword-only arguments are already marked");
  kwarg_only = true;
  if (!peek(",")) fail_expected("',' and keyword-only arguments after '*'");
}

void Parser::parse_returns(FunctionSchema& schema) {
  expect("->", "'->'");
  NameSet names;
  if (!consume("(")) {
    schema.returns.push_back(parse_argument(true, names));
    return;
  }
  schema.returns_tuple_syntax = true;
  if (consume(")")) return;
  do {
    schema.returns.push_back(parse_argument(true, names));
  } while (consume(","));
  expect(")", "',' or ')'");
}

Argument Parser::parse_argument(bool is_return, NameSet& names) {
  if (is_return && peek("*")) fail(pos_, "'*' is not allowed in returns");
  Argument arg;
  parse_type(arg);
  skip_space();
  size_t name_pos = pos_;
  if (!is_return || is_ident_start(char_at(pos_))) {
    arg.name = identifier(is_return ? "a return name" : "an argument name");
    if (!names.insert(arg.name).second) {
      fail(name_pos, detail::str_cat("duplicate ", is_return ? "return" : "argument", " name '",
                                     arg.name, "'"));
    }
  }
  skip_space();
  size_t equals_pos = pos_;
  if (consume("=")) {
    if (is_return) fail(equals_pos, "return values cannot have default values");
    arg.default_value = convert_default(peek("[") ? parse_list_literal() : parse_atom(), arg);
  }
  return arg;
}

// ---- types ------------------------------------------------------------------------------

void Parser::parse_type(Argument& arg) {
  arg.type.base = parse_base_type();
  skip_space();
  size_t paren_pos = pos_;
  if (consume("(")) arg.alias = parse_alias(arg.type.base, paren_pos);
  arg.type.optional = consume("?");
  if (consume("[")) {
    parse_list_suffix(arg.type);
    // PyTorch also writes a list's alias after the brackets: Tensor[](a) is Tensor(a)[].
    skip_space();
    paren_pos = pos_;
    if (!arg.alias && consume("(")) arg.alias = parse_alias(arg.type.base, paren_pos);
  }
}

BaseType Parser::parse_base_type() {
  skip_space();
  size_t begin = pos_;
  std::string_view word = identifier("a type");
  for (const TypeName& type : k_type_names) {
    if (type.text == word) return type.base;
  }
  fail(begin, "unknown type '" + excerpt(begin, pos_) + "'");
}

AliasInfo Parser::parse_alias(BaseType base, size_t paren_pos) {
  if (base != BaseType::Tensor) {
    fail(paren_pos, detail::str_cat("alias annotations are only allowed on Tensor, not on '",
                                    base_type_name(base), "'"));
  }
  AliasInfo alias;
  alias.set = identifier("an alias set name");
  alias.is_write = consume("!");
  if (consume("->")) {
    do {
      alias.after_sets.emplace_back(consume("*") ? std::string_view("*") : identifier("an alias set name or '*' after '->'"));
    } while (consume("|"));
  }
  expect(")", "')'");
  return alias;
}

void Parser::parse_list_suffix(SchemaType& type) {
  type.is_list = true;
  type.element_optional = type.optional;
  type.optional = false;
  skip_space();
  if (is_digit(char_at(pos_))) {
    Literal size = parse_number();
    if (size.kind != Literal::Kind::Int || size.int_value < 1 || size.int_value > k_max_list_size) {
      fail(size.begin, detail::str_cat("list size '", excerpt(size.begin, size.end),
                                       "' must be between 1 and ", k_max_list_size));
    }
    type.list_size = size.int_value;
  }
  expect("]", "a list size or ']'");
  type.optional = consume("?");
  if (peek("[")) fail(pos_, "nested list types are not supported");
}

// ---- default values ---------------------------------------------------------------------

Literal Parser::parse_list_literal() {
  Literal list;
  list.kind = Literal::Kind::List;
  list.begin = pos_;
  ++pos_;  // '['
  if (!consume("]")) {
    do {
      if (peek("[")) fail(pos_, "nested lists are not supported in default values");
      Literal element = parse_atom();
      if ((bit(element.kind) & k_list_element_kinds) == 0) {
        fail(element.begin, "list elements must be numbers, True or False, but found '" +
                                excerpt(element.begin, element.end) + "'");
      }
      list.elements.push_back(std::move(element));
    } while (consume(","));
    expect("]", "',' or ']'");
  }
  list.end = pos_;
  return list;
}

Literal Parser::parse_atom() {
  skip_space();
  char c = char_at(pos_);
  if (c == '\'' || c == '"') return parse_string();
  if (c == '-' || is_digit(c)) return parse_number();
  if (is_ident_start(c)) return parse_word();
  fail_expected("a default value");
}

Literal Parser::parse_word() {
  Literal lit;
  lit.begin = pos_;
  std::string_view word = identifier("a default value");
  lit.end = pos_;
  if (word == "None") {
    lit.kind = Literal::Kind::None;
  } else if (word == "True" || word == "False") {
    lit.kind = Literal::Kind::Bool;
    lit.bool_value = word == "True";
  } else if (word == "inf" || word == "nan") {
    lit.kind = Literal::Kind::Float;
    lit.float_value = word == "inf" ? std::numeric_limits<double>::infinity()
                                    : std::numeric_limits<double>::quiet_NaN();
  } else {
    lit.kind = Literal::Kind::Ident;
    lit.text = std::string(word);
  }
  return lit;
}

Literal Parser::parse_number() {
  Literal lit;
  lit.begin = pos_;
  size_t p = char_at(pos_) == '-' ? pos_ + 1 : pos_;
  if (text_.substr(p, 3) == "inf" && !is_ident_char(char_at(p + 3))) {
    lit.kind = Literal::Kind::Float;
    lit.float_value = -std::numeric_limits<double>::infinity();
    lit.end = pos_ = p + 3;
    return lit;
  }
  if (!is_digit(char_at(p))) fail(p, "expected a digit after '-' but found " + describe(p));
  bool is_float = false;
  p = skip_digits(p);
  if (char_at(p) == '.') {
    is_float = true;
    p = skip_digits(p + 1);
  }
  if (char_at(p) == 'e' || char_at(p) == 'E') {
    size_t q = (char_at(p + 1) == '+' || char_at(p + 1) == '-') ? p + 2 : p + 1;
    if (!is_digit(char_at(q))) fail(lit.begin, "malformed number '" + excerpt(lit.begin, q) + "'");
    is_float = true;
    p = skip_digits(q);
  }
  if (is_ident_char(char_at(p)) || char_at(p) == '.') {
    fail(lit.begin, "malformed number " + describe(lit.begin));
  }
  const char* first = text_.data() + lit.begin;
  const char* last = text_.data() + p;
  std::from_chars_result result{};
  if (is_float) {
    lit.kind = Literal::Kind::Float;
    result = std::from_chars(first, last, lit.float_value);
  } else {
    lit.kind = Literal::Kind::Int;
    result = std::from_chars(first, last, lit.int_value);
  }
  if (result.ec != std::errc{} || result.ptr != last) {
    fail(lit.begin, detail::str_cat("number '", excerpt(lit.begin, p), "' is out of range for ",
                                    is_float ? "a 64-bit float" : "a 64-bit integer"));
  }
  lit.end = pos_ = p;
  return lit;
}

Literal Parser::parse_string() {
  Literal lit;
  lit.kind = Literal::Kind::Str;
  lit.begin = pos_;
  char quote = text_[pos_];
  size_t p = pos_ + 1;
  while (p < text_.size() && text_[p] != quote) {
    if (text_[p] == '\\' && p + 1 < text_.size()) {
      lit.text += parse_escape(p + 1);
      p += 2;
    } else {
      lit.text += text_[p++];
    }
  }
  if (p >= text_.size()) fail(lit.begin, "unterminated string literal");
  lit.end = pos_ = p + 1;
  return lit;
}

char Parser::parse_escape(size_t pos) {
  switch (text_[pos]) {
    case 'n': return '\n';
    case 't': return '\t';
    case 'r': return '\r';
    case '\\':
    case '\'':
    case '"': return text_[pos];
    default: break;
  }
  fail(pos - 1, "unsupported escape sequence: '\\' followed by " + describe(pos));
}

DefaultValue Parser::convert_default(const Literal& lit, const Argument& arg) const {
  if (lit.kind == Literal::Kind::None) {
    if (arg.type.optional) return DefaultValue{DefaultValue::None{}};
    fail(lit.begin, detail::str_cat("default None requires an optional type, but '", arg.name,
                                    "' has type '", arg.type.str(), "'"));
  }
  if (arg.type.is_list) {
    switch (arg.type.base) {
      case BaseType::Int: return list_default<int64_t>(lit, arg);
      case BaseType::Float: return list_default<double>(lit, arg);
      case BaseType::Bool: return list_default<bool>(lit, arg);
      default:
        fail(lit.begin, detail::str_cat("'", arg.type.str(), " ", arg.name,
                                        "' can only default to None; only int, float and bool "
                                        "lists take other defaults"));
    }
  }
  if (auto value = scalar_default(lit, arg.type.base)) return *value;
  fail_default(lit, arg, default_rule(arg.type.base).expected);
}

// A list literal, or one element repeated N times for "T[N]" (once for "T[]").
template <class T>
DefaultValue Parser::list_default(const Literal& lit, const Argument& arg) const {
  std::vector<T> values;
  if (lit.kind == Literal::Kind::List) {
    for (const Literal& element : lit.elements) {
      values.push_back(list_element<T>(element, arg, true));
    }
  } else {
    T value = list_element<T>(lit, arg, false);
    values.assign(static_cast<size_t>(arg.type.list_size.value_or(1)), value);
  }
  return DefaultValue{std::move(values)};
}

template <class T>
T Parser::list_element(const Literal& element, const Argument& arg, bool in_list) const {
  std::optional<DefaultValue> value = scalar_default(element, arg.type.base);
  const T* typed = value ? std::get_if<T>(&value->value) : nullptr;
  if (typed != nullptr) return *typed;
  std::string_view expected = element_expected(arg.type.base);
  fail_default(element, arg,
               in_list ? detail::str_cat(expected, " in the list")
                       : detail::str_cat("a list or ", expected));
}

void Parser::fail_default(const Literal& lit, const Argument& arg,
                          std::string_view expected) const {
  fail(lit.begin, detail::str_cat("invalid default for '", arg.type.str(), " ", arg.name,
                                  "': expected ", expected, " but found '",
                                  excerpt(lit.begin, lit.end), "'"));
}

}  // namespace

// ---- public interface -------------------------------------------------------------------

std::string_view base_type_name(BaseType type) {
  for (const TypeName& name : k_type_names) {
    if (name.base == type) return name.text;
  }
  return "<unknown type>";
}

std::vector<std::string_view> default_identifiers(BaseType type) {
  auto names = identifiers_for(type);
  return {names.begin(), names.end()};
}

std::string SchemaType::str() const { return type_text(*this, std::nullopt); }

std::string DefaultValue::str() const { return std::visit(DefaultPrinter{}, value); }

std::string Argument::str() const {
  std::string out = type_text(type, alias);
  if (!name.empty()) out += " " + name;
  if (default_value) out += "=" + default_value->str();
  return out;
}

std::string FunctionSchema::full_name() const {
  return overload_name.empty() ? name : name + "." + overload_name;
}

std::string FunctionSchema::str() const {
  std::string out = full_name() + "(";
  bool star_written = false;
  for (size_t i = 0; i < arguments.size(); ++i) {
    if (i > 0) out += ", ";
    if (arguments[i].kwarg_only && !std::exchange(star_written, true)) out += "*, ";
    out += arguments[i].str();
  }
  bool parenthesize = returns_tuple_syntax || returns.size() != 1;
  out += parenthesize ? ") -> (" : ") -> ";
  for (size_t i = 0; i < returns.size(); ++i) {
    if (i > 0) out += ", ";
    out += returns[i].str();
  }
  return parenthesize ? out + ")" : out;
}

bool FunctionSchema::is_mutable() const {
  for (const Argument& arg : arguments) {
    if (arg.alias && arg.alias->is_write) return true;
  }
  return false;
}

FunctionSchema parse_schema(std::string_view text) { return Parser(text).parse(); }

std::ostream& operator<<(std::ostream& out, const FunctionSchema& schema) {
  return out << schema.str();
}

}  // namespace strata
