// Deliberate bugs, built only in sanitizer builds and run by ctest as their own processes: each
// test passes only if the sanitizer reports its bug, which proves the sanitizers are live in the
// build that ran the suite.
//   strata_sanitizer_canary address    reads one int past a heap block (AddressSanitizer)
//   strata_sanitizer_canary undefined  overflows a signed int (UndefinedBehaviorSanitizer)
// The target is built with -fno-sanitize=object-size, so the out-of-bounds read is left to ASan
// (UBSan's object-size check would otherwise report it first, at -O1 and above).
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "address") == 0) {
    volatile int* block = static_cast<int*>(std::malloc(4 * sizeof(int)));
    for (int i = 0; i < 4; ++i) block[i] = i;
    int past_the_end = block[argc + 2];  // index 4: one element past the block
    std::printf("read %d: AddressSanitizer did not catch it\n", past_the_end);
    std::free(const_cast<int*>(block));
    return 0;
  }
  if (argc == 2 && std::strcmp(argv[1], "undefined") == 0) {
    volatile int big = INT_MAX;
    int overflowed = big + argc;  // INT_MAX + 2
    std::printf("got %d: UndefinedBehaviorSanitizer did not catch it\n", overflowed);
    return 0;
  }
  std::fprintf(stderr, "usage: strata_sanitizer_canary address|undefined\n");
  return 2;
}
