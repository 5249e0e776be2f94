// libFuzzer target for the operator schema parser (dispatch/schema_parser.cpp).
// Bad input must end in a strata::ValueError whose message starts with "[" (schema.h promises
// that); any other exception, a crash or a sanitizer report is a finding. A schema that parses
// must survive a round trip: parse_schema(s.str()) == s, and printing it again gives the same
// text. Seeds: fuzz/corpus/schema/; token dictionary: fuzz/schema.dict.
//
// Build with fuzz/CMakeLists.txt (scripts/ci_fuzz.sh does it), then e.g.
//   ./build-fuzz/fuzz_schema -dict=fuzz/schema.dict -max_len=512 corpus_copy/
// The parser needs nothing from libstrata but errors.h, so this target is fully instrumented.
// Without libFuzzer (e.g. GCC with -fsanitize=address,undefined), -DSTRATA_FUZZ_STANDALONE adds
// a main() that runs each file named on the command line once: a corpus replay.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <strata/dispatch/schema.h>
#include <strata/tensor/errors.h>

namespace {

[[noreturn]] void report(std::string_view what, std::string_view input, std::string_view detail) {
  std::cerr << "fuzz_schema: " << what << "\n  input:   " << input << "\n  " << detail << "\n";
  std::abort();
}

bool is_nan_default(const strata::DefaultValue& value) {
  if (const double* number = std::get_if<double>(&value.value)) return std::isnan(*number);
  if (const auto* numbers = std::get_if<std::vector<double>>(&value.value)) {
    for (double number : *numbers) {
      if (std::isnan(number)) return true;
    }
  }
  return false;
}

// NaN defaults never compare equal, so such schemas are compared by their text alone.
bool has_nan_default(const strata::FunctionSchema& schema) {
  for (const strata::Argument& arg : schema.arguments) {
    if (arg.default_value && is_nan_default(*arg.default_value)) return true;
  }
  return false;
}

void check_round_trip(const strata::FunctionSchema& schema, std::string_view input) {
  std::string printed = schema.str();
  strata::FunctionSchema reparsed;
  try {
    reparsed = strata::parse_schema(printed);
  } catch (const strata::Error& e) {
    report("printed schema does not parse", input, "printed: " + printed + "\n  error:   " + e.what());
  }
  std::string reprinted = reparsed.str();
  if (reprinted != printed) {
    report("printing is not stable", input, "printed: " + printed + "\n  then:    " + reprinted);
  }
  if (!(reparsed == schema) && !has_nan_default(schema)) {
    report("reparsed schema differs from the original", input, "printed: " + printed);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  strata::FunctionSchema schema;
  try {
    schema = strata::parse_schema(text);
  } catch (const strata::ValueError& e) {
    std::string_view message = e.what();
    if (message.empty() || message.front() != '[') report("error message does not start with '['", text, message);
    return 0;
  }
  check_round_trip(schema, text);
  return 0;
}

#ifdef STRATA_FUZZ_STANDALONE
#include "replay_main.h"
#endif
