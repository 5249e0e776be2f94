#pragma once
// DispatchKey and DispatchKeySet live in tensor/ (a TensorImpl carries its key set); this
// header keeps the old include working.
#include <strata/tensor/dispatch_key.h>
