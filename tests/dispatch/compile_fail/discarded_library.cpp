// Compiled (not built) by the library_discard_* ctests, each with one CASE_*: every case must
// be rejected by the compiler. See Note [Discarded libraries] in dispatch/library.h.
#include <strata/strata.h>

namespace {
strata::Tensor identity(const strata::Tensor& x) { return x; }
}  // namespace

void register_through_temporaries() {
#if defined(CASE_IMPL_ON_TEMPORARY)
  strata::Library("strata", strata::Library::IMPL, strata::DispatchKey::CPU).impl("relu", identity);
#elif defined(CASE_DISCARDED_LIBRARY)
  strata::Library("strata", strata::Library::IMPL, strata::DispatchKey::CPU);  // -Werror=unused-result
#elif defined(CASE_DISCARDED_HANDLE)
  strata::load_library("libsomething.so");  // -Werror=unused-result
#endif
  (void)&identity;
}
