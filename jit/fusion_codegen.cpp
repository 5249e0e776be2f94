// Generated kernels: a fused program written out as C++ source, compiled by the machine's
// compiler (jit/kernel_compiler.cpp) and run. See Note [Generated kernels].
#include <strata/jit/fusion.h>

#include <bit>
#include <cstdio>
#include <cstring>
#include <sstream>

#include <strata/ops/elementwise.h>
#include <strata/tensor/errors.h>

namespace strata::jit::detail {

// Note [Generated kernels]
// The tiled executor keeps every intermediate in a memory slot, and a tree kernel, compiled
// ahead for a tree's shape, still switches on each node's op once per block (Notes [Fused
// elementwise tiles] and [Tree kernels]). Measured on a * b + c * d - e over 16M floats, one
// core, interleaved in one process (medians against eager): the tree kernel 0.47, the same
// block loop written by hand with the switches 0.39, and without them 0.36. What is left is
// code written for the one program, which is what TorchInductor's C++ backend does: it writes
// the program out as C++, compiles it with the machine's compiler and loads the result.
//
// A generated kernel does the same for a fused program whose every op rounds exactly (add,
// sub, mul, div with any alpha, their Scalar forms, neg, abs, relu, sqrt), any number of
// inputs and outputs, any DAG: eval<T>() holds the program as straight-line code over named
// values, instantiated once for GCC vectors (a block of kVectorsPerBlock of them a time, in
// registers) and once for scalars (the ends of a range). Large outputs are written with
// non-temporal stores and the inputs prefetched, as the executor does (Notes [Streaming
// outputs] and [Prefetching inputs] in fusion.cpp; prefetching 0.5 to 2 KiB ahead, or not at
// all, measured alike here, 4 KiB slower). Measured with bench_jit, one core, 16 runs
// (compiled_expression_16m / eager_expression_16m): 0.33-0.47, median 0.39, against the tree
// kernel's 0.38-0.49, median 0.44, in 13 of the same runs. The generated call takes a steady
// 10-14 ms, at what one core's memory bandwidth allows; eager's time swings with the VM's load.
//
// Bits: each op is written as the eager kernel computes it (alpha through one fma, constants
// converted to the dtype on the host and written out as their bits) and the source compiles
// with -ffp-contract=off, so every element gets eager's bits whatever the vector width.
//
// When: compiling takes about half a second per program, once per machine (the kernels are
// cached on disk: Note [Kernel cache] in kernel_compiler.cpp), and pays only where a pass is
// long, so by default (CodegenMode::large, STRATA_JIT_CODEGEN unset) a program runs through a
// generated kernel when its outputs have kGeneratedMinBytes or more; smaller runs keep the
// tree kernel or the executor. STRATA_JIT_CODEGEN=0 turns generation off and =always uses it
// at every size. Without a working compiler the program runs as before, after one warning.

namespace {

bool is_exact(FusedOp op) {
  switch (op) {
    case FusedOp::Add: case FusedOp::Sub: case FusedOp::Mul: case FusedOp::Div:
    case FusedOp::AddScalar: case FusedOp::SubScalar: case FusedOp::MulScalar: case FusedOp::DivScalar:
    case FusedOp::Neg: case FusedOp::Abs: case FusedOp::Relu: case FusedOp::Sqrt:
      return true;
    default:
      return false;
  }
}

// The dtype's value of a double (as the eager kernels convert a Scalar), as C source that
// rebuilds its exact bits, NaN payloads and the sign of zero included.
std::string literal(double value, ScalarType dtype) {
  char text[48];
  if (dtype == kFloat32)
    std::snprintf(text, sizeof text, "bits(0x%08xu)", std::bit_cast<uint32_t>(static_cast<float>(value)));
  else
    std::snprintf(text, sizeof text, "bits(0x%016llxull)",
                  static_cast<unsigned long long>(std::bit_cast<uint64_t>(value)));
  return text;
}

// The prelude: vector types and the ops that are not C operators, for scalars and vectors.
std::string prelude(ScalarType dtype) {
  const bool is_float = dtype == kFloat32;
  const std::string c = is_float ? "float" : "double";
  const std::string bits_type = is_float ? "uint32_t" : "uint64_t";
  const std::string mask_lane = is_float ? "int32_t" : "int64_t";
  const std::string f = is_float ? "f" : "";    // libm suffix
  const std::string ps = is_float ? "ps" : "pd";  // intrinsic suffix
  std::ostringstream out;
  out << "// Written by strata's jit (jit/fusion_codegen.cpp): one fused elementwise program.\n"
      << "#include <cstdint>\n#include <cstring>\n#if defined(__SSE2__)\n#include <immintrin.h>\n#endif\n"
      << "namespace {\n"
      << "typedef " << c << " C;\n"
      << "#if defined(__AVX512F__)\nconstexpr int kVectorBytes = 64;\n"
      << "#elif defined(__AVX__)\nconstexpr int kVectorBytes = 32;\n"
      << "#else\nconstexpr int kVectorBytes = 16;\n#endif\n"
      << "typedef C V __attribute__((vector_size(kVectorBytes)));\n"
      << "typedef " << mask_lane << " M __attribute__((vector_size(kVectorBytes)));\n"
      << "constexpr int kLanes = kVectorBytes / sizeof(C);\n"
      << "constexpr int kVectorsPerBlock = 8;\n"
      << "constexpr int64_t kBlock = int64_t{kLanes} * kVectorsPerBlock;\n"
      << "constexpr uintptr_t kPrefetchBytes = 1024;\n"
      << "#define INLINE [[gnu::always_inline]] inline\n"
      << "INLINE C bits(" << bits_type << " b) { C c; std::memcpy(&c, &b, sizeof c); return c; }\n"
      << "INLINE V load(const C* p) { V v; std::memcpy(&v, p, sizeof v); return v; }\n"
      << "INLINE void store(C* p, V v) { std::memcpy(p, &v, sizeof v); }\n"
      << "INLINE void stream(C* p, V v) {\n"
      << "#if defined(__AVX512F__)\n  _mm512_stream_" << ps << "(p, (__m512" << (is_float ? "" : "d") << ")v);\n"
      << "#elif defined(__AVX__)\n  _mm256_stream_" << ps << "(p, (__m256" << (is_float ? "" : "d") << ")v);\n"
      << "#elif defined(__SSE2__)\n  _mm_stream_" << ps << "(p, (__m128" << (is_float ? "" : "d") << ")v);\n"
      << "#else\n  store(p, v);\n#endif\n}\n"
      << "INLINE void fence() {\n#if defined(__SSE2__)\n  _mm_sfence();\n#endif\n}\n"
      // relu as eager's a < 0 ? 0 : a (NaN and -0 stay); abs clears the sign bit, as std::abs.
      << "INLINE C relu_(C x) { return x < C(0) ? C(0) : x; }\n"
      << "INLINE V relu_(V x) { return x < V{} ? V{} : x; }\n"
      << "INLINE C abs_(C x) { return __builtin_fabs" << f << "(x); }\n"
      << "INLINE V abs_(V x) { return (V)((M)x & (M{} + (" << mask_lane << ")(~(" << bits_type
      << ")0 >> 1))); }\n"
      << "INLINE C sqrt_(C x) { return __builtin_sqrt" << f << "(x); }\n"
      << "INLINE V sqrt_(V x) {\n"
      << "#if defined(__AVX512F__)\n  return (V)_mm512_sqrt_" << ps << "((__m512" << (is_float ? "" : "d") << ")x);\n"
      << "#elif defined(__AVX__)\n  return (V)_mm256_sqrt_" << ps << "((__m256" << (is_float ? "" : "d") << ")x);\n"
      << "#elif defined(__SSE2__)\n  return (V)_mm_sqrt_" << ps << "((__m128" << (is_float ? "" : "d") << ")x);\n"
      << "#else\n  for (int l = 0; l < kLanes; ++l) x[l] = __builtin_sqrt" << f << "(x[l]);\n  return x;\n#endif\n}\n"
      << "INLINE C lane(C x, int) { return x; }\n"
      << "INLINE C lane(V x, int l) { return x[l]; }\n"
      << "INLINE C fma_(C a, C b, C c) { return __builtin_fma" << f << "(a, b, c); }\n"
      << "template <class A, class B>\n"
      << "INLINE V fma_(A a, B b, V c) {\n"
      << "  V r;\n  for (int l = 0; l < kLanes; ++l) r[l] = __builtin_fma" << f << "(lane(a, l), lane(b, l), c[l]);\n"
      << "  return r;\n}\n";
  return out.str();
}

std::string name_of(int reg) { return "r" + std::to_string(reg); }

// One step as an expression of its operands, as the eager kernel computes it.
std::string expression(const FusedStep& step, ScalarType dtype) {
  const std::string x = name_of(step.lhs);
  const auto scaled_alpha = [&](double sign) {  // sign * alpha converted to the dtype, as AddOp
    return dtype == kFloat32 ? literal(static_cast<double>(static_cast<float>(sign) * static_cast<float>(step.alpha)), dtype)
                             : literal(sign * step.alpha, dtype);
  };
  const std::string constant = literal(step.scalar, dtype);
  switch (step.op) {
    case FusedOp::Add:
      return step.alpha == 1.0 ? x + " + " + name_of(step.rhs) : "fma_(" + scaled_alpha(1) + ", " + name_of(step.rhs) + ", " + x + ")";
    case FusedOp::Sub:
      return step.alpha == 1.0 ? x + " - " + name_of(step.rhs) : "fma_(" + scaled_alpha(-1) + ", " + name_of(step.rhs) + ", " + x + ")";
    case FusedOp::Mul: return x + " * " + name_of(step.rhs);
    case FusedOp::Div: return x + " / " + name_of(step.rhs);
    case FusedOp::AddScalar:
      return step.alpha == 1.0 ? x + " + " + constant : "fma_(" + scaled_alpha(1) + ", " + constant + ", " + x + ")";
    case FusedOp::SubScalar:
      return step.alpha == 1.0 ? x + " - " + constant : "fma_(" + scaled_alpha(-1) + ", " + constant + ", " + x + ")";
    case FusedOp::MulScalar: return x + " * " + constant;
    case FusedOp::DivScalar: return x + " / " + constant;
    case FusedOp::Neg: return "-" + x;
    case FusedOp::Abs: return "abs_(" + x + ")";
    case FusedOp::Relu: return "relu_(" + x + ")";
    case FusedOp::Sqrt: return "sqrt_(" + x + ")";
    default: STRATA_INTERNAL_ASSERT(false, "generated kernel: not an exactly rounded op");
  }
  return {};
}

// eval<T>(inputs..., outputs&...): the program as straight-line code.
std::string eval_function(const FusedProgram& program) {
  std::ostringstream out;
  out << "template <class T>\nINLINE void eval(";
  for (int k = 0; k < program.input_count; ++k) out << (k > 0 ? ", " : "") << "const T " << name_of(k);
  for (size_t k = 0; k < program.outputs.size(); ++k) out << ", T& y" << k;
  out << ") {\n";
  for (const FusedStep& step : program.steps)
    out << "  const T " << name_of(step.out) << " = " << expression(step, program.dtype) << ";\n";
  for (size_t k = 0; k < program.outputs.size(); ++k) out << "  y" << k << " = " << name_of(program.outputs[k]) << ";\n";
  out << "}\n";
  return out.str();
}

// The call of eval at element `index` for scalars (`vector` false: reads and writes in place)
// or for a vector at `index`, stored by `store_fn`.
std::string eval_call(const FusedProgram& program, bool vector, const std::string& index, const std::string& store_fn) {
  std::ostringstream out;
  const size_t outputs = program.outputs.size();
  if (!vector) {
    out << "eval<C>(";
    for (int k = 0; k < program.input_count; ++k) out << (k > 0 ? ", " : "") << "x" << k << "[" << index << "]";
    for (size_t k = 0; k < outputs; ++k) out << ", out" << k << "[" << index << "]";
    out << ");";
    return out.str();
  }
  out << "V";
  for (size_t k = 0; k < outputs; ++k) out << (k > 0 ? ", " : " ") << "y" << k;
  out << "; eval<V>(";
  for (int k = 0; k < program.input_count; ++k) out << (k > 0 ? ", " : "") << "load(x" << k << " + " << index << ")";
  for (size_t k = 0; k < outputs; ++k) out << ", y" << k;
  out << ");";
  for (size_t k = 0; k < outputs; ++k) out << " " << store_fn << "(out" << k << " + " << index << ", y" << k << ");";
  return out.str();
}

std::string kernel_function(const FusedProgram& program) {
  std::ostringstream out;
  out << "}  // namespace\n\n"
      << "extern \"C\" int strata_fused_abi() { return " << kGeneratedKernelAbi << "; }\n\n"
      << "extern \"C\" void strata_fused_kernel(const void* const* inputs, void* const* outputs, int64_t begin,\n"
      << "                                   int64_t end, int streaming) {\n";
  for (int k = 0; k < program.input_count; ++k)
    out << "  const C* __restrict x" << k << " = static_cast<const C*>(inputs[" << k << "]);\n";
  for (size_t k = 0; k < program.outputs.size(); ++k)
    out << "  C* __restrict out" << k << " = static_cast<C*>(outputs[" << k << "]);\n";
  out << "  int64_t i = begin;\n"
      << "  const int64_t first_block = (begin + kBlock - 1) / kBlock * kBlock;\n"
      << "  for (; i < end && i < first_block; ++i) " << eval_call(program, false, "i", "") << "\n"
      << "  if (streaming) {\n"
      << "    for (; i + kBlock <= end; i += kBlock) {\n"
      << "      for (int64_t line = 0; line < kBlock; line += 64 / sizeof(C)) {\n";
  for (int k = 0; k < program.input_count; ++k)
    out << "        __builtin_prefetch(reinterpret_cast<const void*>(reinterpret_cast<uintptr_t>(x" << k
        << " + i + line) + kPrefetchBytes), 0, 3);\n";
  out << "      }\n"
      << "#pragma GCC unroll 8\n"
      << "      for (int j = 0; j < kVectorsPerBlock; ++j) { const int64_t at = i + j * kLanes; "
      << eval_call(program, true, "at", "stream") << " }\n"
      << "    }\n"
      << "    fence();\n"
      << "  } else {\n"
      << "    for (; i + kBlock <= end; i += kBlock) {\n"
      << "#pragma GCC unroll 8\n"
      << "      for (int j = 0; j < kVectorsPerBlock; ++j) { const int64_t at = i + j * kLanes; "
      << eval_call(program, true, "at", "store") << " }\n"
      << "    }\n"
      << "  }\n"
      << "  for (; i < end; ++i) " << eval_call(program, false, "i", "") << "\n"
      << "}\n";
  return out.str();
}

}  // namespace

std::optional<std::string> generate_kernel_source(const FusedProgram& program) {
  if (program.dtype != kFloat32 && program.dtype != kFloat64) return std::nullopt;
  if (program.outputs.empty()) return std::nullopt;
  for (const FusedStep& step : program.steps)
    if (!is_exact(step.op)) return std::nullopt;
  return prelude(program.dtype) + eval_function(program) + kernel_function(program);
}

bool use_generated_kernel(int64_t numel, ScalarType dtype) {
  switch (codegen_mode()) {
    case CodegenMode::off: return false;
    case CodegenMode::always: return true;
    case CodegenMode::large: return numel * static_cast<int64_t>(element_size(dtype)) >= kGeneratedMinBytes;
  }
  return false;
}

void run_generated_kernel(const GeneratedKernel& kernel, const tensor_list& inputs, const tensor_list& outputs,
                          bool stream) {
  std::vector<const void*> input_data;
  std::vector<void*> output_data;
  input_data.reserve(inputs.size());
  output_data.reserve(outputs.size());
  for (const Tensor& input : inputs) input_data.push_back(input.data_ptr());
  for (const Tensor& output : outputs) {
    output_data.push_back(output.data_ptr());
    // Non-temporal stores need aligned blocks: a fresh tensor's data is 64-byte aligned.
    stream = stream && reinterpret_cast<uintptr_t>(output.data_ptr()) % 64 == 0;
  }
  const int streaming = stream ? 1 : 0;
  // Any chunking gives the same bits here; run_chunked is how the eager kernels split work.
  ::strata::detail::run_chunked(inputs[0].numel(), [&](int64_t begin, int64_t end) {
    kernel.function(input_data.data(), output_data.data(), begin, end, streaming);
  });
}

}  // namespace strata::jit::detail
