#pragma once
// strata: everything in one include.
#include <strata/tensor/tensor.h>
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
