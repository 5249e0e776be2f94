#pragma once
// The training API in one include: modules, layers, initialisers, optimizers and schedulers.
#include <strata/nn/init.h>
#include <strata/nn/module.h>
#include <strata/nn/modules.h>
#include <strata/nn/optim.h>
#include <strata/nn/sequential.h>
