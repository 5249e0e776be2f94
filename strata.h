#pragma once
// strata: everything in one include.
#include <strata/tensor/tensor.h>
#include <strata/dispatch/dispatcher.h>
#include <strata/dispatch/library.h>
#include <strata/ops/ops.h>
#include <strata/autograd/autograd.h>
