#pragma once
// strata: everything in one include.
#include <strata/tensor/tensor.h>
#include <strata/tensor/cuda.h>
#include <strata/tensor/device_guard.h>
#include <strata/tensor/event.h>
#include <strata/tensor/generator.h>
#include <strata/tensor/random.h>
#include <strata/tensor/stream.h>
#include <strata/tensor/serialize.h>
#include <strata/tensor/dlpack.h>
#include <strata/dispatch/dispatcher.h>
#include <strata/dispatch/library.h>
#include <strata/ops/ops.h>
#include <strata/autograd/autograd.h>
#include <strata/nn/nn.h>
#include <strata/nn/checkpoint.h>
#include <strata/nn/data.h>
#include <strata/nn/progress.h>
#include <strata/jit/jit.h>
#ifdef STRATA_WITH_DIST  // defined by the strata::dist library; see cmake/StrataDist.cmake
#include <strata/dist/dist.h>
#endif
