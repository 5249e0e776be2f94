// libFuzzer target for strata's file readers: .npy, safetensors, IDX and CSV parsed from memory.
// Malformed input must end in a strata::Error; any other exception, a crash or a sanitizer
// report is a finding. What loads must also save and load back to the same bytes: an Error
// escaping that round trip is a finding too. Seeds: fuzz/corpus/readers/; token dictionary: fuzz/readers.dict.
//
// Build with fuzz/CMakeLists.txt (scripts/ci_fuzz.sh does it, and runs it), then e.g.
//   ./build-fuzz/fuzz_readers -dict=fuzz/readers.dict -max_len=4096 corpus_copy/
// The reader sources are compiled into the target, instrumented for coverage and the
// sanitizers; the rest comes from a GCC-built libstrata in build/, since clang 14 cannot build
// all of libstrata (see Note [Fuzzing with clang 14] in fuzz/CMakeLists.txt).
// Without libFuzzer (e.g. GCC with -fsanitize=address,undefined), -DSTRATA_FUZZ_STANDALONE adds
// a main() that runs each file named on the command line once: a corpus replay.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iostream>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <strata/nn/data.h>
#include <strata/tensor/serialize.h>

namespace {

[[noreturn]] void report(std::string_view what) {
  std::cerr << "fuzz_readers: " << what << "\n";
  std::abort();
}

void check_npy_round_trip(const strata::Tensor& tensor) {
  std::vector<uint8_t> saved = strata::save_npy_bytes(tensor);
  if (strata::save_npy_bytes(strata::load_npy_bytes(saved, "saved.npy")) != saved)
    report(".npy: saving what load_npy_bytes read, loading and saving again changes the bytes");
}

void check_safetensors_round_trip(const std::map<std::string, strata::Tensor>& tensors,
                                  const strata::SafetensorsMetadata& metadata) {
  std::vector<uint8_t> saved = strata::save_safetensors_bytes(tensors, metadata);
  strata::SafetensorsMetadata reloaded_metadata;
  auto reloaded = strata::load_safetensors_bytes(saved, "saved.safetensors", &reloaded_metadata);
  if (strata::save_safetensors_bytes(reloaded, reloaded_metadata) != saved)
    report("safetensors: saving what load_safetensors_bytes read, loading and saving again changes the bytes");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const uint8_t> bytes(data, size);
  std::optional<strata::Tensor> npy;
  try {
    npy = strata::load_npy_bytes(bytes, "fuzz.npy");
  } catch (const strata::Error&) {
  }
  if (npy) check_npy_round_trip(*npy);

  std::optional<std::map<std::string, strata::Tensor>> safetensors;
  strata::SafetensorsMetadata metadata;
  try {
    safetensors = strata::load_safetensors_bytes(bytes, "fuzz.safetensors", &metadata);
  } catch (const strata::Error&) {
  }
  if (safetensors) check_safetensors_round_trip(*safetensors, metadata);

  try {
    strata::data::read_idx_bytes(bytes, "fuzz.idx");
  } catch (const strata::Error&) {
  }
  try {
    strata::data::parse_csv(std::string_view(reinterpret_cast<const char*>(data), size), strata::kFloat64, false, "fuzz.csv");
  } catch (const strata::Error&) {
  }
  return 0;
}

#ifdef STRATA_FUZZ_STANDALONE
#include "replay_main.h"
#endif
