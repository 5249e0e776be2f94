// Tests for jit/fusion.cpp: the fused elementwise executor against the eager ops, bit for bit,
// across dtypes, sizes around the tile and thread-chunk boundaries, special values, programs
// with several outputs, and its errors.
#include "../test_util.h"

#include <strata/jit/fusion.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <cstdint>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace strata;
using strata::jit::detail::CodegenMode;
using strata::jit::detail::CodegenModeGuard;
using strata::jit::detail::FusedOp;
using strata::jit::detail::FusedProgram;
using strata::jit::detail::FusedStep;
using strata::jit::detail::fused_op_for;
using strata::jit::detail::PreparedFusedProgram;
using strata::jit::detail::run_fused;
using strata::testing::expect_error;

namespace {

constexpr int64_t kTile = 64;            // kTileElements in jit/fusion.cpp
constexpr int64_t kCachedTile = 1024;     // kCachedTileElements: tiles when everything fits in cache
constexpr int64_t kGrain = 32768;  // kDefaultGrainSize: the eager chunking

// n values of `dtype`: mostly moderate values of both signs, with zeros, -0, large
// magnitudes, infinities and NaN sprinkled in when `specials` (deterministic per seed).
Tensor make_values(int64_t n, ScalarType dtype, uint64_t seed, bool specials = true) {
  Tensor t = detail::make_empty({n}, kFloat64, kCPU);
  double* data = t.data_ptr<double>();
  uint64_t state = seed * 6364136223846793005ULL + 1442695040888963407ULL;
  const double inf = std::numeric_limits<double>::infinity();
  const double special[] = {0.0, -0.0, inf, -inf, std::nan(""), 1e30, -1e30, 100.0, -100.0, 1e-30};
  for (int64_t i = 0; i < n; ++i) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    const uint64_t bits = state >> 11;
    const double unit = static_cast<double>(bits) / static_cast<double>(uint64_t{1} << 53);  // [0, 1)
    if (specials && (bits & 31) == 0) data[i] = special[(bits >> 5) % 10];
    else data[i] = (unit - 0.5) * 12.0;  // [-6, 6): where tanh, exp and sigmoid do real work
  }
  return t.to(kCPU, dtype);
}

// Note [NaN bits in fused results]
// The results must be the eager ops' bits, except which NaN comes out of an add or mul of two
// NaNs: x86 returns the first operand's NaN, and the compiler may swap the operands of a
// commutative op in one loop and not in another (eager's own vector body and scalar tail may
// differ too). So two NaNs compare equal whatever their sign and payload.
template <class C, class Bits>
int64_t first_difference_of(const Tensor& a, const Tensor& b) {
  const C* p = a.data_ptr<C>();
  const C* q = b.data_ptr<C>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    Bits x, y;
    std::memcpy(&x, p + i, sizeof(C));
    std::memcpy(&y, q + i, sizeof(C));
    if (x != y && !(std::isnan(p[i]) && std::isnan(q[i]))) return i;
  }
  return -1;
}

// The first element whose bits differ (See Note [NaN bits in fused results]), or -1.
int64_t first_difference(const Tensor& a, const Tensor& b) {
  REQUIRE(a.sizes() == b.sizes());
  REQUIRE(a.dtype() == b.dtype());
  const Tensor x = a.contiguous(), y = b.contiguous();
  if (x.dtype() == kFloat32) return first_difference_of<float, uint32_t>(x, y);
  return first_difference_of<double, uint64_t>(x, y);
}

bool same_bits(const Tensor& a, const Tensor& b) { return first_difference(a, b) < 0; }

// Element i of t with its bits, for messages.
std::string describe(const Tensor& t, int64_t i) {
  std::ostringstream out;
  if (t.dtype() == kFloat32) {
    uint32_t bits;
    std::memcpy(&bits, t.data_ptr<float>() + i, sizeof(bits));
    out << t.data_ptr<float>()[i] << " (0x" << std::hex << bits << ")";
  } else {
    uint64_t bits;
    std::memcpy(&bits, t.data_ptr<double>() + i, sizeof(bits));
    out << t.data_ptr<double>()[i] << " (0x" << std::hex << bits << ")";
  }
  return out.str();
}

// The program run as eager ops, one by one: the reference.
tensor_list run_eager(const FusedProgram& program, const tensor_list& inputs) {
  tensor_list registers(program.register_count);
  for (int r = 0; r < program.input_count; ++r) registers[r] = inputs[r];
  for (const FusedStep& step : program.steps) {
    const Tensor& x = registers[step.lhs];
    const Tensor y = step.rhs >= 0 ? registers[step.rhs] : Tensor();
    Tensor& out = registers[step.out];
    switch (step.op) {
      case FusedOp::Add: out = add(x, y, step.alpha); break;
      case FusedOp::Sub: out = sub(x, y, step.alpha); break;
      case FusedOp::Mul: out = mul(x, y); break;
      case FusedOp::Div: out = div(x, y); break;
      case FusedOp::AddScalar: out = add(x, Scalar(step.scalar), step.alpha); break;
      case FusedOp::SubScalar: out = sub(x, Scalar(step.scalar), step.alpha); break;
      case FusedOp::MulScalar: out = mul(x, Scalar(step.scalar)); break;
      case FusedOp::DivScalar: out = div(x, Scalar(step.scalar)); break;
      case FusedOp::Neg: out = neg(x); break;
      case FusedOp::Exp: out = exp(x); break;
      case FusedOp::Log: out = log(x); break;
      case FusedOp::Sqrt: out = sqrt(x); break;
      case FusedOp::Tanh: out = tanh(x); break;
      case FusedOp::Sigmoid: out = sigmoid(x); break;
      case FusedOp::Relu: out = relu(x); break;
      case FusedOp::Abs: out = abs(x); break;
      case FusedOp::Sin: out = sin(x); break;
      case FusedOp::Cos: out = cos(x); break;
    }
  }
  tensor_list outputs;
  for (int r : program.outputs) outputs.push_back(registers[r]);
  return outputs;
}

// Runs the program fused and eagerly on fresh inputs of n elements and requires the same bits.
// Runs with generated kernels off unless `mode` says otherwise: the executor and the tree
// kernels are what most cases test (Note [Generated kernels] has cases of its own below).
void check_matches_eager(const FusedProgram& program, int64_t n, uint64_t seed = 1, bool specials = true,
                         CodegenMode mode = CodegenMode::off) {
  const CodegenModeGuard codegen(mode);
  tensor_list inputs;
  for (int i = 0; i < program.input_count; ++i) inputs.push_back(make_values(n, program.dtype, seed + i, specials));
  const tensor_list expected = run_eager(program, inputs);
  const tensor_list actual = run_fused(program, inputs);
  REQUIRE(actual.size() == expected.size());
  for (size_t k = 0; k < actual.size(); ++k) {
    const int64_t at = first_difference(actual[k], expected[k]);
    INFO("dtype " << program.dtype << ", n = " << n << ", output " << k << ", first difference at " << at
                  << (at >= 0 ? ": " + describe(actual[k], at) + " against " + describe(expected[k], at) : ""));
    CHECK(same_bits(actual[k], expected[k]));
    CHECK(actual[k].is_contiguous());
  }
}

const FusedOp kUnaryOps[] = {FusedOp::Neg,     FusedOp::Exp,  FusedOp::Log, FusedOp::Sqrt, FusedOp::Tanh,
                             FusedOp::Sigmoid, FusedOp::Relu, FusedOp::Abs, FusedOp::Sin,  FusedOp::Cos};

// One program with every op: unary ops on a, the binary ops on (a, b), scalar ops with and
// without alpha; every intermediate result is an output.
FusedProgram every_op_program(ScalarType dtype) {
  FusedProgram program;
  program.input_count = 2;
  program.dtype = dtype;
  int next = 2;
  auto emit = [&](FusedStep step) {
    step.out = next++;
    program.steps.push_back(step);
    program.outputs.push_back(step.out);
  };
  for (FusedOp op : kUnaryOps) emit({op, 0});
  for (FusedOp op : {FusedOp::Add, FusedOp::Sub, FusedOp::Mul, FusedOp::Div}) emit({op, 0, 1});
  emit({FusedOp::Add, 0, 1, 0, 0.3});
  emit({FusedOp::Sub, 0, 1, 0, -2.5});
  emit({FusedOp::AddScalar, 0, -1, 0.1});
  emit({FusedOp::AddScalar, 0, -1, 0.1, 0.7});
  emit({FusedOp::SubScalar, 0, -1, 1e-3});
  emit({FusedOp::SubScalar, 0, -1, 3.0, 1.0 / 3.0});
  emit({FusedOp::MulScalar, 0, -1, 0.1});
  emit({FusedOp::DivScalar, 0, -1, 3.0});
  emit({FusedOp::DivScalar, 0, -1, 0.0});
  program.register_count = next;
  return program;
}

// Each Eigen-computed op into a register that lives in a scratch slot, then negated (exactly)
// into an output: the slot must round like eager's output tensor.
FusedProgram slot_program(ScalarType dtype) {
  FusedProgram program;
  program.input_count = 1;
  program.dtype = dtype;
  int next = 1;
  for (FusedOp op : {FusedOp::Exp, FusedOp::Log, FusedOp::Tanh, FusedOp::Sigmoid, FusedOp::Sin, FusedOp::Cos}) {
    program.steps.push_back({op, 0, -1, 0, 1, next});
    program.steps.push_back({FusedOp::Neg, next, -1, 0, 1, next + 1});
    program.outputs.push_back(next + 1);
    next += 2;
  }
  program.register_count = next;
  return program;
}

// y = tanh(y * 0.5 + 0.1), `rounds` times.
FusedProgram tanh_chain(ScalarType dtype, int rounds) {
  FusedProgram program;
  program.input_count = 1;
  program.dtype = dtype;
  int y = 0;
  for (int i = 0; i < rounds; ++i) {
    const int base = 1 + 3 * i;
    program.steps.push_back({FusedOp::MulScalar, y, -1, 0.5, 1, base});
    program.steps.push_back({FusedOp::AddScalar, base, -1, 0.1, 1, base + 1});
    program.steps.push_back({FusedOp::Tanh, base + 1, -1, 0, 1, base + 2});
    y = base + 2;
  }
  program.register_count = y + 1;
  program.outputs = {y};
  return program;
}

// a * b + c * d - e.
FusedProgram multiply_add_program(ScalarType dtype) {
  FusedProgram program;
  program.input_count = 5;
  program.register_count = 9;
  program.dtype = dtype;
  program.steps = {{FusedOp::Mul, 0, 1, 0, 1, 5},
                   {FusedOp::Mul, 2, 3, 0, 1, 6},
                   {FusedOp::Add, 5, 6, 0, 1, 7},
                   {FusedOp::Sub, 7, 4, 0, 1, 8}};
  program.outputs = {8};
  return program;
}

// Runs fn with `threads` threads, restoring the count afterwards.
template <class Fn>
void with_threads(int threads, Fn&& fn) {
  const int previous = get_num_threads();
  set_num_threads(threads);
  try {
    fn();
  } catch (...) {
    set_num_threads(previous);
    throw;
  }
  set_num_threads(previous);
}

}  // namespace

TEST_CASE("fusion: every op matches its eager kernel bit for bit") {
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{7}, int64_t{8}, int64_t{15}, int64_t{17}, int64_t{100},
                      kTile - 1, kTile, kTile + 1, 3 * kTile + 5, kCachedTile - 1, kCachedTile, kCachedTile + 1,
                      int64_t{2049}, 3 * kCachedTile + 5, kGrain - 1, kGrain + 1, int64_t{1000003}})
      for (const FusedProgram& program : {every_op_program(dtype), slot_program(dtype)})
        check_matches_eager(program, n, static_cast<uint64_t>(n) + 7);
  }
}

TEST_CASE("fusion: chains match the eager ops") {
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    for (int64_t n : {int64_t{1}, int64_t{8}, int64_t{100}, kTile + 1, int64_t{1000003}, int64_t{2097155}}) {
      check_matches_eager(multiply_add_program(dtype), n);
      check_matches_eager(tanh_chain(dtype, n <= 100 ? 100 : 3), n, 3);
    }
  }
}

TEST_CASE("fusion: chunks of several threads match the eager chunks") {
  // With several threads the eager kernels split the range at offsets that are not multiples
  // of a packet; the elements there take Eigen's scalar path, here as in eager.
  for (int threads : {2, 3, 5}) {
    with_threads(threads, [] {
      for (ScalarType dtype : {kFloat32, kFloat64})
        for (int64_t n : {2 * kGrain + 1, 3 * kGrain + 7, int64_t{1000003}})
          for (const FusedProgram& program : {every_op_program(dtype), slot_program(dtype)})
            check_matches_eager(program, n, static_cast<uint64_t>(n));
    });
  }
}

TEST_CASE("fusion: Scalar constants and alpha round as the eager conversion does") {
  // Integral Scalars reach the kernels through to_double(); 2^60 + 1 rounds twice on its way to float.
  const int64_t big = (int64_t{1} << 60) + 1;
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    const Tensor x = make_values(1000, dtype, 11);
    FusedProgram program;
    program.input_count = 1;
    program.register_count = 4;
    program.dtype = dtype;
    program.steps = {{FusedOp::MulScalar, 0, -1, Scalar(big).to_double(), 1, 1},
                     {FusedOp::AddScalar, 0, -1, Scalar(int64_t{3}).to_double(), Scalar(int64_t{2}).to_double(), 2},
                     {FusedOp::SubScalar, 0, -1, 0.1, 0.1, 3}};
    program.outputs = {1, 2, 3};
    const tensor_list actual = run_fused(program, {x});
    CHECK(same_bits(actual[0], mul(x, Scalar(big))));
    CHECK(same_bits(actual[1], add(x, Scalar(int64_t{3}), Scalar(int64_t{2}))));
    CHECK(same_bits(actual[2], sub(x, 0.1, 0.1)));
  }
}

TEST_CASE("fusion: outputs may repeat, name inputs, and be read by later steps") {
  FusedProgram program;
  program.input_count = 2;
  program.register_count = 5;
  program.dtype = kFloat32;
  program.steps = {{FusedOp::Add, 0, 1, 0, 1, 2}, {FusedOp::Exp, 2, -1, 0, 1, 3}, {FusedOp::Mul, 2, 3, 0, 1, 4}};
  program.outputs = {4, 2, 0, 2};
  for (int64_t n : {int64_t{5}, kTile + 3}) {
    check_matches_eager(program, n);
    const Tensor a = make_values(n, kFloat32, 1);
    const tensor_list outputs = run_fused(program, {a, make_values(n, kFloat32, 2)});
    CHECK(outputs[2].data_ptr() != a.data_ptr());  // an input comes back as a copy
    CHECK(outputs[1].data_ptr() != outputs[3].data_ptr());
  }
  program.outputs = {};
  CHECK(run_fused(program, {make_values(3, kFloat32, 1), make_values(3, kFloat32, 2)}).empty());
}

// Note [Prepared fused programs]: one check and one plan per program, for every later run.
TEST_CASE("fusion: a prepared program runs again and again as run_fused does") {
  const CodegenModeGuard codegen(CodegenMode::off);
  const PreparedFusedProgram prepared(multiply_add_program(kFloat32));
  CHECK(prepared.program().steps.size() == 4);
  // 8 MiB + 20 bytes per input: outputs from that size up are streamed out (kStreamBytes).
  const int64_t streamed = (int64_t{8} << 20) / 4 + 5;
  for (int64_t n : {int64_t{5}, kTile + 3, streamed, int64_t{7}}) {
    tensor_list inputs;
    for (int i = 0; i < 5; ++i) inputs.push_back(make_values(n, kFloat32, 20 + i));
    const Tensor expected = sub(add(mul(inputs[0], inputs[1]), mul(inputs[2], inputs[3])), inputs[4]);
    for (int run = 0; run < 2; ++run) {
      const tensor_list outputs = prepared.run(inputs);
      REQUIRE(outputs.size() == 1);
      CHECK(same_bits(outputs[0], expected));
    }
    CHECK(same_bits(run_fused(multiply_add_program(kFloat32), inputs)[0], expected));
  }
  tensor_list wrong_dtype;
  for (int i = 0; i < 5; ++i) wrong_dtype.push_back(make_values(4, i == 3 ? kFloat64 : kFloat32, i));
  expect_error<Error>([&] { prepared.run(wrong_dtype); }, "[jit::run_fused]", {"inputs[3]", "Float64"});
  FusedProgram bad = multiply_add_program(kFloat32);
  bad.steps[2].rhs = 12;
  expect_error<Error>([&] { PreparedFusedProgram{bad}; }, "[jit::run_fused]", {"steps[2]", "rhs = 12"});
}

TEST_CASE("fusion: outputs keep the inputs' shape") {
  const Tensor a = make_values(24, kFloat64, 1).reshape({2, 3, 4});
  FusedProgram program;
  program.input_count = 1;
  program.register_count = 2;
  program.dtype = kFloat64;
  program.steps = {{FusedOp::Sigmoid, 0, -1, 0, 1, 1}};
  program.outputs = {1};
  const Tensor out = run_fused(program, {a})[0];
  CHECK(out.sizes() == IntArrayRef({2, 3, 4}));
  CHECK(same_bits(out, sigmoid(a)));
  const Tensor empty_input = detail::make_empty({0, 3}, kFloat64, kCPU);
  CHECK(run_fused(program, {empty_input})[0].sizes() == IntArrayRef({0, 3}));
}

TEST_CASE("fusion: fused_op_for names the eager ops") {
  CHECK(fused_op_for("strata::add.Tensor") == FusedOp::Add);
  CHECK(fused_op_for("strata::sub.Scalar") == FusedOp::SubScalar);
  CHECK(fused_op_for("strata::div.Tensor") == FusedOp::Div);
  CHECK(fused_op_for("strata::tanh") == FusedOp::Tanh);
  CHECK(fused_op_for("strata::sigmoid") == FusedOp::Sigmoid);
  CHECK_FALSE(fused_op_for("strata::add_.Tensor").has_value());  // in place: not a pure op
  CHECK_FALSE(fused_op_for("strata::matmul").has_value());
  CHECK_FALSE(fused_op_for("tanh").has_value());
  CHECK_FALSE(fused_op_for("").has_value());
}

TEST_CASE("fusion: bad inputs are errors naming the argument") {
  const FusedProgram program = multiply_add_program(kFloat32);
  auto inputs = [](int64_t n) {
    tensor_list list;
    for (int i = 0; i < 5; ++i) list.push_back(make_values(n, kFloat32, i));
    return list;
  };
  tensor_list too_few = inputs(4);
  too_few.resize(3);
  expect_error<Error>([&] { run_fused(program, too_few); }, "[jit::run_fused]", {"expected 5 inputs", "got 3"});
  tensor_list wrong_dtype = inputs(4);
  wrong_dtype[2] = wrong_dtype[2].to(kCPU, kFloat64);
  expect_error<Error>([&] { run_fused(program, wrong_dtype); }, "[jit::run_fused]", {"inputs[2]", "Float64"});
  tensor_list wrong_shape = inputs(4);
  wrong_shape[4] = make_values(5, kFloat32, 9);
  expect_error<Error>([&] { run_fused(program, wrong_shape); }, "[jit::run_fused]", {"inputs[4]", "shape"});
  tensor_list strided;
  for (int i = 0; i < 5; ++i) strided.push_back(make_values(16, kFloat32, i).reshape({4, 4}));
  strided[1] = strided[1].t();
  expect_error<Error>([&] { run_fused(program, strided); }, "[jit::run_fused]", {"inputs[1]", "contiguous"});
  tensor_list undefined = inputs(4);
  undefined[0] = Tensor();
  expect_error<Error>([&] { run_fused(program, undefined); }, "[jit::run_fused]", {"inputs[0]", "undefined"});
}

TEST_CASE("fusion: bad programs are errors naming the step") {
  const tensor_list one = {make_values(4, kFloat32, 1)};
  FusedProgram program;
  program.input_count = 1;
  program.register_count = 2;
  program.dtype = kFloat32;
  program.outputs = {1};
  program.steps = {{FusedOp::Add, 0, 7, 0, 1, 1}};
  expect_error<Error>([&] { run_fused(program, one); }, "[jit::run_fused]", {"steps[0]", "add.Tensor", "rhs = 7"});
  program.steps = {{FusedOp::Exp, 1, -1, 0, 1, 1}};
  expect_error<Error>([&] { run_fused(program, one); }, "[jit::run_fused]", {"steps[0]", "lhs = 1"});
  program.steps = {{FusedOp::Exp, 0, 0, 0, 1, 1}};
  expect_error<Error>([&] { run_fused(program, one); }, "[jit::run_fused]", {"steps[0]", "rhs is 0"});
  program.steps = {{FusedOp::Exp, 0, -1, 0, 1, 0}};
  expect_error<Error>([&] { run_fused(program, one); }, "[jit::run_fused]", {"writes register 0"});
  program.steps = {{FusedOp::Exp, 0, -1, 0, 1, 1}, {FusedOp::Neg, 0, -1, 0, 1, 1}};
  expect_error<Error>([&] { run_fused(program, one); }, "[jit::run_fused]", {"steps[1]", "already wrote"});
  program.steps = {};
  expect_error<Error>([&] { run_fused(program, one); }, "[jit::run_fused]", {"program.outputs[0]"});
  program.steps = {{FusedOp::MulScalar, 0, -1, 1e300, 1, 1}};
  expect_error<ValueError>([&] { run_fused(program, one); }, "[jit::run_fused]", {"mul.Scalar", "overflow"});
  program.steps = {{FusedOp::Add, 0, 0, 0, -1e39, 1}};
  expect_error<ValueError>([&] { run_fused(program, one); }, "[jit::run_fused]", {"alpha", "overflow"});
  program.steps = {{FusedOp::Add, 0, 0, 0, std::numeric_limits<double>::infinity(), 1}};
  CHECK_NOTHROW(run_fused(program, one));  // inf converts, as in eager
  program.dtype = kInt64;
  expect_error<Error>([&] { run_fused(program, one); }, "[jit::run_fused]", {"program.dtype", "Int64"});
  program.dtype = kFloat32;
  program.input_count = 0;
  expect_error<Error>([&] { run_fused(program, {}); }, "[jit::run_fused]", {"input_count"});
}

// ---------------------------------------------------------------------------------------
// Tree kernels (Note [Tree kernels] in jit/fusion_tree.cpp).

namespace {

constexpr int64_t kTreeBlock = 128;  // floats per block of a tree kernel (64 doubles)

// Every tree shape with `nodes` binary ops, in pre-order: 'N' a binary op, 'L' a leaf.
std::vector<std::string> tree_shapes(int nodes) {
  if (nodes == 0) return {"L"};
  std::vector<std::string> shapes;
  for (int left = 0; left < nodes; ++left)
    for (const std::string& l : tree_shapes(left))
      for (const std::string& r : tree_shapes(nodes - 1 - left)) shapes.push_back("N" + l + r);
  return shapes;
}

// A program computing the tree `shape` over 3 inputs: each N is add, sub, mul or div; a right
// leaf is a Scalar constant now and then (the *Scalar op); unary ops (neg, abs, relu, sqrt) sit
// on some nodes and leaves when `unary`. Deterministic per seed.
FusedProgram tree_program(const std::string& shape, ScalarType dtype, uint64_t seed, bool unary) {
  FusedProgram program;
  program.input_count = 3;
  program.dtype = dtype;
  int next = 3;
  size_t position = 0;
  uint64_t state = seed * 2862933555777941757ULL + 3037000493ULL;
  auto random = [&state](uint64_t n) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % n;
  };
  auto maybe_unary = [&](int r) {
    if (!unary || random(3) != 0) return r;
    const FusedOp ops[] = {FusedOp::Neg, FusedOp::Abs, FusedOp::Relu, FusedOp::Sqrt};
    program.steps.push_back({ops[random(4)], r, -1, 0, 1, next});
    return next++;
  };
  // Emits the subtree at `position`; returns its register, or -1 for a constant leaf (only
  // asked for as a right operand, when `constant_ok`).
  std::function<int(bool, double&)> emit = [&](bool constant_ok, double& constant) -> int {
    const char symbol = shape[position++];
    if (symbol == 'L') {
      if (constant_ok && random(4) == 0) {
        const double constants[] = {0.5, -3.0, 0.0, 1e-3, 7.25};
        constant = constants[random(5)];
        return -1;
      }
      return maybe_unary(static_cast<int>(random(3)));
    }
    double unused = 0, right_constant = 0;
    const int lhs = emit(false, unused);
    const int rhs = emit(true, right_constant);
    const int op = static_cast<int>(random(4));
    FusedStep step;
    if (rhs >= 0) {
      const FusedOp ops[] = {FusedOp::Add, FusedOp::Sub, FusedOp::Mul, FusedOp::Div};
      step = {ops[op], lhs, rhs, 0, 1, next};
    } else {
      const FusedOp ops[] = {FusedOp::AddScalar, FusedOp::SubScalar, FusedOp::MulScalar, FusedOp::DivScalar};
      step = {ops[op], lhs, -1, right_constant, 1, next};
    }
    program.steps.push_back(step);
    return maybe_unary(next++);
  };
  double unused = 0;
  program.outputs = {emit(false, unused)};
  program.register_count = next;
  return program;
}

}  // namespace

TEST_CASE("fusion: tree kernels are used for trees of exactly rounded ops, and only for them") {
  CHECK(PreparedFusedProgram(multiply_add_program(kFloat32)).uses_tree_kernel());
  CHECK(PreparedFusedProgram(multiply_add_program(kFloat64)).uses_tree_kernel());
  CHECK_FALSE(PreparedFusedProgram(tanh_chain(kFloat32, 1)).uses_tree_kernel());  // tanh is Eigen's
  CHECK_FALSE(PreparedFusedProgram(every_op_program(kFloat32)).uses_tree_kernel());  // many outputs
  FusedProgram program = multiply_add_program(kFloat32);
  program.steps[2].alpha = 2;  // alpha takes an fma
  CHECK_FALSE(PreparedFusedProgram(program).uses_tree_kernel());
  program = multiply_add_program(kFloat32);
  program.steps[3] = {FusedOp::Sub, 7, 5, 0, 1, 8};  // a * b read twice: not a tree
  CHECK_FALSE(PreparedFusedProgram(program).uses_tree_kernel());
  program = multiply_add_program(kFloat32);
  program.steps.push_back({FusedOp::Mul, 8, 0, 0, 1, 9});  // five binary ops
  program.register_count = 10;
  program.outputs = {9};
  CHECK_FALSE(PreparedFusedProgram(program).uses_tree_kernel());
  program.outputs = {8};  // the fifth is then dead: still not a tree kernel's program
  CHECK_FALSE(PreparedFusedProgram(program).uses_tree_kernel());
  // Unary ops: one on a leaf and one on a node fit; two in a row do not.
  program = multiply_add_program(kFloat32);
  program.steps = {{FusedOp::Abs, 0, -1, 0, 1, 5}, {FusedOp::Mul, 5, 1, 0, 1, 6}, {FusedOp::Relu, 6, -1, 0, 1, 7}};
  program.register_count = 8;
  program.outputs = {7};
  CHECK(PreparedFusedProgram(program).uses_tree_kernel());
  check_matches_eager(program, 1000);
  program.steps.push_back({FusedOp::Sqrt, 7, -1, 0, 1, 8});
  program.register_count = 9;
  program.outputs = {8};
  CHECK_FALSE(PreparedFusedProgram(program).uses_tree_kernel());
  check_matches_eager(program, 1000);
  program.outputs = {0};  // an input returned: a copy
  CHECK_FALSE(PreparedFusedProgram(program).uses_tree_kernel());
}

TEST_CASE("fusion: every tree shape matches the eager ops bit for bit") {
  int shapes = 0;
  for (int nodes = 1; nodes <= 4; ++nodes) {
    for (const std::string& shape : tree_shapes(nodes)) {
      ++shapes;
      for (ScalarType dtype : {kFloat32, kFloat64}) {
        for (uint64_t seed : {uint64_t{1}, uint64_t{2}, uint64_t{3}}) {
          const FusedProgram program = tree_program(shape, dtype, seed * 31 + shapes, seed != 1);
          INFO("shape " << shape << ", seed " << seed);
          REQUIRE(PreparedFusedProgram(program).uses_tree_kernel());
          for (int64_t n : {int64_t{1}, int64_t{7}, kTreeBlock / 2 - 1, kTreeBlock - 1, kTreeBlock, kTreeBlock + 1,
                            3 * kTreeBlock + 17})
            check_matches_eager(program, n, seed + static_cast<uint64_t>(n));
        }
      }
    }
  }
  CHECK(shapes == 1 + 2 + 5 + 14);
}

TEST_CASE("fusion: tree kernels match eager across thread chunks and streamed outputs") {
  // Chunks that start inside a block, as several threads give them.
  with_threads(3, [] {
    for (ScalarType dtype : {kFloat32, kFloat64})
      for (const std::string& shape : {std::string("NNLLNLL"), std::string("NLNLNLNLL")})
        check_matches_eager(tree_program(shape, dtype, 5, true), 3 * kGrain + 7, 11);
  });
  // Outputs of 8 MiB and more are written with streaming stores, with inputs prefetched.
  const int64_t streamed = (int64_t{8} << 20) / 4 + 37;
  check_matches_eager(multiply_add_program(kFloat32), streamed, 4);
  check_matches_eager(tree_program("NNLLNLL", kFloat32, 9, true), streamed, 6);
}

// ---------------------------------------------------------------------------------------
// Generated kernels (Note [Generated kernels] in jit/fusion_codegen.cpp, Note [Kernel cache]
// in jit/kernel_compiler.cpp). These compile with the machine's C++ compiler into a fresh
// cache folder.

namespace {

using strata::jit::detail::generate_kernel_source;
using strata::jit::detail::GeneratedKernel;
using strata::jit::detail::load_generated_kernel;
using strata::jit::detail::use_generated_kernel;
using strata::testing::EnvironmentScope;
using strata::testing::TemporaryKernelCache;

// Every exactly rounded op, alpha and constants of every kind included, over a DAG with
// several outputs (one of them an input, one repeated).
FusedProgram exact_op_program(ScalarType dtype) {
  FusedProgram program;
  program.input_count = 3;
  program.dtype = dtype;
  int next = 3;
  auto emit = [&](FusedStep step) {
    step.out = next++;
    program.steps.push_back(step);
    return step.out;
  };
  const double inf = std::numeric_limits<double>::infinity();
  const int sum = emit({FusedOp::Add, 0, 1});
  const int scaled = emit({FusedOp::Add, sum, 2, 0, 0.3});
  const int difference = emit({FusedOp::Sub, scaled, sum, 0, -2.5});
  const int product = emit({FusedOp::Mul, difference, sum});
  const int quotient = emit({FusedOp::Div, product, 1});
  const int shifted = emit({FusedOp::AddScalar, quotient, -1, 0.1, 0.7});
  const int lowered = emit({FusedOp::SubScalar, shifted, -1, 1e-3});
  const int tilted = emit({FusedOp::SubScalar, lowered, -1, 3.0, 1.0 / 3.0});
  const int tenth = emit({FusedOp::MulScalar, tilted, -1, 0.1});
  const int by_zero = emit({FusedOp::DivScalar, tenth, -1, -0.0});
  const int plus_inf = emit({FusedOp::AddScalar, 0, -1, inf});
  const int nan = emit({FusedOp::MulScalar, 1, -1, std::nan("")});
  const int negated = emit({FusedOp::Neg, by_zero});
  const int magnitude = emit({FusedOp::Abs, negated});
  const int rectified = emit({FusedOp::Relu, difference});
  const int root = emit({FusedOp::Sqrt, magnitude});
  // The unary ops on an input, where -0, NaN and infinities come in.
  const int input_rectified = emit({FusedOp::Relu, 0});
  const int input_magnitude = emit({FusedOp::Abs, 1});
  const int input_root = emit({FusedOp::Sqrt, 2});
  const int input_negated = emit({FusedOp::Neg, 0});
  program.register_count = next;
  program.outputs = {root, rectified, sum, 2, plus_inf, nan, root, quotient,
                     input_rectified, input_magnitude, input_root, input_negated};
  return program;
}

}  // namespace

TEST_CASE("fusion: generated kernel sources exist for programs of exactly rounded ops only") {
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    const std::optional<std::string> source = generate_kernel_source(multiply_add_program(dtype));
    REQUIRE(source.has_value());
    CHECK(source->find("const T r8 = r7 - r4;") != std::string::npos);
    CHECK(source->find(dtype == kFloat32 ? "typedef float C;" : "typedef double C;") != std::string::npos);
    CHECK(generate_kernel_source(exact_op_program(dtype)).has_value());
    CHECK_FALSE(generate_kernel_source(every_op_program(dtype)).has_value());  // exp, tanh...: Eigen's
    CHECK_FALSE(generate_kernel_source(tanh_chain(dtype, 2)).has_value());
  }
  // Constants are written as their bits: 0.1 as a float is 0x3dcccccd.
  FusedProgram program = multiply_add_program(kFloat32);
  program.steps[3] = {FusedOp::MulScalar, 7, -1, 0.1, 1, 8};
  CHECK(generate_kernel_source(program)->find("r7 * bits(0x3dcccccdu)") != std::string::npos);
  const CodegenModeGuard codegen(CodegenMode::large);  // outputs of 1 MiB and more
  CHECK_FALSE(use_generated_kernel((int64_t{1} << 18) - 1, kFloat32));
  CHECK(use_generated_kernel(int64_t{1} << 18, kFloat32));
  CHECK(use_generated_kernel(int64_t{1} << 17, kFloat64));
  set_codegen_mode(CodegenMode::off);
  CHECK_FALSE(use_generated_kernel(int64_t{1} << 30, kFloat32));
  set_codegen_mode(CodegenMode::always);
  CHECK(use_generated_kernel(1, kFloat64));
}

TEST_CASE("fusion: generated kernels match the eager ops bit for bit") {
  const TemporaryKernelCache cache;
  const CodegenModeGuard codegen(CodegenMode::always);
  for (ScalarType dtype : {kFloat32, kFloat64}) {
    for (const FusedProgram& program : {exact_op_program(dtype), multiply_add_program(dtype)}) {
      REQUIRE(PreparedFusedProgram(program).uses_generated_kernel(1));
      for (int64_t n : {int64_t{1}, int64_t{7}, kTreeBlock - 1, kTreeBlock, kTreeBlock + 1, 3 * kTreeBlock + 17,
                        kGrain + 1})
        check_matches_eager(program, n, static_cast<uint64_t>(n) + 3, true, CodegenMode::always);
    }
  }
  // Chunks that start inside a block, and streamed outputs (8 MiB and more).
  with_threads(3, [] {
    check_matches_eager(exact_op_program(kFloat32), 3 * kGrain + 7, 11, true, CodegenMode::always);
  });
  const int64_t streamed = (int64_t{8} << 20) / 4 + 37;
  check_matches_eager(multiply_add_program(kFloat32), streamed, 4, true, CodegenMode::always);
  // Inputs that start off a vector boundary: contiguous views one element in.
  tensor_list inputs;
  for (int i = 0; i < 5; ++i) inputs.push_back(make_values(streamed + 1, kFloat32, 30 + i).narrow(0, 1, streamed));
  const Tensor expected = sub(add(mul(inputs[0], inputs[1]), mul(inputs[2], inputs[3])), inputs[4]);
  CHECK(same_bits(run_fused(multiply_add_program(kFloat32), inputs)[0], expected));
  // One compiled kernel per program and dtype, nothing else left in the folder.
  int libraries = 0;
  for (const std::string& name : cache.files()) {
    INFO(name);
    const bool library = name.size() > 3 && name.compare(name.size() - 3, 3, ".so") == 0;
    CHECK((library || name.compare(name.size() - 4, 4, ".cpp") == 0));
    CHECK(std::count(name.begin(), name.end(), '.') == 1);  // no temporary names left
    libraries += library ? 1 : 0;
  }
  CHECK(libraries == 4);
}

TEST_CASE("fusion: generated kernels are cached in the process and on disk") {
  const TemporaryKernelCache cache;
  const std::string source = *generate_kernel_source(multiply_add_program(kFloat64));
  std::shared_ptr<const GeneratedKernel> kernel = load_generated_kernel(source);
  REQUIRE(kernel != nullptr);
  CHECK(load_generated_kernel(source) == kernel);  // this process's copy
  const std::filesystem::path library = kernel->path;
  CHECK(library.parent_path() == cache.folder);
  const auto written = std::filesystem::last_write_time(library);
  kernel.reset();  // closed: the next load opens the file again, without compiling
  kernel = load_generated_kernel(source);
  REQUIRE(kernel != nullptr);
  CHECK(std::filesystem::last_write_time(library) == written);
  // The kernel computes what the program does.
  tensor_list inputs;
  for (int i = 0; i < 5; ++i) inputs.push_back(make_values(1000, kFloat64, 40 + i));
  const Tensor output = detail::make_empty({1000}, kFloat64, kCPU);
  jit::detail::run_generated_kernel(*kernel, inputs, {output}, false);
  CHECK(same_bits(output, sub(add(mul(inputs[0], inputs[1]), mul(inputs[2], inputs[3])), inputs[4])));
}

TEST_CASE("fusion: without a working compiler a program runs as before") {
  const TemporaryKernelCache cache;
  const CodegenModeGuard codegen(CodegenMode::always);
  FusedProgram program = multiply_add_program(kFloat32);
  program.steps[0] = {FusedOp::Mul, 0, 1, 0, 1, 5};
  program.steps[3] = {FusedOp::Sub, 7, 4, 0, 1, 8};
  {
    const EnvironmentScope compiler("STRATA_JIT_CXX", "/nonexistent/strata-test-c++");
    const PreparedFusedProgram prepared(program);
    CHECK_FALSE(prepared.uses_generated_kernel(1000));
    CHECK(prepared.uses_tree_kernel());
    check_matches_eager(program, 1000, 5, true, CodegenMode::always);
  }
  {
    // A compiler that fails: the program still runs, and the compiler's output is kept.
    program.steps[1] = {FusedOp::Div, 2, 3, 0, 1, 6};  // another program: another cache key
    const EnvironmentScope compiler("STRATA_JIT_CXX", "false");
    CHECK_FALSE(PreparedFusedProgram(program).uses_generated_kernel(1000));
    check_matches_eager(program, 1000, 6, true, CodegenMode::always);
    const std::vector<std::string> files = cache.files();
    CHECK(std::any_of(files.begin(), files.end(), [](const std::string& name) {
      return name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0;
    }));
  }
  {
    // A cache folder others may write to is not loaded from (nor compiled into).
    program.steps[2] = {FusedOp::Mul, 5, 6, 0, 1, 7};
    std::filesystem::permissions(cache.folder, std::filesystem::perms::all);
    CHECK_FALSE(PreparedFusedProgram(program).uses_generated_kernel(1000));
    check_matches_eager(program, 1000, 7, true, CodegenMode::always);
    std::filesystem::permissions(cache.folder, std::filesystem::perms::owner_all);
    CHECK(load_generated_kernel(*generate_kernel_source(program)) == nullptr);  // a failure is not tried again
  }
}

TEST_CASE("fusion: a compiler that hangs is stopped with its subprocesses") {
  const TemporaryKernelCache cache;
  const CodegenModeGuard codegen(CodegenMode::always);
  // A "compiler" that starts a long sleep, notes its pid and waits for it.
  const std::filesystem::path script = cache.folder.string() + "-hang.sh";
  const std::filesystem::path pid_file = cache.folder.string() + "-hang.pid";
  {
    std::ofstream file(script);
    file << "#!/bin/sh\nsleep 60 &\necho $! > '" << pid_file.string() << "'\nwait\n";
  }
  std::filesystem::permissions(script, std::filesystem::perms::owner_all);
  FusedProgram program = multiply_add_program(kFloat32);
  program.steps[0] = {FusedOp::Mul, 0, 1, 0, 1, 5};
  program.steps[1] = {FusedOp::Sub, 2, 3, 0, 1, 6};  // a program no other case compiles
  {
    const EnvironmentScope compiler("STRATA_JIT_CXX", script.c_str());
    const EnvironmentScope timeout("STRATA_JIT_COMPILE_TIMEOUT", "0.5");
    const auto start = std::chrono::steady_clock::now();
    CHECK_FALSE(PreparedFusedProgram(program).uses_generated_kernel(1000));
    // Stopped at the timeout, not after the sleep (a bound far from both).
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(30));
    check_matches_eager(program, 1000, 9, true, CodegenMode::always);
  }
  // The sleep was in the compiler's process group: it is gone (or a zombie awaiting its reaper).
  std::ifstream pid_text(pid_file);
  long pid = 0;
  REQUIRE(static_cast<bool>(pid_text >> pid));
  bool gone = false;
  for (int attempt = 0; attempt < 100 && !gone; ++attempt) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    gone = !std::getline(stat, line) || line.find(") Z") != std::string::npos;
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(gone);
  std::error_code ignored;
  std::filesystem::remove(script, ignored);
  std::filesystem::remove(pid_file, ignored);
}
