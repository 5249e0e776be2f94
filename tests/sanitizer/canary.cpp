// A deliberate heap out-of-bounds read. Built only in sanitizer builds and run by ctest as
// its own process: the test passes only if AddressSanitizer reports it, which proves the
// sanitizers are live in the build that ran the suite.
#include <cstdio>
#include <cstdlib>

int main(int argc, char**) {
  volatile int* block = static_cast<int*>(std::malloc(4 * sizeof(int)));
  for (int i = 0; i < 4; ++i) block[i] = i;
  int past_the_end = block[4 + argc - 1];  // one element past the block
  std::printf("read %d: the sanitizer did not catch it\n", past_the_end);
  std::free(const_cast<int*>(block));
  return 0;
}
