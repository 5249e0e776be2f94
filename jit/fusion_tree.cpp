// Tree kernels: fused programs of exactly rounded ops, evaluated in vector registers. See
// Note [Tree kernels].
#include <strata/jit/fusion.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>
#include <type_traits>
#include <utility>
#include <vector>

#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include <strata/ops/elementwise.h>
#include <strata/tensor/errors.h>

namespace strata::jit::detail {

// Note [Tree kernels]
// The tiled executor of fusion.cpp keeps every intermediate register in a slot in memory: each
// step reads its operands from memory and writes its result back, a tile at a time. On a
// memory-bound program that costs more than the dispatch. Measured on a * b + c * d - e over
// 16M floats, one core, variants interleaved round by round in one process (medians of 20,
// against eager): the executor 0.50-0.55; the same tiles and slots written out by hand, with
// no dispatch at all, 0.46-0.50; a plain loop keeping everything in registers 0.32-0.35. Only
// code that keeps the intermediates in registers gets near the loop.
//
// A tree kernel is such code, compiled ahead of time for the *shape* of a small expression
// tree. It applies when the program computes one output as a tree over its inputs and
// constants: every intermediate register is read exactly once, every step is one of the
// exactly rounded ops (add, sub, mul, div with alpha 1, their Scalar forms, neg, abs, relu,
// sqrt), and there are at most kMaxNodes binary ops. A unary op rides on the node or leaf
// below it as its post op (one each). The shape says which positions of the tree, in
// pre-order, are binary ops and which are leaves; run_range<C, kShape, kPost> is a loop whose
// body is the whole tree, inlined, each node a switch on its op that goes the same way every
// time. The 23 shapes of at most 4 binary ops are all compiled, twice (with and without post
// ops, so that a tree without any pays no switch for them), and a table indexed by the shape's
// code finds the kernel. Values move a block of kVectorsPerBlock vectors at a time, so each
// switch is paid once per block: with 4 switches per block of 128 floats the loop above still
// ran at 0.42-0.44 where it had run at 0.34-0.38 without them (written by hand both ways), so
// the switches are what is left between a tree kernel and the loop. Computing add, sub and mul
// all and keeping one, without a branch, was no faster and is not done.
//
// Outputs of kStreamBytes and more are stored with non-temporal stores and the inputs are
// prefetched kPrefetchBytes ahead, as the executor does (Notes [Streaming outputs] and
// [Prefetching inputs] in fusion.cpp). Without the prefetches the kernel ran at 0.49-0.56.
//
// Bits: each op rounds exactly, so any order of evaluation that rounds every op on its own
// gives eager's bits. The file compiles with -ffp-contract=off (CMakeLists.txt), so a * b + c
// is never contracted into an fma here. Which NaN comes out of an op on two NaNs may differ
// from eager's, as it may between eager's own vector body and scalar tail (Note [NaN bits in
// fused results] in tests/jit/test_fusion.cpp).
//
// Measured with bench_jit (compiled_expression_16m / eager_expression_16m, three runs of each
// library, one core): 0.41-0.49, against 0.78-0.93 for the executor it replaces for this
// program in the same minutes. Outputs of 1 MiB and more now run through a kernel generated
// for the program where a compiler is found (Note [Generated kernels] in fusion_codegen.cpp);
// tree kernels run the smaller ones, and the large ones without a compiler.

namespace {

constexpr int kMaxNodes = kMaxTreeNodes;
constexpr int kMaxLeaves = kMaxNodes + 1;
constexpr int kMaxCodeLength = 2 * kMaxNodes + 1;  // nodes and leaves, in pre-order
constexpr uint32_t kShapeCount = uint32_t{1} << (kMaxCodeLength + 1);
// The machine's widest vectors, so that no function passes a vector the target lacks.
#if defined(__AVX512F__)
constexpr int kVectorBytes = 64;
#elif defined(__AVX__)
constexpr int kVectorBytes = 32;
#else
constexpr int kVectorBytes = 16;
#endif
constexpr int kVectorsPerBlock = 8;
constexpr int64_t kStreamAlignment = 64;
constexpr uintptr_t kPrefetchBytes = 1024;  // as the executor's (Note [Prefetching inputs])
// The tree's code is inlined into one loop body (everything marked always_inline below): as
// calls, each returning a block through memory, it ran slower than the tiled executor.
// Prefetch distance: 512 to 3072 bytes measured alike.

// ---------------------------------------------------------------------------------------
// Shapes. A shape's code holds its pre-order sequence, bit p set when position p is a binary
// op, under a sentinel bit at the sequence's length: a leaf alone is 0b10, mul(a, b) is 0b1001.

constexpr int code_length(uint32_t shape) { return std::bit_width(shape) - 1; }
constexpr bool is_node(uint32_t shape, int position) { return ((shape >> position) & 1u) != 0; }

// One past the end of the subtree that starts at `position`, or -1 when the code ends first.
constexpr int subtree_end(uint32_t shape, int position) {
  const int length = code_length(shape);
  for (int open = 1; open > 0; ++position) {
    if (position >= length) return -1;
    open += is_node(shape, position) ? 1 : -1;
  }
  return position;
}

constexpr bool is_shape(uint32_t shape) { return shape != 0 && subtree_end(shape, 0) == code_length(shape); }

constexpr int nodes_in(uint32_t shape, int begin, int end) {
  int nodes = 0;
  for (int p = begin; p < end; ++p) nodes += is_node(shape, p) ? 1 : 0;
  return nodes;
}

template <uint32_t kShape>
constexpr int kLeavesOf = code_length(kShape) - nodes_in(kShape, 0, code_length(kShape));

static_assert(is_shape(0b10) && is_shape(0b1001) && !is_shape(0b1) && !is_shape(0b101) && !is_shape(0b1011));

// ---------------------------------------------------------------------------------------
// Values: blocks of kVectorsPerBlock GCC vectors of kVectorBytes (split into narrower
// instructions by the compiler where the machine has them narrower).

template <class C>
struct VectorOf {
  typedef C type __attribute__((vector_size(kVectorBytes)));
};
template <class C>
using Vector = typename VectorOf<C>::type;
template <class C>
using MaskOf = decltype(Vector<C>{} < Vector<C>{});  // the integer vector a comparison gives

template <class C>
constexpr int64_t kLanes = kVectorBytes / static_cast<int64_t>(sizeof(C));
template <class C>
constexpr int64_t kBlockElements = kVectorsPerBlock * kLanes<C>;

template <class C>
struct Block {
  Vector<C> v[kVectorsPerBlock];
};

template <class C>
[[gnu::always_inline]] inline Vector<C> sqrt_of(Vector<C> x) {
  constexpr bool kFloat = std::is_same_v<C, float>;
#if defined(__AVX512F__)
  if constexpr (kFloat) return (Vector<C>)_mm512_sqrt_ps((__m512)x);
  else return (Vector<C>)_mm512_sqrt_pd((__m512d)x);
#elif defined(__AVX__)
  if constexpr (kFloat) return (Vector<C>)_mm256_sqrt_ps((__m256)x);
  else return (Vector<C>)_mm256_sqrt_pd((__m256d)x);
#elif defined(__SSE2__)
  if constexpr (kFloat) return (Vector<C>)_mm_sqrt_ps((__m128)x);
  else return (Vector<C>)_mm_sqrt_pd((__m128d)x);
#else
  for (int64_t lane = 0; lane < kLanes<C>; ++lane) x[lane] = std::sqrt(x[lane]);  // as eager's std::sqrt
  return x;
#endif
}

// std::abs clears the sign bit, NaN's included.
template <class C>
[[gnu::always_inline]] inline Vector<C> abs_of(Vector<C> x) {
  using Mask = MaskOf<C>;
  using Int = std::conditional_t<sizeof(C) == 4, int32_t, int64_t>;
  const Mask magnitude = Mask{} + std::numeric_limits<Int>::max();  // every bit but the sign
  return (Vector<C>)((Mask)x & magnitude);
}

template <class C>
[[gnu::always_inline]] inline void apply_post(TreePostOp op, Block<C>& block) {
  switch (op) {
    case TreePostOp::none: return;
    case TreePostOp::neg:
      for (auto& v : block.v) v = -v;
      return;
    case TreePostOp::abs:
      for (auto& v : block.v) v = abs_of<C>(v);
      return;
    case TreePostOp::relu:  // a < 0 ? 0 : a, as eager's: NaN and -0 stay
      for (auto& v : block.v) v = v < Vector<C>{} ? Vector<C>{} : v;
      return;
    case TreePostOp::sqrt:
      for (auto& v : block.v) v = sqrt_of<C>(v);
      return;
  }
}

template <class C>
[[gnu::always_inline]] inline Block<C> combine(TreeOp op, const Block<C>& x, const Block<C>& y) {
  Block<C> r;
  switch (op) {
    case TreeOp::add:
      for (int j = 0; j < kVectorsPerBlock; ++j) r.v[j] = x.v[j] + y.v[j];
      break;
    case TreeOp::sub:
      for (int j = 0; j < kVectorsPerBlock; ++j) r.v[j] = x.v[j] - y.v[j];
      break;
    case TreeOp::mul:
      for (int j = 0; j < kVectorsPerBlock; ++j) r.v[j] = x.v[j] * y.v[j];
      break;
    case TreeOp::div:
      for (int j = 0; j < kVectorsPerBlock; ++j) r.v[j] = x.v[j] / y.v[j];
      break;
  }
  return r;
}

// Where the leaves' data is for one run: leaf k's block at element i starts at
// leaves[k] + i * steps[k] (step 0 for a constant, which points at a block of copies), and
// the ops of the nodes.
template <class C>
struct TreeArgs {
  const C* leaves[kMaxLeaves] = {};
  int64_t steps[kMaxLeaves] = {};
  TreeOp ops[kMaxNodes] = {};
  TreePostOp node_posts[kMaxNodes] = {};
  TreePostOp leaf_posts[kMaxLeaves] = {};
};

// Each leaf's current block.
template <class C>
using Cursor = std::array<const C*, kMaxLeaves>;

template <class C, uint32_t kShape, bool kPost, int kPosition, int kLeaf, int kNode>
[[gnu::always_inline]] inline Block<C> evaluate(const TreeArgs<C>& args, const Cursor<C>& at) {
  if constexpr (!is_node(kShape, kPosition)) {
    Block<C> block;
    const C* data = at[kLeaf];
    for (int j = 0; j < kVectorsPerBlock; ++j) std::memcpy(&block.v[j], data + j * kLanes<C>, sizeof(Vector<C>));
    if constexpr (kPost) apply_post(args.leaf_posts[kLeaf], block);
    return block;
  } else {
    constexpr int kRight = subtree_end(kShape, kPosition + 1);
    constexpr int kLeftNodes = nodes_in(kShape, kPosition + 1, kRight);
    constexpr int kLeftLeaves = kRight - kPosition - 1 - kLeftNodes;
    const Block<C> x = evaluate<C, kShape, kPost, kPosition + 1, kLeaf, kNode + 1>(args, at);
    const Block<C> y = evaluate<C, kShape, kPost, kRight, kLeaf + kLeftLeaves, kNode + 1 + kLeftNodes>(args, at);
    Block<C> r = combine(args.ops[kNode], x, y);
    if constexpr (kPost) apply_post(args.node_posts[kNode], r);
    return r;
  }
}

// A block's vectors to out; `stream` uses non-temporal stores, which need `out` aligned to
// kVectorBytes.
template <class C>
[[gnu::always_inline]] inline void store(C* out, const Block<C>& block, bool stream) {
#if defined(__SSE2__)
  if (stream) {
    constexpr bool kFloat = std::is_same_v<C, float>;
    for (int j = 0; j < kVectorsPerBlock; ++j) {
      C* to = out + j * kLanes<C>;
#if defined(__AVX512F__)
      if constexpr (kFloat) _mm512_stream_ps(to, (__m512)block.v[j]);
      else _mm512_stream_pd(to, (__m512d)block.v[j]);
#elif defined(__AVX__)
      if constexpr (kFloat) _mm256_stream_ps(to, (__m256)block.v[j]);
      else _mm256_stream_pd(to, (__m256d)block.v[j]);
#else
      if constexpr (kFloat) _mm_stream_ps(to, (__m128)block.v[j]);
      else _mm_stream_pd(to, (__m128d)block.v[j]);
#endif
    }
    return;
  }
#endif
  for (int j = 0; j < kVectorsPerBlock; ++j) std::memcpy(out + j * kLanes<C>, &block.v[j], sizeof(Vector<C>));
}

// Elements [begin, end) of less than a block: the inputs are copied into a block-sized buffer
// and the whole block is computed (the lanes past `end` compute on zeros and are dropped).
template <class C, uint32_t kShape, bool kPost>
void run_partial(const TreeArgs<C>& args, C* out, int64_t begin, int64_t end) {
  alignas(kVectorBytes) C local[kMaxLeaves][kBlockElements<C>] = {};
  Cursor<C> at{};
  for (int k = 0; k < kLeavesOf<kShape>; ++k) {
    at[k] = args.leaves[k];  // a constant's block
    if (args.steps[k] == 0) continue;
    std::memcpy(local[k], args.leaves[k] + begin, static_cast<size_t>(end - begin) * sizeof(C));
    at[k] = local[k];
  }
  const Block<C> block = evaluate<C, kShape, kPost, 0, 0, 0>(args, at);
  alignas(kVectorBytes) C result[kBlockElements<C>];
  store(result, block, false);
  std::memcpy(out + begin, result, static_cast<size_t>(end - begin) * sizeof(C));
}

// Elements [begin, end): whole blocks where the output is block-aligned, partial ones at the
// ends. Streamed stores need 64-byte aligned addresses, which a block start is when the
// output's data is (a fresh tensor's always is; see tensor/storage.cpp).
template <class C, uint32_t kShape, bool kPost>
void run_range(const TreeArgs<C>& shared_args, C* out, int64_t begin, int64_t end, bool stream) {
  const TreeArgs<C> args = shared_args;  // a local copy: stores to `out` cannot change it
  constexpr int64_t kBlock = kBlockElements<C>;
  stream = stream && reinterpret_cast<uintptr_t>(out) % kStreamAlignment == 0;
  int64_t i = begin;
  const int64_t first_whole = std::min(end, (begin + kBlock - 1) / kBlock * kBlock);
  if (first_whole > i) run_partial<C, kShape, kPost>(args, out, i, first_whole);
  constexpr int kLeaves = kLeavesOf<kShape>;
  Cursor<C> at{};
  int64_t advance[kLeaves];
  for (int k = 0; k < kLeaves; ++k) {
    at[k] = args.leaves[k] + first_whole * args.steps[k];
    advance[k] = kBlock * args.steps[k];
  }
  for (i = first_whole; i + kBlock <= end; i += kBlock) {
#if defined(__SSE2__)
    if (stream)  // far larger than the caches: Note [Prefetching inputs] in fusion.cpp
      for (int k = 0; k < kLeaves; ++k)
        for (int64_t line = 0; line < kBlock; line += 64 / static_cast<int64_t>(sizeof(C)))
          _mm_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(at[k] + line) + kPrefetchBytes),
                       _MM_HINT_T0);
#endif
    store(out + i, evaluate<C, kShape, kPost, 0, 0, 0>(args, at), stream);
    for (int k = 0; k < kLeaves; ++k) at[k] += advance[k];
  }
  if (i < end) run_partial<C, kShape, kPost>(args, out, i, end);
#if defined(__SSE2__)
  if (stream) _mm_sfence();  // streamed stores are visible before the range is done
#endif
}

template <class C>
using RangeFn = void (*)(const TreeArgs<C>&, C*, int64_t, int64_t, bool);

template <class C, bool kPost, uint32_t kShape>
constexpr RangeFn<C> range_fn() {
  if constexpr (is_shape(kShape)) return &run_range<C, kShape, kPost>;
  else return nullptr;
}

template <class C, bool kPost, uint32_t... kShapes>
constexpr std::array<RangeFn<C>, sizeof...(kShapes)> make_table(std::integer_sequence<uint32_t, kShapes...>) {
  return {range_fn<C, kPost, kShapes>()...};
}

// Indexed by shape code; kernels with post ops apart, so that a tree without any pays no
// switch for them.
template <class C, bool kPost>
constexpr std::array<RangeFn<C>, kShapeCount> kKernels =
    make_table<C, kPost>(std::make_integer_sequence<uint32_t, kShapeCount>{});

// ---------------------------------------------------------------------------------------
// Recognising a tree.

std::optional<TreeOp> tree_op(FusedOp op) {
  switch (op) {
    case FusedOp::Add: case FusedOp::AddScalar: return TreeOp::add;
    case FusedOp::Sub: case FusedOp::SubScalar: return TreeOp::sub;
    case FusedOp::Mul: case FusedOp::MulScalar: return TreeOp::mul;
    case FusedOp::Div: case FusedOp::DivScalar: return TreeOp::div;
    default: return std::nullopt;
  }
}

std::optional<TreePostOp> post_op(FusedOp op) {
  switch (op) {
    case FusedOp::Neg: return TreePostOp::neg;
    case FusedOp::Abs: return TreePostOp::abs;
    case FusedOp::Relu: return TreePostOp::relu;
    case FusedOp::Sqrt: return TreePostOp::sqrt;
    default: return std::nullopt;
  }
}

// The program's tree, built from its output down. An item is a binary op or a leaf.
struct TreeBuilder {
  struct Item {
    bool node = false;
    TreeOp op = TreeOp::add;
    TreePostOp post = TreePostOp::none;
    int left = -1, right = -1;  // items, for a node
    int input = -1;             // for a leaf: the input, or -1 for the constant
    double constant = 0;
  };
  const FusedProgram& program;
  std::vector<int> producer;  // step writing each register, -1 for inputs
  std::vector<Item> items;
  int nodes = 0;
  size_t steps_used = 0;

  // The item computing register r, or -1 where the program is not a tree kernel's.
  int build(int r) {
    if (r < program.input_count) {
      items.push_back({false, TreeOp::add, TreePostOp::none, -1, -1, r, 0});
      return static_cast<int>(items.size()) - 1;
    }
    const FusedStep& step = program.steps[producer[r]];
    ++steps_used;
    if (const auto post = post_op(step.op)) {
      const int item = build(step.lhs);
      if (item < 0 || items[item].post != TreePostOp::none) return -1;
      items[item].post = *post;
      return item;
    }
    const auto op = tree_op(step.op);
    if (!op || step.alpha != 1.0 || ++nodes > kMaxNodes) return -1;  // alpha takes an fma: not here
    const int left = build(step.lhs);
    if (left < 0) return -1;
    int right;
    if (step.rhs >= 0) {
      right = build(step.rhs);
    } else {
      items.push_back({false, TreeOp::add, TreePostOp::none, -1, -1, -1, step.scalar});
      right = static_cast<int>(items.size()) - 1;
    }
    if (right < 0) return -1;
    items.push_back({true, *op, TreePostOp::none, left, right, -1, 0});
    return static_cast<int>(items.size()) - 1;
  }

  // Writes item's subtree in pre-order into the kernel; `position` is the next code position.
  void emit(int item, TreeKernel& kernel, int& position) {
    const Item& it = items[item];
    kernel.has_post = kernel.has_post || it.post != TreePostOp::none;
    if (it.node) {
      kernel.shape |= uint32_t{1} << position;
      kernel.nodes[kernel.node_count++] = {it.op, it.post};
      ++position;
      emit(it.left, kernel, position);
      emit(it.right, kernel, position);
    } else {
      kernel.leaves[kernel.leaf_count++] = {it.input, it.constant, it.post};
      ++position;
    }
  }
};

template <class C>
void run_typed(const TreeKernel& kernel, const tensor_list& inputs, const Tensor& output, bool stream) {
  alignas(kVectorBytes) C constants[kMaxLeaves][kBlockElements<C>];
  TreeArgs<C> args;
  for (int k = 0; k < kernel.node_count; ++k) {
    args.ops[k] = kernel.nodes[k].op;
    args.node_posts[k] = kernel.nodes[k].post;
  }
  for (int k = 0; k < kernel.leaf_count; ++k) args.leaf_posts[k] = kernel.leaves[k].post;
  for (int k = 0; k < kernel.leaf_count; ++k) {
    const TreeLeaf& leaf = kernel.leaves[k];
    if (leaf.input >= 0) {
      args.leaves[k] = static_cast<const C*>(inputs[leaf.input].data_ptr());
      args.steps[k] = 1;
    } else {
      std::fill(std::begin(constants[k]), std::end(constants[k]), static_cast<C>(leaf.constant));
      args.leaves[k] = constants[k];
      args.steps[k] = 0;
    }
  }
  const RangeFn<C> fn = kernel.has_post ? kKernels<C, true>[kernel.shape] : kKernels<C, false>[kernel.shape];
  C* out = static_cast<C*>(output.data_ptr());
  // The chunks of the eager kernels, as the executor uses (Note [Matching eager bit for bit]).
  ::strata::detail::run_chunked(inputs[0].numel(),
                                [&](int64_t begin, int64_t end) { fn(args, out, begin, end, stream); });
}

}  // namespace

std::optional<TreeKernel> make_tree_kernel(const FusedProgram& program) {
  if (program.outputs.size() != 1 || program.outputs[0] < program.input_count) return std::nullopt;
  if (program.dtype != kFloat32 && program.dtype != kFloat64) return std::nullopt;
  // A tree reads each intermediate register once; the output is read by no step.
  std::vector<int> reads(program.register_count, 0);
  for (const FusedStep& step : program.steps) {
    ++reads[step.lhs];
    if (step.rhs >= 0) ++reads[step.rhs];
  }
  for (int r = program.input_count; r < program.register_count; ++r)
    if (reads[r] != (r == program.outputs[0] ? 0 : 1)) return std::nullopt;
  TreeBuilder builder{program, std::vector<int>(program.register_count, -1), {}, 0, 0};
  for (size_t i = 0; i < program.steps.size(); ++i) builder.producer[program.steps[i].out] = static_cast<int>(i);
  const int root = builder.build(program.outputs[0]);
  if (root < 0 || builder.steps_used != program.steps.size()) return std::nullopt;
  TreeKernel kernel;
  int length = 0;
  builder.emit(root, kernel, length);
  kernel.shape |= uint32_t{1} << length;
  STRATA_INTERNAL_ASSERT(is_shape(kernel.shape), "make_tree_kernel: bad shape code");
  return kernel;
}

void run_tree_kernel(const TreeKernel& kernel, const tensor_list& inputs, const Tensor& output, bool stream) {
  if (output.numel() == 0) return;
  if (output.dtype() == kFloat32) run_typed<float>(kernel, inputs, output, stream);
  else run_typed<double>(kernel, inputs, output, stream);
}

}  // namespace strata::jit::detail
