#pragma once
// Operator schemas in PyTorch's schema language:
//   name.overload(Tensor(a!) self, Tensor? weight, int[2] stride=1, *, Scalar alpha=1) -> (Tensor, Tensor)
// See Note [Schema language] in schema_parser.cpp for the grammar we accept.
#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace strata {

// Element types of the schema language. SymInt parses as Int.
enum class BaseType { Tensor, Int, Float, Bool, Str, Scalar, ScalarType, Device, Layout, MemoryFormat, Generator };

std::string_view base_type_name(BaseType type);
// The identifiers a default of this type may be (`int reduction=Mean`, `ScalarType dtype=float`,
// `MemoryFormat m=contiguous_format`); empty when it takes none. See Note [Identifier defaults]
// in boxing.cpp for their values.
std::vector<std::string_view> default_identifiers(BaseType type);

struct SchemaType {
  BaseType base = BaseType::Tensor;
  bool element_optional = false;      // "Tensor?[]": the list's elements may be None
  bool is_list = false;               // "int[]" or "int[2]"
  std::optional<int64_t> list_size;   // the N of "int[N]"
  bool optional = false;              // "int?", "int[]?": the whole value may be None

  bool operator==(const SchemaType&) const = default;
  std::string str() const;            // back to schema text: "Tensor?[]", "int[2]?"
};

// A default value as written in the schema, already typed.
// None | int | float | bool | string | int list | float list | bool list | identifier
// (identifiers such as `contiguous_format` or `Mean` are kept as their text).
struct DefaultValue {
  struct None {
    bool operator==(const None&) const = default;
  };
  struct Identifier {
    std::string text;
    bool operator==(const Identifier&) const = default;
  };
  std::variant<None, int64_t, double, bool, std::string, std::vector<int64_t>, std::vector<double>,
               std::vector<bool>, Identifier>
      value;
  bool operator==(const DefaultValue&) const = default;
  std::string str() const;            // back to schema text: "None", "1", "1.", "True", "[0, 0]", "'mean'"
};

struct AliasInfo {
  std::string set;                    // "a" in Tensor(a) / Tensor(a!)
  bool is_write = false;              // the "!"
  // The sets the argument is in after the op, when they change: {"*"} in ATen's
  // `Tensor(a -> *) self` (chunk, split: the results alias self and may alias anything after).
  // Empty when the argument stays in `set`. Dispatch and autograd read `set` only.
  std::vector<std::string> after_sets;
  bool operator==(const AliasInfo&) const = default;
};

struct Argument {
  std::string name;                   // may be empty for returns
  SchemaType type;
  std::optional<DefaultValue> default_value;
  bool kwarg_only = false;            // declared after the bare "*"
  std::optional<AliasInfo> alias;
  bool operator==(const Argument&) const = default;
  std::string str() const;
};

struct FunctionSchema {
  std::string name;                   // as written, possibly "ns::name"
  std::string overload_name;          // "" when none
  std::vector<Argument> arguments;
  std::vector<Argument> returns;
  bool returns_tuple_syntax = false;  // "-> (Tensor)" vs "-> Tensor"

  // "name.overload", or "name" when there is no overload.
  std::string full_name() const;
  // The canonical schema text; parse_schema(s.str()) == s.
  std::string str() const;
  bool is_mutable() const;            // any argument written to: Tensor(a!)
  bool operator==(const FunctionSchema&) const = default;
};

// Parses schema text. Throws strata::ValueError whose message starts with "[name]" (or
// "[schema]" before the name is known), gives the 1-based column of the problem, and shows
// the schema with a caret under that column.
FunctionSchema parse_schema(std::string_view text);

std::ostream& operator<<(std::ostream& out, const FunctionSchema& schema);

}  // namespace strata
