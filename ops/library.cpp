// Claims the `strata` operator namespace. The ops themselves are defined in the
// STRATA_LIBRARY_FRAGMENT blocks of their family files (pointwise.cpp, reduce.cpp...).
#include <strata/dispatch/library.h>

STRATA_LIBRARY(strata, m) { (void)m; }
