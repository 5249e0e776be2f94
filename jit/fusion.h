#pragma once
// Internal to jit/: the fused elementwise executor that jit::compile uses to run a chain of
// elementwise ops as one pass over cache-sized tiles, bit for bit as the eager ops would
// compute it. See Note [Fused elementwise tiles] in fusion.cpp.
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <strata/tensor/scalar_type.h>
#include <strata/tensor/tensor.h>

namespace strata::jit::detail {

enum class FusedOp : uint8_t {
  // Two registers: add.Tensor, sub.Tensor (with `alpha`), mul.Tensor, div.Tensor.
  Add, Sub, Mul, Div,
  // A register and the Scalar constant `scalar`: add.Scalar and sub.Scalar (with `alpha`),
  // mul.Scalar, div.Scalar.
  AddScalar, SubScalar, MulScalar, DivScalar,
  // One register.
  Neg, Exp, Log, Sqrt, Tanh, Sigmoid, Relu, Abs, Sin, Cos,
};

// One op of a fused program. `scalar` and `alpha` hold the eager op's Scalar arguments as
// Scalar::to_double() gives them (integral Scalars included): the eager kernels convert them
// to the tensor's dtype through that double too, so nothing is lost (see Note [Fused
// constants] in fusion.cpp). `alpha` is used by Add, Sub, AddScalar and SubScalar only.
struct FusedStep {
  FusedOp op;
  int lhs;           // register read (the `self` of the eager op)
  int rhs = -1;      // second register read by Add, Sub, Mul, Div; -1 otherwise
  double scalar = 0;  // the Scalar `other` of the *Scalar ops
  double alpha = 1;   // add's and sub's alpha
  int out;           // register written; >= input_count, written by one step only
};

// Registers 0 .. input_count-1 are the inputs; each step writes register `out`, which later
// steps and `outputs` may read.
struct FusedProgram {
  int input_count = 0;
  int register_count = 0;
  ScalarType dtype = kFloat32;  // float32 or float64
  std::vector<FusedStep> steps;
  std::vector<int> outputs;  // registers returned, in order (an input register gives a copy)
};

// The fused op for an eager op name ("strata::add.Tensor", "strata::tanh"), or nullopt.
std::optional<FusedOp> fused_op_for(std::string_view op_name);

// Runs the program over tiles. Every input must be a defined, contiguous CPU tensor of the
// program's dtype and of one shape; returns new contiguous tensors of that shape (no autograd
// history), one per output. Throws strata::Error naming [jit::run_fused] for a bad program or
// bad inputs, and ValueError where the eager op would (a constant that overflows the dtype).
tensor_list run_fused(const FusedProgram& program, const tensor_list& inputs);

struct FusedPlan;  // where each register lives during a tile (jit/fusion.cpp)

// A program checked and planned once, then run many times: what a compiled function keeps for
// each fused chain, so that a call pays for neither (Note [Prepared fused programs]).
class PreparedFusedProgram {
 public:
  // Throws as run_fused does for a malformed program.
  explicit PreparedFusedProgram(FusedProgram program);
  // run_fused(program, inputs), without checking and planning the program again.
  tensor_list run(const tensor_list& inputs) const;
  const FusedProgram& program() const { return program_; }

 private:
  FusedProgram program_;
  std::shared_ptr<const FusedPlan> in_place_plan_;  // outputs written where they are
  std::shared_ptr<const FusedPlan> streaming_plan_;  // outputs streamed out (Note [Streaming outputs])
};

}  // namespace strata::jit::detail
