#pragma once
// The fuzz targets' main() when built without libFuzzer (-DSTRATA_FUZZ_STANDALONE, e.g. by GCC
// for ctest's corpus replays): runs LLVMFuzzerTestOneInput once on each file named on the
// command line. A file that cannot be read is an error, so a replay cannot pass by reading nothing.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    std::ifstream file(argv[i], std::ios::binary);
    if (!file) {
      std::fprintf(stderr, "cannot read %s\n", argv[i]);
      return 1;
    }
    std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(bytes.data(), bytes.size());
  }
  std::printf("ran %d inputs\n", argc - 1);
  return 0;
}
