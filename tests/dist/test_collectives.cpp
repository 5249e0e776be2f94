// Tests for dist/collectives.cpp, run by every rank of a two-rank job (tests/dist/dist_main.cpp).
#include <doctest/doctest.h>

#include "../test_util.h"

using namespace strata;
using strata::testing::expect_error;

namespace {

const ScalarType all_dtypes[] = {kUInt8, kInt8, kInt16, kInt32, kInt64, kFloat16, kBFloat16, kFloat32, kFloat64};

// The values of t as doubles.
std::vector<double> values(const Tensor& t) {
  Tensor d = t.to(kFloat64).contiguous();
  return std::vector<double>(d.data_ptr<double>(), d.data_ptr<double>() + d.numel());
}

}  // namespace

TEST_CASE("all_reduce: sum, mean, max and min over the ranks, for every dtype") {
  const int r = dist::rank(), w = dist::world_size();
  for (ScalarType dtype : all_dtypes) {
    CAPTURE(dtype);
    Tensor t = full({5}, r + 1, dtype);
    dist::all_reduce(t, dist::ReduceOp::Sum);
    CHECK(values(t) == std::vector<double>(5, w * (w + 1) / 2));
    t = full({2, 3}, r + 1, dtype);
    dist::all_reduce(t, dist::ReduceOp::Max);
    CHECK(values(t) == std::vector<double>(6, w));
    t = full({2, 3}, r + 1, dtype);
    dist::all_reduce(t, dist::ReduceOp::Min);
    CHECK(values(t) == std::vector<double>(6, 1));
    if (is_floating_point(dtype)) {
      t = full({4}, 2 * r, dtype);
      dist::all_reduce(t, dist::ReduceOp::Mean);
      CHECK(values(t) == std::vector<double>(4, w - 1));
    }
  }
  Tensor flags = full({3}, r == 0, kBool);  // sum and max of bools: any; min: all
  dist::all_reduce(flags, dist::ReduceOp::Sum);
  CHECK(values(flags) == std::vector<double>(3, 1));
  flags = full({3}, r == 0, kBool);
  dist::all_reduce(flags, dist::ReduceOp::Min);
  CHECK(values(flags) == std::vector<double>(3, w == 1));
}

TEST_CASE("all_reduce: a non-contiguous tensor is reduced in place through a copy") {
  const int r = dist::rank(), w = dist::world_size();
  Tensor base = arange(6, kFloat32).reshape({2, 3}) * (r + 1);
  Tensor view = base.t();
  dist::all_reduce(view);
  CHECK(allclose(base, arange(6, kFloat32).reshape({2, 3}) * (w * (w + 1) / 2)));
}

TEST_CASE("all_reduce: async handles complete on wait") {
  const int w = dist::world_size();
  Tensor a = ones({1000}), b = full({7}, 3.0, kFloat64);
  dist::Work first = dist::all_reduce(a, dist::ReduceOp::Sum, true);
  dist::Work second = dist::all_reduce(b, dist::ReduceOp::Mean, true);
  second.wait();
  first.wait();
  first.wait();  // waiting again does nothing
  CHECK(first.is_completed());
  CHECK(allclose(a, full({1000}, w)));
  CHECK(allclose(b, full({7}, 3.0, kFloat64)));
}

TEST_CASE("broadcast: every rank gets root's tensor, for every dtype") {
  const int r = dist::rank(), w = dist::world_size();
  const int root = w - 1;
  for (ScalarType dtype : all_dtypes) {
    CAPTURE(dtype);
    Tensor t = full({2, 2}, r + 10, dtype);
    dist::broadcast(t, root);
    CHECK(values(t) == std::vector<double>(4, root + 10));
  }
  Tensor flags = full({2}, r == root, kBool);
  dist::broadcast(flags, root, true).wait();
  CHECK(values(flags) == std::vector<double>(2, 1));
}

TEST_CASE("all_gather: outputs[r] is rank r's tensor, for every dtype") {
  const int r = dist::rank(), w = dist::world_size();
  for (ScalarType dtype : all_dtypes) {
    CAPTURE(dtype);
    tensor_list outputs;
    dist::all_gather(outputs, full({3}, r + 1, dtype));
    REQUIRE(outputs.size() == static_cast<size_t>(w));
    for (int k = 0; k < w; ++k) CHECK(values(outputs[k]) == std::vector<double>(3, k + 1));
  }
  tensor_list given;
  for (int k = 0; k < w; ++k) given.push_back(zeros({2, 2}, kInt64).t());  // non-contiguous outputs
  dist::all_gather(given, arange(4, kInt64).reshape({2, 2}) + r, true).wait();
  for (int k = 0; k < w; ++k) CHECK(equal(given[k], arange(4, kInt64).reshape({2, 2}) + k));
}

TEST_CASE("reduce_scatter: output is the reduction of every rank's inputs[rank]") {
  const int r = dist::rank(), w = dist::world_size();
  for (ScalarType dtype : all_dtypes) {
    CAPTURE(dtype);
    tensor_list inputs;
    for (int k = 0; k < w; ++k) inputs.push_back(full({2}, 10 * k + r, dtype));  // what rank k gets
    Tensor output = empty({2}, dtype);
    dist::reduce_scatter(output, inputs, dist::ReduceOp::Max);
    CHECK(values(output) == std::vector<double>(2, 10 * r + w - 1));
    dist::reduce_scatter(output, inputs, dist::ReduceOp::Sum, true).wait();
    CHECK(values(output) == std::vector<double>(2, w * 10 * r + w * (w - 1) / 2));
    output.zero_();
    dist::reduce_scatter(output, inputs, true).wait();  // API.md's short form: the sum, async
    CHECK(values(output) == std::vector<double>(2, w * 10 * r + w * (w - 1) / 2));
  }
}

TEST_CASE("collectives: Meta tensors are checked and not sent") {
  Tensor t = empty({3}, TensorOptions().device(kMeta));
  CHECK(dist::all_reduce(t).id() == 0);
  CHECK(dist::broadcast(t, 0).id() == 0);
  expect_error<ValueError>([&] { dist::broadcast(t, 5); }, "[dist::broadcast]", {"root", "5"});
}

TEST_CASE("collectives: bad input gets an error naming the op and the argument") {
  const int w = dist::world_size();
  expect_error<ValueError>([] { dist::broadcast(ones({2}), -1); }, "[dist::broadcast]", {"root", "-1"});
  expect_error<ValueError>([&] { dist::broadcast(ones({2}), w); }, "[dist::broadcast]", {"root", std::to_string(w)});
  expect_error<TypeError>([] { dist::all_reduce(ones({2}, kInt32), dist::ReduceOp::Mean); }, "[dist::all_reduce]",
                          {"Mean", "floating-point", "Int32"});
  expect_error<ValueError>([] { dist::all_reduce(Tensor()); }, "[dist::all_reduce]", {"undefined"});
  tensor_list wrong_shape(w, zeros({3}));
  expect_error<ValueError>([&] { dist::all_gather(wrong_shape, ones({2})); }, "[dist::all_gather]",
                           {"outputs[0]", "[3]", "[2]"});
  tensor_list too_few{zeros({2})};
  too_few.resize(w + 1, zeros({2}));
  expect_error<ValueError>([&] { dist::all_gather(too_few, ones({2})); }, "[dist::all_gather]",
                           {"one tensor per rank", std::to_string(w + 1)});
  tensor_list wrong_dtype(w, zeros({2}, kFloat64));
  expect_error<ValueError>([&] { dist::reduce_scatter(zeros({2}), wrong_dtype); }, "[dist::reduce_scatter]",
                           {"inputs[0]", "Float64", "Float32"});
  Tensor leaf = ones({2}, TensorOptions().requires_grad(true));
  CHECK_THROWS(dist::all_reduce(leaf));  // in place on a leaf that requires grad
}

TEST_CASE("collectives: the dist library registers each op for CPU, Meta and Autograd") {
  for (const char* name : {"dist::all_reduce_", "dist::broadcast_", "dist::all_gather_", "dist::reduce_scatter_"}) {
    CAPTURE(name);
    std::string table = dump_dispatch_table(name);
    CHECK(table.find("CPU") != std::string::npos);
    CHECK(table.find("Meta") != std::string::npos);
    CHECK(table.find("Autograd") != std::string::npos);
  }
}
