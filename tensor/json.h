#pragma once
// A minimal JSON reader and string escaper for file headers (safetensors). Not a general JSON
// library: numbers keep their text, and objects keep their keys in order and reject duplicates.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace strata::detail {

struct JsonMember;

struct JsonValue {
  enum class Kind { Null, Bool, Number, String, Array, Object };
  Kind kind = Kind::Null;
  bool boolean = false;
  std::string text;  // a String's decoded value, or a Number's source text
  std::vector<JsonValue> items;                            // Array
  std::vector<JsonMember> members;  // Object, in file order

  bool is_object() const { return kind == Kind::Object; }
  bool is_array() const { return kind == Kind::Array; }
  bool is_string() const { return kind == Kind::String; }
  // A Number written as a plain non-negative integer that fits in 64 bits ("12", not "1e1").
  std::optional<uint64_t> as_uint64() const;
  const JsonValue* find(std::string_view key) const;  // Object member or nullptr
};

struct JsonMember {
  std::string key;
  JsonValue value;
};

// The most members one object may have by default (safetensors headers: tensors + metadata).
inline constexpr size_t kMaxJsonObjectMembers = 1'000'000;

// Parses one JSON value (surrounding whitespace allowed). Throws ValueError whose message is
// `context` followed by what is wrong and the byte offset; an object with more than
// `max_object_members` members is rejected, naming the limit.
JsonValue parse_json(std::string_view text, const std::string& context,
                     size_t max_object_members = kMaxJsonObjectMembers);

// `value` as a JSON string literal, quotes included.
std::string json_quote(std::string_view value);

}  // namespace strata::detail
