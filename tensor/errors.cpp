// The out-of-line half of STRATA_INTERNAL_ASSERT.
#include <strata/tensor/errors.h>

namespace strata::detail {

[[noreturn]] void internal_assert_fail(const char* file, int line, const char* condition, const std::string& message) {
  throw Error(str_cat("[internal] strata bug: ", condition, " failed at ", file, ":", line, ": ", message,
                      " (please report it)"));
}

}  // namespace strata::detail
