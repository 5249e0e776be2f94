#pragma once
// Autograd: grad mode, the tape, the engine, custom Functions and gradcheck.
#include <strata/autograd/engine.h>
#include <strata/autograd/function.h>
#include <strata/autograd/grad_mode.h>
#include <strata/autograd/gradcheck.h>
#include <strata/autograd/node.h>
#include <strata/autograd/variable.h>
