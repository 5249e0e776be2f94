#pragma once
// Internal to jit/: the fused elementwise executor that jit::compile uses to run a chain of
// elementwise ops as one pass over cache-sized tiles, bit for bit as the eager ops would
// compute it. See Note [Fused elementwise tiles] in fusion.cpp.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
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

// A program that computes one output as a small tree of exactly rounded ops, run by code
// compiled for the tree's shape with every intermediate in registers (Note [Tree kernels] in
// jit/fusion_tree.cpp).
enum class TreeOp : uint8_t { add, sub, mul, div };
enum class TreePostOp : uint8_t { none, neg, abs, relu, sqrt };
struct TreeNode {
  TreeOp op = TreeOp::add;
  TreePostOp post = TreePostOp::none;  // applied to the node's result
};
struct TreeLeaf {
  int input = -1;       // the input read, or -1 for `constant`
  double constant = 0;  // a Scalar operand, as Scalar::to_double() gives it
  TreePostOp post = TreePostOp::none;
};
constexpr int kMaxTreeNodes = 4;  // binary ops in a tree kernel's tree
struct TreeKernel {
  uint32_t shape = 0;  // the tree's shape code (jit/fusion_tree.cpp)
  std::array<TreeNode, kMaxTreeNodes> nodes{};  // binary ops, in pre-order
  std::array<TreeLeaf, kMaxTreeNodes + 1> leaves{};  // leaves, in pre-order
  int node_count = 0;
  int leaf_count = 0;
  bool has_post = false;  // some node or leaf has a post op
};

// The program's tree kernel, or nullopt when the program is not one tree of at most four
// exactly rounded binary ops (with alpha 1) over its inputs and constants, each unary op
// (neg, abs, relu, sqrt) applied to a binary op's result or to a leaf, one each.
std::optional<TreeKernel> make_tree_kernel(const FusedProgram& program);

// Writes the kernel's output into `output` (contiguous, the program's dtype and the inputs'
// numel) from inputs already checked as run_fused checks them; `stream` writes with
// non-temporal stores (Note [Streaming outputs] in fusion.cpp).
void run_tree_kernel(const TreeKernel& kernel, const tensor_list& inputs, const Tensor& output, bool stream);

// Generated kernels: the program written out as C++ and compiled by the machine's compiler
// (Notes [Generated kernels] in jit/fusion_codegen.cpp and [Kernel cache] in
// jit/kernel_compiler.cpp).
enum class CodegenMode : uint8_t {
  off,     // never
  large,   // for outputs of kGeneratedMinBytes or more (the default)
  always,  // at every size
};
constexpr int64_t kGeneratedMinBytes = int64_t{1} << 20;
constexpr int kGeneratedKernelAbi = 1;  // the generated function's signature, checked at load
// The mode starts as STRATA_JIT_CODEGEN says (unset: large; 0 or off; always).
CodegenMode codegen_mode();
void set_codegen_mode(CodegenMode mode);
// Sets the mode for its lifetime (tests and benchmarks that compare the ways to run).
class CodegenModeGuard {
 public:
  explicit CodegenModeGuard(CodegenMode mode) : previous_(codegen_mode()) { set_codegen_mode(mode); }
  ~CodegenModeGuard() { set_codegen_mode(previous_); }
  CodegenModeGuard(const CodegenModeGuard&) = delete;
  CodegenModeGuard& operator=(const CodegenModeGuard&) = delete;

 private:
  CodegenMode previous_;
};
// Whether a run over `numel` elements of `dtype` uses a generated kernel in the current mode.
bool use_generated_kernel(int64_t numel, ScalarType dtype);

struct GeneratedKernel {
  // Elements [begin, end) of every output; `streaming` (1) writes with non-temporal stores,
  // which needs every output's data 64-byte aligned.
  using Function = void (*)(const void* const* inputs, void* const* outputs, int64_t begin, int64_t end,
                            int streaming);
  Function function = nullptr;
  std::string path;               // the loaded .so
  std::shared_ptr<void> library;  // the dlopen handle, closed with the last holder
};

// The program's kernel source, or nullopt when some op has no exactly rounded form there (the
// Eigen functions: exp, log, tanh, sigmoid, sin, cos).
std::optional<std::string> generate_kernel_source(const FusedProgram& program);
// The compiled kernel of `source`, from this process, the disk cache or the compiler; nullptr
// when it cannot be had (the first failure in a process is reported on stderr).
std::shared_ptr<const GeneratedKernel> load_generated_kernel(const std::string& source);
// Writes the kernel's outputs (contiguous, the program's dtype and the inputs' numel) from
// inputs already checked as run_fused checks them.
void run_generated_kernel(const GeneratedKernel& kernel, const tensor_list& inputs, const tensor_list& outputs,
                          bool stream);

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
  // Whether runs go through a tree kernel instead of the tiled executor.
  bool uses_tree_kernel() const { return tree_.has_value(); }
  // Whether runs of `numel` elements go through a generated kernel: the program has one, the
  // mode asks for it at that size, and it compiled (compiling it now if not tried yet).
  bool uses_generated_kernel(int64_t numel) const;

 private:
  FusedProgram program_;
  std::shared_ptr<const FusedPlan> in_place_plan_;  // outputs written where they are
  std::shared_ptr<const FusedPlan> streaming_plan_;  // outputs streamed out (Note [Streaming outputs])
  std::optional<TreeKernel> tree_;  // Note [Tree kernels]
  struct Generated;
  std::shared_ptr<Generated> generated_;  // Note [Generated kernels]; null without a source
  const GeneratedKernel* generated_kernel(int64_t numel) const;
};

}  // namespace strata::jit::detail
