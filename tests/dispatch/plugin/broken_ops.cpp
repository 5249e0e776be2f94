// A .so whose library block fails: load_library must throw and leave nothing registered.
#include <strata/strata.h>

STRATA_LIBRARY(bad_plugin_ops, m) {
  m.def("fine(Tensor x) -> Tensor");
  m.def("broken(Tensor x -> Tensor");
}
