#pragma once
// Graph mode: jit::trace, Graph (run, str, save), jit::load, the passes and jit::compile.
#include <strata/jit/compile.h>
#include <strata/jit/cuda_graph.h>
#include <strata/jit/graph.h>
