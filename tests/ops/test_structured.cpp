// The structured registration form (ops/structured.h): derived Meta kernels, in-place and out=
// variants made from one shape function and one compute function, and the registry rule that
// every built-in Meta kernel is derived.
#include "../test_util.h"

#include <strata/ops/structured.h>

using namespace strata;
using strata::testing::expect_error;

namespace {

// A user-defined structured op: scaled_add(a, b, s) = a + s * b with broadcasting.
TensorMeta scaled_add_shape(const Tensor& a, const Tensor& b, double) {
  detail::check_same_device("scaled_add", a, b);
  return {broadcast_shapes(a.sizes(), b.sizes(), "scaled_add"), result_type(a, b), a.device()};
}
TensorMeta scaled_add_in_place_shape(const Tensor& a, const Tensor& b, double s) { return scaled_add_shape(a, b, s); }

int compute_calls = 0;
void scaled_add_compute(const Tensor& out, const Tensor& a, const Tensor& b, double s) {
  ++compute_calls;
  // Reference compute through public ops, written into whatever `out` the framework gives.
  const Tensor value = add(a, b, s).to(out.dtype());
  detail::copy_kernel(out, value);
}

// Two outputs: (a + b, a - b).
std::array<TensorMeta, 2> sum_diff_shape(const Tensor& a, const Tensor& b) {
  const TensorMeta meta = scaled_add_shape(a, b, 1.0);
  return {meta, meta};
}
void sum_diff_compute(const Tensor& sum, const Tensor& diff, const Tensor& a, const Tensor& b) {
  detail::copy_kernel(sum, add(a, b));
  detail::copy_kernel(diff, sub(a, b));
}

struct StructuredOps {
  Library def{"structured_test", Library::DEF};
  Library cpu{"structured_test", Library::IMPL, DispatchKey::CPU};
  StructuredOps() {
    detail::def_structured<&scaled_add_shape>(def, "scaled_add(Tensor a, Tensor b, float s) -> Tensor");
    detail::def_structured_in_place<&scaled_add_in_place_shape, "scaled_add_">(
        def, "scaled_add_(Tensor(a!) a, Tensor b, float s) -> Tensor(a!)");
    detail::def_structured_out<&scaled_add_shape, "scaled_add.out">(
        def, "scaled_add.out(Tensor a, Tensor b, float s, *, Tensor(a!) out) -> Tensor(a!)");
    detail::def_structured<&sum_diff_shape>(def, "sum_diff(Tensor a, Tensor b) -> (Tensor, Tensor)");
    cpu.impl("scaled_add", detail::structured<&scaled_add_shape, &scaled_add_compute>());
    cpu.impl("scaled_add_", detail::structured_in_place<&scaled_add_in_place_shape, &scaled_add_compute, "scaled_add_">());
    cpu.impl("scaled_add.out", detail::structured_out<&scaled_add_shape, &scaled_add_compute, "scaled_add.out">());
    cpu.impl("sum_diff", detail::structured<&sum_diff_shape, &sum_diff_compute>());
  }
};

Tensor scaled_add(const Tensor& a, const Tensor& b, double s) {
  return find_op("structured_test::scaled_add").typed<Tensor(const Tensor&, const Tensor&, double)>().call(a, b, s);
}
Tensor scaled_add_(const Tensor& a, const Tensor& b, double s) {
  return find_op("structured_test::scaled_add_").typed<Tensor(const Tensor&, const Tensor&, double)>().call(a, b, s);
}
Tensor scaled_add_out(const Tensor& out, const Tensor& a, const Tensor& b, double s) {
  return find_op("structured_test::scaled_add.out")
      .typed<Tensor(const Tensor&, const Tensor&, double, const Tensor&)>()
      .call(a, b, s, out);
}

}  // namespace

TEST_CASE("structured: the functional kernel runs shape, allocation and compute; Meta is derived") {
  StructuredOps ops;
  const Tensor a = tensor({{1.0f, 2.0f}, {3.0f, 4.0f}}), b = tensor({10.0f, 20.0f});
  compute_calls = 0;
  const Tensor y = scaled_add(a, b, 0.5);
  CHECK(compute_calls == 1);
  CHECK(equal(y, tensor({{6.0f, 12.0f}, {8.0f, 14.0f}})));
  const Tensor m = scaled_add(empty({2, 2}, kMeta), empty({2}, kMeta), 0.5);
  CHECK(compute_calls == 1);  // Meta runs the shape function only
  CHECK(m.is_meta());
  CHECK(m.sizes() == IntArrayRef{2, 2});
  CHECK(m.dtype() == kFloat32);
  // The shape function's checks run on every backend, Meta included, with its messages.
  expect_error<ValueError>([] { (void)scaled_add(empty({2, 3}, kMeta), empty({4}, kMeta), 1.0); },
                           "[scaled_add] shapes");
  expect_error<Error>([&] { (void)scaled_add(a, empty({2}, kMeta), 1.0); }, "[scaled_add] expected all tensors on");
  CHECK(detail::has_derived_meta("structured_test::scaled_add"));
}

TEST_CASE("structured: several outputs") {
  StructuredOps ops;
  auto op = find_op("structured_test::sum_diff").typed<std::tuple<Tensor, Tensor>(const Tensor&, const Tensor&)>();
  auto [sum, diff] = op.call(tensor({5.0, 7.0}), tensor({1.0, 2.0}));
  CHECK(equal(sum, tensor({6.0, 9.0})));
  CHECK(equal(diff, tensor({4.0, 5.0})));
  auto [meta_sum, meta_diff] = op.call(empty({3, 1}, kMeta), empty({4}, kMeta));
  CHECK(meta_sum.sizes() == IntArrayRef{3, 4});
  CHECK(meta_diff.is_meta());
}

TEST_CASE("structured: in-place variants write self, cast, and check fit and overlap") {
  StructuredOps ops;
  Tensor a = tensor({1.0f, 2.0f});
  const uint32_t version = a.version();
  scaled_add_(a, tensor({1.0f, 1.0f}), 2.0);
  CHECK(equal(a, tensor({3.0f, 4.0f})));
  CHECK(a.version() == version + 1);
  // Computed in float64 (the promoted dtype), stored into float32 self.
  scaled_add_(a, tensor({0.5, 0.5}), 1.0);
  CHECK(equal(a, tensor({3.5f, 4.5f})));
  // A non-contiguous self (a column of a matrix).
  Tensor m = zeros({2, 2});
  scaled_add_(m.select(1, 1), tensor({1.0f, 2.0f}), 1.0);
  CHECK(equal(m, tensor({{0.0f, 1.0f}, {0.0f, 2.0f}})));
  Tensor i = tensor({1, 2});
  expect_error<Error>([&] { scaled_add_(i, tensor({1.0f, 1.0f}), 1.0); },
                      "[scaled_add_] result type Float32 can't be cast to the desired output type Int64");
  expect_error<ValueError>([&] { scaled_add_(a, zeros({2, 2}), 1.0); },
                           "[scaled_add_] output with shape [2] doesn't match the broadcast shape [2, 2]");
  expect_error<Error>([] { scaled_add_(zeros({1}).expand({3}), ones({3}), 1.0); }, "[scaled_add_] unsupported");
  Tensor x = zeros({3});
  expect_error<Error>([&] { scaled_add_(x.slice(0, 1), x.slice(0, 0, 2), 1.0); }, "[scaled_add_] unsupported",
                      {"clone()"});
  Tensor meta = empty({2}, kMeta);
  CHECK(scaled_add_(meta, empty({2}, kMeta), 1.0).is_meta());
  expect_error<ValueError>([&] { scaled_add_(meta, empty({2, 2}, kMeta), 1.0); }, "[scaled_add_] output with shape");
}

TEST_CASE("structured: out= variants resize an empty out, cast, and refuse misfits") {
  StructuredOps ops;
  Tensor out = empty({0});
  const Tensor& result = scaled_add_out(out, tensor({1.0f, 2.0f}), tensor({{1.0f}, {2.0f}}), 1.0);
  CHECK(result.is_same(out));
  CHECK(out.sizes() == IntArrayRef{2, 2});
  CHECK(equal(out, tensor({{2.0f, 3.0f}, {3.0f, 4.0f}})));
  Tensor doubles = empty({2}, kFloat64);
  scaled_add_out(doubles, tensor({1.0f, 2.0f}), tensor({1.0f, 1.0f}), 1.0);
  CHECK(equal(doubles, tensor({2.0, 3.0})));
  Tensor strided = zeros({2, 2}).t();
  scaled_add_out(strided, tensor({{1.0f, 2.0f}, {3.0f, 4.0f}}), tensor({0.0f}), 1.0);
  CHECK(equal(strided, tensor({{1.0f, 2.0f}, {3.0f, 4.0f}})));
  expect_error<ValueError>([] { scaled_add_out(zeros({3}), ones({2}), ones({2}), 1.0); },
                           "[scaled_add.out] out has shape [3] but the result has shape [2]");
  expect_error<Error>([] { scaled_add_out(zeros({2}, kInt64), ones({2}), ones({2}), 1.0); },
                      "[scaled_add.out] result type Float32 can't be cast");
  expect_error<Error>([] { scaled_add_out(empty({2}, kMeta), ones({2}), ones({2}), 1.0); },
                      "[scaled_add.out] expected out on cpu");
  Tensor x = ones({4});
  expect_error<Error>([&] { scaled_add_out(x.slice(0, 1), x.slice(0, 0, 3), ones({3}), 1.0); },
                      "[scaled_add.out] unsupported");
  Tensor meta_out = empty({0}, kMeta);
  scaled_add_out(meta_out, empty({5}, kMeta), empty({5}, kMeta), 1.0);
  CHECK(meta_out.sizes() == IntArrayRef{5});
}

TEST_CASE("structured: out= calls are not differentiable") {
  StructuredOps ops;
  const Tensor w = ones({2}).requires_grad_();
  expect_error<Error>([&] { scaled_add_out(empty({0}), w, ones({2}), 1.0); }, "[structured_test::scaled_add.out]",
                      {"out=", "requires grad"});
  {
    NoGradGuard no_grad;
    Tensor out = empty({0});
    scaled_add_out(out, w, ones({2}), 1.0);
    CHECK(equal(out, tensor({2.0f, 2.0f})));
  }
}

TEST_CASE("structured: built-in add/sub/mul/div out= forms") {
  Tensor out = empty({0});
  add_out(out, tensor({1, 2}), tensor({10, 20}), 2);
  CHECK(equal(out, tensor({21, 42})));
  Tensor f = empty({2}, kFloat64);
  div_out(f, tensor({1, 3}), tensor({2, 2}));
  CHECK(equal(f, tensor({0.5, 1.5})));
  mul_out(f, tensor({1.5, 2.0}), tensor({2.0, 2.0}));
  CHECK(equal(f, tensor({3.0, 4.0})));
  sub_out(f, f, tensor({1.0, 1.0}));  // out may be an input with the same geometry
  CHECK(equal(f, tensor({2.0, 3.0})));
  expect_error<Error>([] { add_out(empty({2}, kInt64), tensor({1.5f, 2.5f}), tensor({1.0f, 1.0f})); },
                      "[add.out] result type Float32 can't be cast");
}

TEST_CASE("structured: every built-in op with a Meta kernel has it derived from a shape function") {
  int derived = 0;
  for (const std::string& name : registered_ops()) {
    if (name.rfind("strata::", 0) != 0) continue;
    const OperatorHandle op = find_op(name);
    if (!op.has_kernel_for(DispatchKey::Meta)) continue;
    INFO(name << " has a Meta kernel written by hand; derive it with detail::def_structured (ops/structured.h)");
    CHECK(detail::has_derived_meta(name));
    derived += detail::has_derived_meta(name);
  }
  CHECK(derived > 0);
}
