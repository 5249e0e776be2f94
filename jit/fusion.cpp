// The fused elementwise executor: a chain of elementwise ops run as one pass over
// cache-sized tiles, with the eager kernels' rounding.
#include <strata/jit/fusion.h>

#include <Eigen/Core>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <utility>

#include <strata/ops/eigen_math.h>
#include <strata/ops/elementwise.h>
#include <strata/tensor/errors.h>
#include <strata/tensor/parallel.h>

namespace strata::jit::detail {

// Note [Fused elementwise tiles]
// (A program that is one small tree of exactly rounded ops runs instead as a tree kernel, with
// its intermediates in registers: Note [Tree kernels] in fusion_tree.cpp. A program of exactly
// rounded ops with large outputs runs as code generated for it: Note [Generated kernels] in
// fusion_codegen.cpp.)
// run_fused computes a program of elementwise steps as numexpr does: the flat element range
// is cut into tiles of at most kTileElements, and every step runs over one tile before the
// next tile starts. Inputs are read where they are and each output is written once, straight
// into its tensor; the other registers live in buffer slots of one tile each, in a per-thread
// scratch buffer that stays in cache, so no full-size temporary is ever made. A slot is reused
// as soon as the last step reading its register has run (a step may write over the slot of an
// operand it reads last: every step is elementwise, so in place is safe).
//
// Note [Matching eager bit for bit]
// add, sub, mul, div, neg, abs, relu and sqrt round exactly (add's and sub's alpha through one
// fma, as Note [Fused alpha] in ops/pointwise.cpp says), so any loop gives eager's bits. exp,
// log, sin, cos, tanh and sigmoid are Eigen functors whose packet and scalar versions may
// differ in the last bit (Eigen's pexp against std::exp in double, for one), and Eigen picks
// the version per element: `y = f(x)` over [0, n) runs the scalar version up to the first
// element whose destination is aligned for a packet (64 bytes with AVX-512), whole packets
// from there, and the scalar version on the remainder. Eager runs that over each chunk of
// run_chunked, into fresh 64-byte aligned tensors. So that every element takes the same
// version here:
// - the executor splits the range with the same run_chunked (same range, same grain, so the
//   same chunks for the same thread count: eager's own bits may change with the thread count,
//   and the fused results change with them);
// - tiles end at multiples of the tile size (kTileElements or kCachedTileElements, both
//   multiples of every packet size) or at the end of the chunk, so a tile's packets are
//   eager's packets and only a chunk's ends are scalar;
// - a tile's destination starts at the address eager's output has modulo 64: outputs are
//   fresh 64-byte aligned tensors too, and a slot is 64-byte aligned with the tile placed at
//   element offset begin % (64 / sizeof(C));
// - the unary steps are the expressions of ops/unary.cpp (the functors of ops/eigen_math.h)
//   on the same Eigen Map types, compiled with unary.cpp's flags (-fno-math-errno, the
//   default floating-point contraction; see CMakeLists.txt). Each step is a loop of its own
//   through memory, so a * b + c is never contracted into an fma across steps.
// tests/jit/test_fusion.cpp checks sizes around the tile and the chunk boundaries.
//
// Note [Fused tile size]
// Tiles are short: 64 elements, 256 bytes of float per register. Each step is a loop of its
// own over the tile, so within a tile the inputs are read one step after another; with tiles
// of 2048 elements each input was read in bursts of 8 KiB, the hardware prefetchers saw one or
// two streams at a time, and a * b + c * d - e over 16M floats ran at 0.8x eager's time, twice
// a plain loop's. With 64-element tiles the five inputs advance together as in the plain loop,
// and the fused program runs as fast as it (0.4x eager). The cost is a few cycles of dispatch
// per step and tile (operands are resolved once per chunk), small next to 64 elements of exp or
// tanh. Whole tiles run with the count known at compile time (std::integral_constant), so
// each step's loop over them is unrolled into a few vector instructions with no loop control:
// in one process, interleaved round by round, that took the median of a * b + c * d - e from
// 0.56-0.61x eager to 0.50-0.53x. Outputs larger than the caches are streamed out (Note
// [Streaming outputs]) and inputs are prefetched (Note [Prefetching inputs]).
// When every input and output together fit in kCachedBytes, nothing streams from memory and the
// tiles are kCachedTileElements long instead: over cached data the per-step cost was what
// counted, and a * b + c * d - e on 16K floats took 0.34-0.57 ns an element with 64-element
// tiles (slower than eager's 0.25-0.36), 0.19-0.21 with 1024-element tiles.
constexpr int64_t kTileElements = 64;
constexpr int64_t kCachedTileElements = 1024;
constexpr int64_t kCachedBytes = int64_t{8} << 20;
constexpr uintptr_t kPrefetchBytes = 1024;  // Note [Prefetching inputs]
constexpr int64_t kSlotAlignment = 64;  // bytes; a multiple of every Eigen packet's alignment
static_assert(kTileElements % (kSlotAlignment / sizeof(float)) == 0, "tiles end on packet boundaries");
static_assert(kCachedTileElements % kTileElements == 0, "tiles end on packet boundaries");

namespace {

constexpr const char* kWhere = "[jit::run_fused]";

enum class Arity : uint8_t { unary, binary, scalar };

struct OpInfo {
  FusedOp op;
  const char* name;  // the eager op, without the strata:: namespace
  Arity arity;
  bool has_alpha;
};

constexpr std::array<OpInfo, 18> kOps = {{
    {FusedOp::Add, "add.Tensor", Arity::binary, true},
    {FusedOp::Sub, "sub.Tensor", Arity::binary, true},
    {FusedOp::Mul, "mul.Tensor", Arity::binary, false},
    {FusedOp::Div, "div.Tensor", Arity::binary, false},
    {FusedOp::AddScalar, "add.Scalar", Arity::scalar, true},
    {FusedOp::SubScalar, "sub.Scalar", Arity::scalar, true},
    {FusedOp::MulScalar, "mul.Scalar", Arity::scalar, false},
    {FusedOp::DivScalar, "div.Scalar", Arity::scalar, false},
    {FusedOp::Neg, "neg", Arity::unary, false},
    {FusedOp::Exp, "exp", Arity::unary, false},
    {FusedOp::Log, "log", Arity::unary, false},
    {FusedOp::Sqrt, "sqrt", Arity::unary, false},
    {FusedOp::Tanh, "tanh", Arity::unary, false},
    {FusedOp::Sigmoid, "sigmoid", Arity::unary, false},
    {FusedOp::Relu, "relu", Arity::unary, false},
    {FusedOp::Abs, "abs", Arity::unary, false},
    {FusedOp::Sin, "sin", Arity::unary, false},
    {FusedOp::Cos, "cos", Arity::unary, false},
}};

const OpInfo* find_info(FusedOp op) {
  for (const OpInfo& info : kOps)
    if (info.op == op) return &info;
  return nullptr;
}

// ---------------------------------------------------------------------------------------
// Checks.

// Note [Fused constants]
// The eager kernels convert a Scalar operand and alpha with checked_scalar: to_double(), an
// overflow check against the dtype's range, then a cast to the compute type. A step keeps the
// double, so the cast here gives the same float, and the same check throws the same kind of
// error (ValueError). Eager checks alpha only when it is not 1, and uses a plain add then.
void check_constant(double value, ScalarType dtype, size_t step, const OpInfo& info, const char* what) {
  const double max_value = dtype == kFloat32 ? std::numeric_limits<float>::max() : std::numeric_limits<double>::max();
  STRATA_CHECK_VALUE(!std::isfinite(value) || std::abs(value) <= max_value, kWhere, " steps[", step, "] (",
                     info.name, "): ", what, " ", value, " cannot be converted to type ", dtype,
                     " without overflow");
}

bool is_register(int index, int register_count) { return index >= 0 && index < register_count; }

void check_operand(const FusedProgram& program, const std::vector<char>& defined, size_t step,
                   const OpInfo& info, const char* name, int index) {
  STRATA_CHECK(is_register(index, program.register_count) && defined[index], kWhere, " steps[", step, "] (",
               info.name, ") reads register ", name, " = ", index,
               ", which is not an input and not written by an earlier step (registers: ",
               program.register_count, ")");
}

void check_step(const FusedProgram& program, std::vector<char>& defined, size_t index) {
  const FusedStep& step = program.steps[index];
  const OpInfo* info = find_info(step.op);
  STRATA_CHECK(info != nullptr, kWhere, " steps[", index, "] has an unknown op (", static_cast<int>(step.op), ")");
  check_operand(program, defined, index, *info, "lhs", step.lhs);
  if (info->arity == Arity::binary) check_operand(program, defined, index, *info, "rhs", step.rhs);
  else
    STRATA_CHECK(step.rhs == -1, kWhere, " steps[", index, "] (", info->name,
                 ") reads one register, but rhs is ", step.rhs, " (expected -1)");
  if (info->arity == Arity::scalar) check_constant(step.scalar, program.dtype, index, *info, "scalar");
  if (info->has_alpha && step.alpha != 1.0) check_constant(step.alpha, program.dtype, index, *info, "alpha");
  STRATA_CHECK(step.out >= program.input_count && step.out < program.register_count, kWhere, " steps[", index,
               "] (", info->name, ") writes register ", step.out, ", expected one in [", program.input_count,
               ", ", program.register_count, ") (inputs are read-only)");
  STRATA_CHECK(!defined[step.out], kWhere, " steps[", index, "] (", info->name, ") writes register ", step.out,
               ", which an earlier step already wrote (each register is written once)");
  defined[step.out] = 1;
}

void check_program(const FusedProgram& program) {
  STRATA_CHECK(program.dtype == kFloat32 || program.dtype == kFloat64, kWhere,
               " program.dtype must be Float32 or Float64, got ", program.dtype);
  STRATA_CHECK(program.input_count >= 1, kWhere, " program.input_count must be at least 1, got ",
               program.input_count);
  STRATA_CHECK(program.register_count >= program.input_count, kWhere, " program.register_count (",
               program.register_count, ") is less than program.input_count (", program.input_count, ")");
  std::vector<char> defined(program.register_count, 0);
  std::fill(defined.begin(), defined.begin() + program.input_count, 1);
  for (size_t i = 0; i < program.steps.size(); ++i) check_step(program, defined, i);
  for (size_t k = 0; k < program.outputs.size(); ++k) {
    const int r = program.outputs[k];
    STRATA_CHECK(is_register(r, program.register_count) && defined[r], kWhere, " program.outputs[", k,
                 "] = ", r, " is not an input and not written by any step");
  }
}

void check_inputs(const FusedProgram& program, const tensor_list& inputs) {
  STRATA_CHECK(static_cast<int64_t>(inputs.size()) == program.input_count, kWhere, " expected ",
               program.input_count, " inputs (program.input_count), got ", inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    const Tensor& input = inputs[i];
    STRATA_CHECK(input.defined(), kWhere, " inputs[", i, "] is an undefined tensor");
    STRATA_CHECK(input.is_cpu(), kWhere, " inputs[", i, "] is on ", input.device(), ", expected the CPU");
    STRATA_CHECK(input.dtype() == program.dtype, kWhere, " inputs[", i, "] has dtype ", input.dtype(),
                 ", but the program computes in ", program.dtype);
    STRATA_CHECK(input.is_contiguous(), kWhere, " inputs[", i, "] must be contiguous (sizes ", input.sizes(),
                 ", strides ", input.strides(), ")");
    STRATA_CHECK(input.sizes() == inputs[0].sizes(), kWhere, " inputs[", i, "] has shape ", input.sizes(),
                 ", but inputs[0] has shape ", inputs[0].sizes(), " (all inputs must have one shape)");
  }
}

// ---------------------------------------------------------------------------------------
// Where each register lives during a tile. See Note [Fused elementwise tiles].

enum class HomeKind : uint8_t { input, output, slot };
struct Home {
  HomeKind kind;
  int index;  // the input, output or slot number
};

}  // namespace

struct FusedPlan {
  std::vector<Home> homes;                  // per register
  std::vector<std::pair<int, int>> copies;  // (output, register): outputs filled by a copy
  int slot_count = 0;
};

namespace {

// Gives each register a home: inputs stay put, the first output naming a register is written
// in place, and the rest take slots, freed after the last step that reads them.
FusedPlan make_plan(const FusedProgram& program, bool stream_outputs) {
  FusedPlan plan;
  plan.homes.resize(program.register_count, Home{HomeKind::slot, -1});
  for (int r = 0; r < program.input_count; ++r) plan.homes[r] = {HomeKind::input, r};
  for (size_t k = 0; k < program.outputs.size(); ++k) {
    Home& home = plan.homes[program.outputs[k]];
    if (!stream_outputs && home.kind == HomeKind::slot && home.index < 0) home = {HomeKind::output, static_cast<int>(k)};
    else plan.copies.emplace_back(static_cast<int>(k), program.outputs[k]);
  }
  std::vector<int> last_read(program.register_count, -1);
  for (size_t i = 0; i < program.steps.size(); ++i) {
    last_read[program.steps[i].lhs] = static_cast<int>(i);
    if (program.steps[i].rhs >= 0) last_read[program.steps[i].rhs] = static_cast<int>(i);
  }
  // Registers copied out at the end of a tile keep their slots to the end of it.
  for (const auto& [output, r] : plan.copies) last_read[r] = static_cast<int>(program.steps.size());
  std::vector<int> free_slots;
  auto release = [&](int r) {
    if (plan.homes[r].kind == HomeKind::slot) free_slots.push_back(plan.homes[r].index);
  };
  for (size_t i = 0; i < program.steps.size(); ++i) {
    const FusedStep& step = program.steps[i];
    if (last_read[step.lhs] == static_cast<int>(i)) release(step.lhs);
    if (step.rhs >= 0 && step.rhs != step.lhs && last_read[step.rhs] == static_cast<int>(i)) release(step.rhs);
    Home& home = plan.homes[step.out];
    if (home.kind != HomeKind::slot) continue;
    if (free_slots.empty()) {
      home.index = plan.slot_count++;
    } else {
      home.index = free_slots.back();
      free_slots.pop_back();
    }
    if (last_read[step.out] < 0) release(step.out);  // never read: the next step may reuse it
  }
  return plan;
}

// ---------------------------------------------------------------------------------------
// The steps over one tile of `count` elements, in compute type C (float or double).

template <class C>
using ArrayX = Eigen::Array<C, Eigen::Dynamic, 1>;

template <class C, class Fn, class N>
void unary_loop(const C* x, C* out, N count, const Fn& fn) {
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) out[i] = fn(x[i]);
}

template <class C, class Fn, class N>
void binary_loop(const C* x, const C* y, C* out, N count, const Fn& fn) {
  for (int64_t i = 0; i < static_cast<int64_t>(count); ++i) out[i] = fn(x[i], y[i]);
}

// out = expression(x) as an Eigen assignment; See Note [Matching eager bit for bit].
template <class C, class Expression>
void eigen_unary(const C* x, C* out, int64_t count, const Expression& expression) {
  Eigen::Map<ArrayX<C>>(out, count) = expression(Eigen::Map<const ArrayX<C>>(x, count));
}

// add and sub with alpha (sign -1 for sub), as AddOp and SubOp in ops/pointwise.cpp.
template <class C, class N>
void add_registers(const C* x, const C* y, C* out, N count, double alpha, C sign) {
  if (alpha == 1.0) {
    if (sign > 0) binary_loop(x, y, out, count, [](C a, C b) { return a + b; });
    else binary_loop(x, y, out, count, [](C a, C b) { return a - b; });
    return;
  }
  const C scaled = sign * static_cast<C>(alpha);
  binary_loop(x, y, out, count, [scaled](C a, C b) { return std::fma(scaled, b, a); });
}

template <class C, class N>
void add_constant(const C* x, C* out, N count, double value, double alpha, C sign) {
  const C c = static_cast<C>(value);
  if (alpha == 1.0) {
    if (sign > 0) unary_loop(x, out, count, [c](C a) { return a + c; });
    else unary_loop(x, out, count, [c](C a) { return a - c; });
    return;
  }
  const C scaled = sign * static_cast<C>(alpha);
  unary_loop(x, out, count, [c, scaled](C a) { return std::fma(scaled, c, a); });
}

template <class C>
void run_unary_math(FusedOp op, const C* x, C* out, int64_t count) {
  switch (op) {
    case FusedOp::Exp: return eigen_unary(x, out, count, [](const auto& a) { return ::strata::detail::full_range_exp(a); });
    case FusedOp::Log: return eigen_unary(x, out, count, [](const auto& a) { return a.log(); });
    case FusedOp::Tanh: return eigen_unary(x, out, count, [](const auto& a) { return a.tanh(); });
    case FusedOp::Sin: return eigen_unary(x, out, count, [](const auto& a) { return a.sin(); });
    case FusedOp::Cos: return eigen_unary(x, out, count, [](const auto& a) { return a.cos(); });
    case FusedOp::Sigmoid:
      return eigen_unary(x, out, count, [](const auto& a) { return ::strata::detail::sigmoid_from_exp(a); });
    default: STRATA_INTERNAL_ASSERT(false, "run_unary_math: not an Eigen op");
  }
}

template <class C, class N>
void run_step(const FusedStep& step, const C* x, const C* y, C* out, N count) {
  switch (step.op) {
    case FusedOp::Add: return add_registers(x, y, out, count, step.alpha, C(1));
    case FusedOp::Sub: return add_registers(x, y, out, count, step.alpha, C(-1));
    case FusedOp::Mul: return binary_loop(x, y, out, count, [](C a, C b) { return a * b; });
    case FusedOp::Div: return binary_loop(x, y, out, count, [](C a, C b) { return a / b; });
    case FusedOp::AddScalar: return add_constant(x, out, count, step.scalar, step.alpha, C(1));
    case FusedOp::SubScalar: return add_constant(x, out, count, step.scalar, step.alpha, C(-1));
    case FusedOp::MulScalar: {
      const C c = static_cast<C>(step.scalar);
      return unary_loop(x, out, count, [c](C a) { return a * c; });
    }
    case FusedOp::DivScalar: {
      const C c = static_cast<C>(step.scalar);
      return unary_loop(x, out, count, [c](C a) { return a / c; });
    }
    case FusedOp::Neg: return unary_loop(x, out, count, [](C a) { return -a; });
    case FusedOp::Abs: return unary_loop(x, out, count, [](C a) { return std::abs(a); });
    case FusedOp::Relu: return unary_loop(x, out, count, [](C a) { return a < C(0) ? C(0) : a; });
    case FusedOp::Sqrt: return unary_loop(x, out, count, [](C a) { return std::sqrt(a); });
    default: return run_unary_math(step.op, x, out, static_cast<int64_t>(count));
  }
}

// ---------------------------------------------------------------------------------------
// Tiles and chunks.

// A 64-byte aligned scratch buffer of this thread, at least `bytes` long, kept for later calls.
char* thread_scratch(size_t bytes) {
  struct FreeDeleter {
    void operator()(char* data) const { std::free(data); }
  };
  thread_local std::unique_ptr<char, FreeDeleter> buffer;
  thread_local size_t capacity = 0;
  if (capacity < bytes) {
    const size_t rounded = (bytes + kSlotAlignment - 1) / kSlotAlignment * kSlotAlignment;
    capacity = 0;
    buffer.reset(static_cast<char*>(std::aligned_alloc(kSlotAlignment, rounded)));
    STRATA_CHECK(buffer != nullptr, kWhere, " could not allocate ", rounded, " bytes of scratch memory");
    capacity = rounded;
  }
  return buffer.get();
}

// Note [Streaming outputs]
// An output far larger than the caches is written once and not read back soon: with plain
// stores each line written is first read into the cache (a read for ownership), one more
// stream of memory traffic. Above kStreamBytes the outputs are computed into slots and copied
// out with non-temporal stores, which write whole lines without reading them: a * b + c * d - e
// moves 6 streams of 64 MiB instead of 7. The values are copies, so the bits are the same.
// Measured interleaved on one core: 14.6-15.9 ms against 15.8-16.8 ms with plain stores (Zen 4).
// With AVX-512 each store is a whole 64-byte line (four per 64-element tile instead of sixteen
// 16-byte ones): on a Zen 5 VM, 12.8-13.2 ms in four processes against 12.7-27.9 ms.
constexpr int64_t kStreamBytes = int64_t{8} << 20;

// Note [Prefetching inputs]
// Above kCachedBytes each tile also asks for the lines of every input kPrefetchBytes ahead
// (prefetcht0). A plain loop over five inputs leaves it to the hardware prefetchers and
// reaches about 0.35x eager either way. The tiled program reads its inputs a step at a time,
// a few lines each, and between those reads runs the dispatch of every step; on this shared
// VM, in phases when memory answered slowly (eager 37-41 ms instead of 29-31), the hardware
// prefetchers fell behind it and the program ran at 0.8-1.0x eager. Prefetched, it ran at
// 0.49-0.57x in those phases (medians of 20 interleaved rounds, one process per library), and
// no slower in the quick ones. 1 KiB ahead was best; 4 and 8 KiB, or prefetching into L2 only
// (prefetcht1), were slower. Prefetches never fault, so asking past an input's end is
// harmless (the address is computed as an integer, not as a pointer past the end).
template <class C>
void stream_copy(C* destination, const C* source, int64_t count) {
#if !defined(__SSE2__)
  std::memcpy(destination, source, count * sizeof(C));  // no streaming stores to use
#else
  int64_t i = 0;
#if defined(__AVX512F__)
  constexpr uintptr_t kAligned = 64;  // a whole line per store
#else
  constexpr uintptr_t kAligned = 16;
#endif
  for (; i < count && reinterpret_cast<uintptr_t>(destination + i) % kAligned != 0; ++i) destination[i] = source[i];
  if constexpr (std::is_same_v<C, float>) {
#if defined(__AVX512F__)
    for (; i + 16 <= count; i += 16) _mm512_stream_ps(destination + i, _mm512_loadu_ps(source + i));
#endif
    for (; i + 4 <= count; i += 4) _mm_stream_ps(destination + i, _mm_loadu_ps(source + i));
  } else {
#if defined(__AVX512F__)
    for (; i + 8 <= count; i += 8) _mm512_stream_pd(destination + i, _mm512_loadu_pd(source + i));
#endif
    for (; i + 2 <= count; i += 2) _mm_stream_pd(destination + i, _mm_loadu_pd(source + i));
  }
  for (; i < count; ++i) destination[i] = source[i];
#endif
}

template <class C>
struct Executor {
  static constexpr int64_t kLanes = kSlotAlignment / static_cast<int64_t>(sizeof(C));

  const FusedProgram& program;
  const FusedPlan& plan;
  std::vector<const C*> inputs;
  std::vector<C*> outputs;
  int64_t tile_elements = kTileElements;  // Note [Fused tile size]
  int64_t slot_stride = 0;  // elements between slots: a tile, its alignment offset, rounded
  bool stream = false;      // outputs written with non-temporal stores (Note [Streaming outputs])
  bool prefetch = false;    // inputs prefetched ahead of the tiles (Note [Prefetching inputs])

  // Where a register's data is: at base + begin for the tile starting at `begin` when it
  // lives in a tensor, at base + begin % kLanes when it lives in a slot (Note [Matching eager
  // bit for bit]). Resolved once per chunk, so a tile pays no lookups.
  struct Operand {
    C* base = nullptr;
    bool in_tensor = false;
    C* at(int64_t begin) const { return base + (in_tensor ? begin : begin % kLanes); }
  };
  struct ResolvedStep {
    const FusedStep* step;
    Operand lhs, rhs, out;
  };

  Operand resolve(int r, C* slots) const {
    if (r < 0) return {};
    const Home home = plan.homes[r];
    switch (home.kind) {
      case HomeKind::input: return {const_cast<C*>(inputs[home.index]), true};
      case HomeKind::output: return {outputs[home.index], true};
      case HomeKind::slot: break;
    }
    return {slots + home.index * slot_stride, false};
  }

  // One tile of `count` elements; `count` is std::integral_constant for whole tiles, so that
  // the steps' loops are unrolled (Note [Fused tile size]).
  template <class N>
  void run_tile(const std::vector<ResolvedStep>& steps, const std::vector<std::pair<int, Operand>>& copies,
                int64_t begin, N count) const {
#if defined(__SSE2__)
    if (prefetch) {  // Note [Prefetching inputs]
      constexpr int64_t kLine = 64 / static_cast<int64_t>(sizeof(C));
      for (const C* input : inputs)
        for (int64_t line = 0; line < static_cast<int64_t>(count); line += kLine)
          _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(input + begin + line) + kPrefetchBytes),
                       _MM_HINT_T0);
    }
#endif
    for (const ResolvedStep& resolved : steps)
      run_step<C>(*resolved.step, resolved.lhs.at(begin), resolved.rhs.at(begin), resolved.out.at(begin), count);
    for (const auto& [output, source] : copies) {
      if (stream) stream_copy(outputs[output] + begin, source.at(begin), static_cast<int64_t>(count));
      else std::memcpy(outputs[output] + begin, source.at(begin), static_cast<int64_t>(count) * sizeof(C));
    }
  }

  void run_chunk(int64_t chunk_begin, int64_t chunk_end) const {
    C* slots = reinterpret_cast<C*>(thread_scratch(plan.slot_count * slot_stride * sizeof(C)));
    std::vector<ResolvedStep> steps;
    steps.reserve(program.steps.size());
    for (const FusedStep& step : program.steps)
      steps.push_back({&step, resolve(step.lhs, slots), resolve(step.rhs, slots), resolve(step.out, slots)});
    std::vector<std::pair<int, Operand>> copies;
    for (const auto& [output, r] : plan.copies) copies.emplace_back(output, resolve(r, slots));
    for (int64_t begin = chunk_begin; begin < chunk_end;) {
      const int64_t end = std::min(chunk_end, (begin / tile_elements + 1) * tile_elements);
      if (end - begin == kTileElements) run_tile(steps, copies, begin, std::integral_constant<int64_t, kTileElements>{});
      else run_tile(steps, copies, begin, end - begin);
      begin = end;
    }
#if defined(__SSE2__)
    if (stream) _mm_sfence();  // streamed stores are visible before the chunk is done
#endif
  }
};

template <class C>
void run_program(const FusedProgram& program, const FusedPlan& plan, bool stream, const tensor_list& inputs,
                 const tensor_list& outputs) {
  const int64_t numel = inputs[0].numel();
  Executor<C> executor{program, plan, {}, {}, 0, stream};
  for (const Tensor& input : inputs) executor.inputs.push_back(static_cast<const C*>(input.data_ptr()));
  for (const Tensor& output : outputs) executor.outputs.push_back(static_cast<C*>(output.data_ptr()));
  const int64_t lanes = Executor<C>::kLanes;
  const int64_t working_set = numel * static_cast<int64_t>((inputs.size() + outputs.size()) * sizeof(C));
  executor.tile_elements = working_set <= kCachedBytes ? kCachedTileElements : kTileElements;
  executor.prefetch = working_set > kCachedBytes;
  const int64_t tile = std::min(numel, executor.tile_elements);
  executor.slot_stride = (tile + lanes - 1) / lanes * lanes + lanes;
  // The chunks of the eager kernels (Note [Matching eager bit for bit]).
  ::strata::detail::run_chunked(numel, [&executor](int64_t begin, int64_t end) { executor.run_chunk(begin, end); });
}

}  // namespace

std::optional<FusedOp> fused_op_for(std::string_view op_name) {
  constexpr std::string_view prefix = "strata::";
  if (op_name.substr(0, prefix.size()) != prefix) return std::nullopt;
  op_name.remove_prefix(prefix.size());
  for (const OpInfo& info : kOps)
    if (op_name == info.name) return info.op;
  return std::nullopt;
}

// Note [Prepared fused programs]
// Checking a program and giving its registers homes take time linear in its steps, as long as
// running it over a few elements: for 100 x tanh(y * 0.5 + 0.1) on 8 floats they were a
// quarter of a compiled call (8.5 us; 6.0 us without them). A PreparedFusedProgram does both
// once, for both ways outputs can be written (the choice depends on the size of each call's
// inputs), and each run only checks its inputs. run_fused prepares the program for one run.
// A program's generated kernel is compiled at its first run large enough to use it (by one
// thread: the others wait for it), so programs that only ever run small never compile.
struct PreparedFusedProgram::Generated {
  std::string source;
  std::once_flag compiled;
  std::shared_ptr<const GeneratedKernel> kernel;  // null when it did not compile
};

PreparedFusedProgram::PreparedFusedProgram(FusedProgram program) : program_(std::move(program)) {
  check_program(program_);
  if (std::optional<std::string> source = generate_kernel_source(program_)) {
    generated_ = std::make_shared<Generated>();
    generated_->source = std::move(*source);
  }
  tree_ = make_tree_kernel(program_);
  if (tree_) return;  // the plans are the executor's
  in_place_plan_ = std::make_shared<const FusedPlan>(make_plan(program_, false));
  streaming_plan_ = std::make_shared<const FusedPlan>(make_plan(program_, true));
}

const GeneratedKernel* PreparedFusedProgram::generated_kernel(int64_t numel) const {
  if (!generated_ || !use_generated_kernel(numel, program_.dtype)) return nullptr;
  Generated& generated = *generated_;
  std::call_once(generated.compiled, [&generated] { generated.kernel = load_generated_kernel(generated.source); });
  return generated.kernel.get();
}

bool PreparedFusedProgram::uses_generated_kernel(int64_t numel) const { return generated_kernel(numel) != nullptr; }

tensor_list PreparedFusedProgram::run(const tensor_list& inputs) const {
  check_inputs(program_, inputs);
  tensor_list outputs;
  outputs.reserve(program_.outputs.size());
  for (size_t k = 0; k < program_.outputs.size(); ++k)
    outputs.push_back(::strata::detail::make_empty(inputs[0].sizes(), program_.dtype, Device(kCPU)));
  const int64_t numel = inputs[0].numel();
  if (numel == 0 || outputs.empty()) return outputs;
  const bool stream = numel * static_cast<int64_t>(element_size(program_.dtype)) >= kStreamBytes;
  if (const GeneratedKernel* kernel = generated_kernel(numel)) {
    run_generated_kernel(*kernel, inputs, outputs, stream);
    return outputs;
  }
  if (tree_) {
    run_tree_kernel(*tree_, inputs, outputs[0], stream);
    return outputs;
  }
  const FusedPlan& plan = stream ? *streaming_plan_ : *in_place_plan_;
  if (program_.dtype == kFloat32) run_program<float>(program_, plan, stream, inputs, outputs);
  else run_program<double>(program_, plan, stream, inputs, outputs);
  return outputs;
}

tensor_list run_fused(const FusedProgram& program, const tensor_list& inputs) {
  return PreparedFusedProgram(program).run(inputs);
}

}  // namespace strata::jit::detail
