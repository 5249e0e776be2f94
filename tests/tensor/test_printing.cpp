// Tests for tensor/printing.cpp: operator<< prints like PyTorch's Python repr.
#include <doctest/doctest.h>

#include <strata/tensor/tensor.h>

#include "../test_util.h"
#include "fake_cuda.h"

#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

using namespace strata;
using strata::testing::expect_error;

namespace {

Tensor filled(IntArrayRef sizes, ScalarType dtype, const std::vector<double>& values) {
  Tensor tensor = detail::make_empty(sizes, dtype, Device(kCPU));
  REQUIRE(static_cast<size_t>(tensor.numel()) == values.size());
  visit_dtype(dtype, [&]<class T>() {
    T* data = tensor.data_ptr<T>();
    for (size_t i = 0; i < values.size(); ++i) data[i] = static_cast<T>(static_cast<compute_type_t<T>>(values[i]));
  });
  return tensor;
}

// 0, 1, 2, ... of `dtype`.
Tensor counting(IntArrayRef sizes, ScalarType dtype) {
  std::vector<double> values(static_cast<size_t>(checked_numel(sizes, "counting")));
  for (size_t i = 0; i < values.size(); ++i) values[i] = static_cast<double>(i);
  return filled(sizes, dtype, values);
}

std::string repr(const Tensor& tensor) {
  std::ostringstream out;
  out << tensor;
  return out.str();
}

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST_CASE("printing: whole-number floats print as \"1.\"") {
  CHECK(repr(filled({2, 2}, kFloat32, {1, 2, 3, 4})) == "tensor([[1., 2.],\n        [3., 4.]])");
  CHECK(repr(filled({3}, kFloat32, {0, 0, 0})) == "tensor([0., 0., 0.])");
  CHECK(repr(filled({2}, kFloat32, {-3, 10})) == "tensor([-3., 10.])");
}

TEST_CASE("printing: fractional floats share 4 decimals and a width") {
  CHECK(repr(filled({}, kFloat32, {3.5})) == "tensor(3.5000)");
  CHECK(repr(filled({2}, kFloat32, {-1.5, 2.25})) == "tensor([-1.5000,  2.2500])");
  CHECK(repr(filled({2}, kFloat64, {0.5, 1.25})) == "tensor([0.5000, 1.2500], dtype=float64)");
  CHECK(repr(filled({3}, kFloat32, {0.5, 10.5, 100.25})) == "tensor([  0.5000,  10.5000, 100.2500])");
}

TEST_CASE("printing: scientific notation when the range needs it") {
  CHECK(repr(filled({2}, kFloat32, {1e-5, 1})) == "tensor([1.0000e-05, 1.0000e+00])");
  CHECK(repr(filled({2}, kFloat64, {1e9, 1})) == "tensor([1.0000e+09, 1.0000e+00], dtype=float64)");
  CHECK(repr(filled({2}, kFloat32, {1, 1001})) == "tensor([1.0000e+00, 1.0010e+03])");
  CHECK(repr(filled({2}, kFloat32, {1, 1000})) == "tensor([   1., 1000.])");  // ratio 1000 is not > 1000
  CHECK(repr(filled({}, kFloat64, {-2.5e-7})) == "tensor(-2.5000e-07, dtype=float64)");
}

TEST_CASE("printing: nan and inf") {
  CHECK(repr(filled({4}, kFloat32, {kNan, kInf, -kInf, 1})) == "tensor([nan, inf, -inf, 1.])");
  CHECK(repr(filled({2}, kFloat32, {-kNan, 0.5})) == "tensor([   nan, 0.5000])");
  CHECK(repr(filled({2}, kFloat32, {kNan, kInf})) == "tensor([nan, inf])");
  CHECK(repr(filled({2}, kFloat32, {kInf, 1e-6})) == "tensor([       inf, 1.0000e-06])");
}

TEST_CASE("printing: integers and bools") {
  CHECK(repr(filled({3}, kInt64, {1, 10, 100})) == "tensor([  1,  10, 100])");
  CHECK(repr(filled({3}, kInt32, {1, -2, 3})) == "tensor([ 1, -2,  3], dtype=int32)");
  CHECK(repr(filled({2}, kUInt8, {0, 255})) == "tensor([  0, 255], dtype=uint8)");
  CHECK(repr(filled({2}, kBool, {1, 0})) == "tensor([ True, False])");
  CHECK(repr(filled({}, kInt64, {42})) == "tensor(42)");
  CHECK(repr(filled({}, kBool, {1})) == "tensor(True)");
}

TEST_CASE("printing: float16 and bfloat16 print through float") {
  CHECK(repr(filled({2}, kFloat16, {0.5, 1.5})) == "tensor([0.5000, 1.5000], dtype=float16)");
  CHECK(repr(filled({2}, kBFloat16, {1, 2})) == "tensor([1., 2.], dtype=bfloat16)");
  CHECK(repr(filled({}, kFloat16, {0.1})) == "tensor(0.1000, dtype=float16)");  // 0.0999755859375
}

TEST_CASE("printing: three dims put blank lines between blocks") {
  CHECK(repr(counting({2, 2, 2}, kInt64)) ==
        "tensor([[[0, 1],\n"
        "         [2, 3]],\n"
        "\n"
        "        [[4, 5],\n"
        "         [6, 7]]])");
}

TEST_CASE("printing: long rows wrap at 80 columns") {
  CHECK(repr(counting({30}, kFloat32)) ==
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
        "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
        "        28., 29.])");
}

TEST_CASE("printing: a suffix that does not fit goes on its own line") {
  CHECK(repr(counting({14}, kFloat64)) ==
        "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.],\n"
        "       dtype=float64)");
}

TEST_CASE("printing: more than 1000 elements are summarised with 3 edge items") {
  CHECK(repr(counting({2000}, kInt64)) == "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
  CHECK(repr(counting({40, 40}, kInt64)) ==
        "tensor([[   0,    1,    2,  ...,   37,   38,   39],\n"
        "        [  40,   41,   42,  ...,   77,   78,   79],\n"
        "        [  80,   81,   82,  ...,  117,  118,  119],\n"
        "        ...,\n"
        "        [1480, 1481, 1482,  ..., 1517, 1518, 1519],\n"
        "        [1520, 1521, 1522,  ..., 1557, 1558, 1559],\n"
        "        [1560, 1561, 1562,  ..., 1597, 1598, 1599]])");
  // The formatter sees only printed values: 1000 is hidden, so no scientific notation.
  std::vector<double> values(1001, 1.0);
  values[500] = 1e9;
  CHECK(repr(filled({1001}, kFloat32, values)) == "tensor([1., 1., 1.,  ..., 1., 1., 1.])");
  CHECK(repr(counting({1000}, kInt64)).find("...") == std::string::npos);  // exactly 1000: all printed
}

TEST_CASE("printing: non-contiguous views print in logical order") {
  Tensor base = counting({2, 3}, kInt64);
  CHECK(repr(detail::make_view(base, {3, 2}, {1, 3}, 0)) == "tensor([[0, 3],\n        [1, 4],\n        [2, 5]])");
  CHECK(repr(detail::make_view(base, {2}, {3}, 1)) == "tensor([1, 4])");
  CHECK(repr(detail::make_view(base, {3}, {0}, 5)) == "tensor([5, 5, 5])");
  CHECK(repr(detail::make_view(base, {}, {}, 4)) == "tensor(4)");
}

TEST_CASE("printing: empty tensors") {
  CHECK(repr(detail::make_empty({0}, kFloat32, Device(kCPU))) == "tensor([])");
  CHECK(repr(detail::make_empty({0, 3}, kFloat32, Device(kCPU))) == "tensor([], size=(0, 3))");
  CHECK(repr(detail::make_empty({0}, kInt64, Device(kCPU))) == "tensor([], dtype=int64)");
  CHECK(repr(detail::make_empty({2, 0}, kBool, Device(kCPU))) == "tensor([], size=(2, 0), dtype=bool)");
}

TEST_CASE("printing: Meta tensors print their size instead of values") {
  CHECK(repr(detail::make_empty({2, 3}, kFloat32, Device(kMeta))) == "tensor(..., device='meta', size=(2, 3))");
  CHECK(repr(detail::make_empty({5}, kInt64, Device(kMeta))) ==
        "tensor(..., device='meta', size=(5,), dtype=int64)");
  CHECK(repr(detail::make_empty({}, kFloat32, Device(kMeta))) == "tensor(..., device='meta', size=())");
}

TEST_CASE("printing: requires_grad and undefined tensors") {
  struct Meta : AutogradMetaInterface {
    bool requires_grad() const override { return true; }
  };
  Tensor tensor = filled({2}, kFloat32, {1, 2});
  tensor.impl()->set_autograd_meta(std::make_unique<Meta>());
  CHECK(repr(tensor) == "tensor([1., 2.], requires_grad=True)");
  CHECK(repr(Tensor()) == "[ undefined Tensor ]");
}

TEST_CASE("printing: values on a device come to the host first; ones with gaps must be made contiguous") {
  strata::testing::FakeCudaBackend backend;  // its device memory is host memory
  float values[4] = {1, 2, 3, 4};
  Tensor device_tensor = detail::wrap_external(values, {4}, {1}, kFloat32, Device(kCUDA), {}, "test");
  CHECK(repr(device_tensor) == "tensor([1., 2., 3., 4.], device='cuda:0')");
  CHECK(backend.hooks.copies.size() == 1);
  Tensor transposed = detail::wrap_external(values, {2, 2}, {1, 2}, kFloat32, Device(kCUDA), {}, "test");
  CHECK(repr(transposed) == "tensor([[1., 3.],\n        [2., 4.]], device='cuda:0')");
  Tensor strided = detail::wrap_external(values, {2}, {2}, kFloat32, Device(kCUDA), {}, "test");
  expect_error<NotImplementedError>([&] { repr(strided); },
                                    "[print] reading the values of a strided cuda:0 tensor is not supported");
}
