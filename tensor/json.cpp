#include <strata/tensor/json.h>

#include <charconv>
#include <cstdio>
#include <unordered_set>

#include <strata/tensor/errors.h>

namespace strata::detail {
namespace {

// Nesting deeper than this is rejected, so hostile input cannot exhaust the stack.
constexpr int kMaxDepth = 64;

// Note [Linear-time objects]
// Duplicate keys are found with a hash set of the keys seen so far, not by scanning the members
// (quadratic: 100,000 safetensors metadata entries took 22 s). The member count is bounded too,
// so a header cannot make the parser build millions of members (safetensors also bounds the
// header at 100 MB).

class JsonParser {
 public:
  JsonParser(std::string_view text, const std::string& context, size_t max_object_members)
      : text_(text), context_(context), max_object_members_(max_object_members) {}

  JsonValue parse_document() {
    JsonValue value = parse_value(0);
    skip_whitespace();
    if (position_ != text_.size()) fail("unexpected characters after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    throw_error<ValueError>(context_, "invalid JSON header: ", what, " at byte ", position_);
  }

  void skip_whitespace() {
    while (position_ < text_.size()) {
      char c = text_[position_];
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r') break;
      ++position_;
    }
  }
  bool at_end() const { return position_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[position_]; }
  void expect(char c) {
    if (peek() != c || at_end()) fail(std::string("expected '") + c + "'");
    ++position_;
  }
  void expect_word(std::string_view word) {
    if (text_.substr(position_, word.size()) != word) fail("unknown literal");
    position_ += word.size();
  }

  JsonValue parse_value(int depth) {
    if (depth > kMaxDepth) fail("nesting too deep");
    skip_whitespace();
    if (at_end()) fail("unexpected end of input");
    JsonValue value;
    switch (peek()) {
      case '{': parse_object(value, depth); break;
      case '[': parse_array(value, depth); break;
      case '"':
        value.kind = JsonValue::Kind::String;
        value.text = parse_string();
        break;
      case 't': expect_word("true"); value.kind = JsonValue::Kind::Bool; value.boolean = true; break;
      case 'f': expect_word("false"); value.kind = JsonValue::Kind::Bool; break;
      case 'n': expect_word("null"); break;
      default: parse_number(value); break;
    }
    return value;
  }

  void parse_object(JsonValue& value, int depth) {
    value.kind = JsonValue::Kind::Object;
    expect('{');
    skip_whitespace();
    if (peek() == '}' && !at_end()) {
      ++position_;
      return;
    }
    // See Note [Linear-time objects].
    std::unordered_set<std::string> keys;
    while (true) {
      skip_whitespace();
      if (peek() != '"' || at_end()) fail("expected a string key");
      if (value.members.size() == max_object_members_)
        throw_error<ValueError>(context_, "the header has an object with more than ", max_object_members_,
                                " members (the limit) at byte ", position_);
      size_t key_position = position_;
      std::string key = parse_string();
      if (!keys.insert(key).second) {
        position_ = key_position;
        fail("duplicate key \"" + key + "\"");
      }
      skip_whitespace();
      expect(':');
      JsonValue member = parse_value(depth + 1);
      value.members.push_back({std::move(key), std::move(member)});
      skip_whitespace();
      if (peek() == ',' && !at_end()) {
        ++position_;
        continue;
      }
      expect('}');
      return;
    }
  }

  void parse_array(JsonValue& value, int depth) {
    value.kind = JsonValue::Kind::Array;
    expect('[');
    skip_whitespace();
    if (peek() == ']' && !at_end()) {
      ++position_;
      return;
    }
    while (true) {
      value.items.push_back(parse_value(depth + 1));
      skip_whitespace();
      if (peek() == ',' && !at_end()) {
        ++position_;
        continue;
      }
      expect(']');
      return;
    }
  }

  void parse_number(JsonValue& value) {
    size_t start = position_;
    auto digits = [&] {
      size_t first = position_;
      while (!at_end() && peek() >= '0' && peek() <= '9') ++position_;
      return position_ - first;
    };
    if (peek() == '-') ++position_;
    size_t integer_start = position_;
    size_t integer_digits = digits();
    if (integer_digits == 0) fail("expected a value");
    if (integer_digits > 1 && text_[integer_start] == '0') fail("number with a leading zero");
    if (peek() == '.' && !at_end()) {
      ++position_;
      if (digits() == 0) fail("expected digits after '.'");
    }
    if ((peek() == 'e' || peek() == 'E') && !at_end()) {
      ++position_;
      if (peek() == '+' || peek() == '-') ++position_;
      if (digits() == 0) fail("expected digits in the exponent");
    }
    value.kind = JsonValue::Kind::Number;
    value.text = std::string(text_.substr(start, position_ - start));
  }

  unsigned parse_hex4() {
    if (text_.size() - position_ < 4) fail("truncated \\u escape");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[position_++];
      unsigned digit = (c >= '0' && c <= '9')   ? c - '0'
                       : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                       : (c >= 'A' && c <= 'F') ? c - 'A' + 10
                                                : 16u;
      if (digit == 16) fail("bad hex digit in \\u escape");
      code = code * 16 + digit;
    }
    return code;
  }

  static void append_utf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += static_cast<char>(code);
    } else if (code < 0x800) {
      out += static_cast<char>(0xc0 | (code >> 6));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else if (code < 0x10000) {
      out += static_cast<char>(0xe0 | (code >> 12));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    } else {
      out += static_cast<char>(0xf0 | (code >> 18));
      out += static_cast<char>(0x80 | ((code >> 12) & 0x3f));
      out += static_cast<char>(0x80 | ((code >> 6) & 0x3f));
      out += static_cast<char>(0x80 | (code & 0x3f));
    }
  }

  unsigned parse_unicode_escape() {
    unsigned code = parse_hex4();
    if (code >= 0xdc00 && code <= 0xdfff) fail("lone low surrogate in \\u escape");
    if (code >= 0xd800 && code <= 0xdbff) {
      if (text_.substr(position_, 2) != "\\u") fail("high surrogate without a low surrogate");
      position_ += 2;
      unsigned low = parse_hex4();
      if (low < 0xdc00 || low > 0xdfff) fail("high surrogate without a low surrogate");
      code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
    }
    return code;
  }

  std::string parse_string() {
    expect('"');
    std::string out;
    while (true) {
      if (at_end()) fail("unterminated string");
      char c = text_[position_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) {
        --position_;
        fail("control character in string");
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      if (at_end()) fail("unterminated string");
      char escape = text_[position_++];
      switch (escape) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': append_utf8(out, parse_unicode_escape()); break;
        default: --position_; fail("unknown escape in string");
      }
    }
  }

  std::string_view text_;
  const std::string& context_;
  size_t max_object_members_;
  size_t position_ = 0;
};

}  // namespace

std::optional<uint64_t> JsonValue::as_uint64() const {
  if (kind != Kind::Number || text.empty() || text[0] == '-') return std::nullopt;
  uint64_t result = 0;
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), result);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return result;
}

const JsonValue* JsonValue::find(std::string_view key) const {
  for (const auto& [name, value] : members)
    if (name == key) return &value;
  return nullptr;
}

JsonValue parse_json(std::string_view text, const std::string& context, size_t max_object_members) {
  return JsonParser(text, context, max_object_members).parse_document();
}

std::string json_quote(std::string_view value) {
  std::string out = "\"";
  for (char c : value) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(c));
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

}  // namespace strata::detail
