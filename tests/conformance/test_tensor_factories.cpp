// Conformance port of LibTorch's test/cpp/api/tensor.cpp, part 1 of 2: the tensor() factory
// (at::tensor and torch::tensor constructors, default dtypes), arange and from_blob. Upstream order;
// skipped tests marked `// skipped:`. See README.md in this folder and the spelling map in
// tensor_helpers.h.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include <strata/strata.h>

#include "../test_util.h"
#include "tensor_helpers.h"

using namespace strata;
using strata::conformance::cuda_missing;
using strata::testing::expect_error;

namespace {

template <class T>
bool exactly_equal(const Tensor& left, T right) {
  return left.item<T>() == right;
}

template <class T>
bool almost_equal(const Tensor& left, T right, double tolerance = 1e-4) {
  return std::abs(static_cast<double>(left.item<T>()) - static_cast<double>(right)) < tolerance;
}

std::vector<int64_t> sizes_of(const Tensor& t) { return t.sizes().vec(); }

// LibTorch's AutoDefaultDtypeMode: the default dtype for a scope (back to kFloat32 after).
struct DefaultDtype {
  explicit DefaultDtype(ScalarType dtype) { set_default_dtype(dtype); }
  ~DefaultDtype() { set_default_dtype(kFloat32); }
  DefaultDtype(const DefaultDtype&) = delete;
  DefaultDtype& operator=(const DefaultDtype&) = delete;
};

// Nested initializer lists of doubles, for the zero-sized tensors below ({} alone deduces no type).
using L1 = std::initializer_list<double>;
using L2 = std::initializer_list<L1>;
using L3 = std::initializer_list<L2>;
using L4 = std::initializer_list<L3>;
using L5 = std::initializer_list<L4>;
using L6 = std::initializer_list<L5>;
using L7 = std::initializer_list<L6>;
using L8 = std::initializer_list<L7>;
using L9 = std::initializer_list<L8>;
using L10 = std::initializer_list<L9>;

}  // namespace

// differs: at::tensor(123) is a 1-element kInt tensor and at::tensor(123.456) kDouble; strata's
// one tensor() follows torch::tensor: a 0-d kInt64, and a 0-d tensor of the default dtype
// (kFloat32). The complex-valued cases are left out (strata has no complex dtypes).
TEST_CASE("conformance tensor.cpp: AtTensorCtorScalar") {
  Tensor tensor = strata::tensor(123);
  CHECK(tensor.numel() == 1);
  CHECK(tensor.dtype() == kInt64);
  CHECK(tensor.item<int32_t>() == 123);

  tensor = strata::tensor(123.456f);
  CHECK(tensor.numel() == 1);
  CHECK(tensor.dtype() == kFloat);
  CHECK(almost_equal(tensor, 123.456f));

  tensor = strata::tensor(123.456);
  CHECK(tensor.numel() == 1);
  CHECK(tensor.dtype() == kFloat32);  // upstream (at::tensor): kDouble
  CHECK(almost_equal(tensor, 123.456));

  tensor = strata::tensor(123, dtype(kFloat)) + 0.5;
  CHECK(tensor.numel() == 1);
  CHECK(tensor.dtype() == kFloat);
  CHECK(almost_equal(tensor, 123.5));
}

// differs: as above, integral init lists are kInt64 (at::: kInt) and floating init lists take
// the default dtype (at::: kDouble); std::vector<T> keeps T's dtype as in at::tensor. Complex
// cases left out.
TEST_CASE("conformance tensor.cpp: AtTensorCtorSingleDim") {
  Tensor tensor = strata::tensor({1, 2, 3});
  CHECK(tensor.numel() == 3);
  CHECK(tensor.dtype() == kInt64);  // upstream: kInt
  CHECK(exactly_equal(tensor.select(0, 0), 1));
  CHECK(exactly_equal(tensor.select(0, 1), 2));
  CHECK(exactly_equal(tensor.select(0, 2), 3));

  tensor = strata::tensor(std::vector<int>({1, 2, 3}));
  CHECK(tensor.numel() == 3);
  CHECK(tensor.dtype() == kInt);
  CHECK(exactly_equal(tensor.select(0, 0), 1));
  CHECK(exactly_equal(tensor.select(0, 1), 2));
  CHECK(exactly_equal(tensor.select(0, 2), 3));

  tensor = strata::tensor({1.5, 2.25, 3.125});
  CHECK(tensor.numel() == 3);
  CHECK(tensor.dtype() == kFloat32);  // upstream: kDouble
  CHECK(almost_equal(tensor.select(0, 0), 1.5));
  CHECK(almost_equal(tensor.select(0, 1), 2.25));
  CHECK(almost_equal(tensor.select(0, 2), 3.125));

  tensor = strata::tensor({1.1, 2.2, 3.3}, dtype(kInt));
  CHECK(tensor.numel() == 3);
  CHECK(tensor.dtype() == kInt);
  CHECK(exactly_equal(tensor.select(0, 0), 1));
  CHECK(exactly_equal(tensor.select(0, 1), 2));
  CHECK(exactly_equal(tensor.select(0, 2), 3));

  tensor = strata::tensor(std::vector<double>({1.5, 2.25, 3.125}));
  CHECK(tensor.numel() == 3);
  CHECK(tensor.dtype() == kDouble);
  CHECK(almost_equal(tensor.select(0, 0), 1.5));
  CHECK(almost_equal(tensor.select(0, 1), 2.25));
  CHECK(almost_equal(tensor.select(0, 2), 3.125));

  std::vector<int> v = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  tensor = strata::tensor(v);
  CHECK(tensor.numel() == static_cast<int64_t>(v.size()));
  CHECK(tensor.dtype() == kInt);
  for (size_t i = 0; i < v.size(); ++i) CHECK(exactly_equal(tensor.select(0, static_cast<int64_t>(i)), v.at(i)));

  std::vector<double> w = {1.1, 2.2, 3.3, 4.4, 5.5, 6.6, 7.7, 8.8, 9.9, 10.0};
  tensor = strata::tensor(w);
  CHECK(tensor.numel() == static_cast<int64_t>(w.size()));
  CHECK(tensor.dtype() == kDouble);
  for (size_t i = 0; i < w.size(); ++i) CHECK(almost_equal(tensor.select(0, static_cast<int64_t>(i)), w.at(i)));
}

// skipped: AtTensorCastRealToComplex (strata has no complex dtypes)
// skipped: AtTensorCastComplexToRealErrorChecks (strata has no complex dtypes)

TEST_CASE("conformance tensor.cpp: TorchTensorCtorScalarIntegralType") {
  Tensor tensor = strata::tensor(123);
  CHECK(tensor.numel() == 1);
  CHECK(sizes_of(tensor) == std::vector<int64_t>({}));
  CHECK(tensor.dtype() == kLong);
  CHECK(tensor.item<int64_t>() == 123);
}

namespace {
void test_TorchTensorCtorScalarFloatingType_expected_dtype(ScalarType default_dtype) {
  DefaultDtype dtype_mode(default_dtype);

  Tensor tensor = strata::tensor(123.456f);
  CHECK(tensor.numel() == 1);
  CHECK(sizes_of(tensor) == std::vector<int64_t>({}));
  CHECK(tensor.dtype() == default_dtype);
  CHECK(almost_equal(tensor, 123.456f));

  tensor = strata::tensor(123.456);
  CHECK(tensor.numel() == 1);
  CHECK(sizes_of(tensor) == std::vector<int64_t>({}));
  CHECK(tensor.dtype() == default_dtype);
  CHECK(almost_equal(tensor, 123.456));

  tensor = strata::tensor({123.456});
  CHECK(tensor.numel() == 1);
  CHECK(sizes_of(tensor) == std::vector<int64_t>({1}));
  CHECK(tensor.dtype() == default_dtype);
  CHECK(almost_equal(tensor.select(0, 0), 123.456));
}
}  // namespace

TEST_CASE("conformance tensor.cpp: TorchTensorCtorScalarFloatingType") {
  test_TorchTensorCtorScalarFloatingType_expected_dtype(/*default_dtype=*/kFloat);
  test_TorchTensorCtorScalarFloatingType_expected_dtype(/*default_dtype=*/kDouble);
}

TEST_CASE("conformance tensor.cpp: TorchTensorCtorScalarBoolType") {
  Tensor tensor = strata::tensor(true);
  CHECK(tensor.numel() == 1);
  CHECK(sizes_of(tensor) == std::vector<int64_t>({}));
  CHECK(tensor.dtype() == kBool);
  CHECK(exactly_equal(tensor, true));

  tensor = strata::tensor({true});
  CHECK(tensor.numel() == 1);
  CHECK(sizes_of(tensor) == std::vector<int64_t>({1}));
  CHECK(tensor.dtype() == kBool);
  CHECK(exactly_equal(tensor.select(0, 0), true));
}

// differs: std::vector<int> keeps int's dtype in strata (kInt32; torch::tensor: kLong); the
// at::ArrayRef<int> / at::ArrayRef<int64_t> variants are left out (strata has no
// tensor(ArrayRef) overload: std::vector covers it).
TEST_CASE("conformance tensor.cpp: TorchTensorCtorSingleDimIntegralType") {
  Tensor tensor = strata::tensor({1, 2, 3});
  CHECK(tensor.numel() == 3);
  CHECK(sizes_of(tensor) == std::vector<int64_t>({3}));
  CHECK(tensor.dtype() == kLong);
  CHECK(exactly_equal(tensor.select(0, 0), int64_t{1}));
  CHECK(exactly_equal(tensor.select(0, 1), int64_t{2}));
  CHECK(exactly_equal(tensor.select(0, 2), int64_t{3}));

  tensor = strata::tensor(std::vector<int>({1, 2, 3}));
  CHECK(tensor.numel() == 3);
  CHECK(sizes_of(tensor) == std::vector<int64_t>({3}));
  CHECK(tensor.dtype() == kInt32);  // upstream: kLong
  CHECK(exactly_equal(tensor.select(0, 0), 1));
  CHECK(exactly_equal(tensor.select(0, 1), 2));
  CHECK(exactly_equal(tensor.select(0, 2), 3));

  tensor = strata::tensor(std::vector<int64_t>({1, 2, 3}));
  CHECK(tensor.numel() == 3);
  CHECK(sizes_of(tensor) == std::vector<int64_t>({3}));
  CHECK(tensor.dtype() == kLong);
  CHECK(exactly_equal(tensor.select(0, 0), int64_t{1}));
  CHECK(exactly_equal(tensor.select(0, 1), int64_t{2}));
  CHECK(exactly_equal(tensor.select(0, 2), int64_t{3}));
}

namespace {
// differs: std::vector<float> / std::vector<double> keep their dtype in strata (kFloat32 /
// kFloat64) where torch::tensor gives the default dtype; ArrayRef variants left out.
void test_TorchTensorCtorSingleDimFloatingType_expected_dtype(ScalarType default_dtype) {
  DefaultDtype dtype_mode(default_dtype);

  Tensor tensor = strata::tensor({1.5, 2.25, 3.125});
  CHECK(tensor.numel() == 3);
  CHECK(sizes_of(tensor) == std::vector<int64_t>({3}));
  CHECK(tensor.dtype() == default_dtype);
  CHECK(almost_equal(tensor.select(0, 0), 1.5));
  CHECK(almost_equal(tensor.select(0, 1), 2.25));
  CHECK(almost_equal(tensor.select(0, 2), 3.125));

  tensor = strata::tensor({1.5f, 2.25f, 3.125f});
  CHECK(tensor.numel() == 3);
  CHECK(sizes_of(tensor) == std::vector<int64_t>({3}));
  CHECK(tensor.dtype() == default_dtype);
  CHECK(almost_equal(tensor.select(0, 0), 1.5f));
  CHECK(almost_equal(tensor.select(0, 1), 2.25f));
  CHECK(almost_equal(tensor.select(0, 2), 3.125f));

  tensor = strata::tensor(std::vector<float>({1.5f, 2.25f, 3.125f}));
  CHECK(tensor.numel() == 3);
  CHECK(sizes_of(tensor) == std::vector<int64_t>({3}));
  CHECK(tensor.dtype() == kFloat32);  // upstream: default_dtype
  CHECK(almost_equal(tensor.select(0, 0), 1.5));
  CHECK(almost_equal(tensor.select(0, 1), 2.25));
  CHECK(almost_equal(tensor.select(0, 2), 3.125));

  tensor = strata::tensor(std::vector<double>({1.5, 2.25, 3.125}));
  CHECK(tensor.numel() == 3);
  CHECK(sizes_of(tensor) == std::vector<int64_t>({3}));
  CHECK(tensor.dtype() == kFloat64);  // upstream: default_dtype
  CHECK(almost_equal(tensor.select(0, 0), 1.5));
  CHECK(almost_equal(tensor.select(0, 1), 2.25));
  CHECK(almost_equal(tensor.select(0, 2), 3.125));
}
}  // namespace

TEST_CASE("conformance tensor.cpp: TorchTensorCtorSingleDimFloatingType") {
  test_TorchTensorCtorSingleDimFloatingType_expected_dtype(/*default_dtype=*/kFloat);
  test_TorchTensorCtorSingleDimFloatingType_expected_dtype(/*default_dtype=*/kDouble);
}

// differs: the at::ArrayRef<bool> variant is left out (no tensor(ArrayRef) overload).
TEST_CASE("conformance tensor.cpp: TorchTensorCtorSingleDimBoolType") {
  Tensor tensor = strata::tensor({true, false, true});
  CHECK(tensor.numel() == 3);
  CHECK(sizes_of(tensor) == std::vector<int64_t>({3}));
  CHECK(tensor.dtype() == kBool);
  CHECK(exactly_equal(tensor.select(0, 0), true));
  CHECK(exactly_equal(tensor.select(0, 1), false));
  CHECK(exactly_equal(tensor.select(0, 2), true));
}

// equal() instead of allclose() for integral tensors: same meaning, no float tolerance.
TEST_CASE("conformance tensor.cpp: TorchTensorCtorMultiDimIntegralType") {
  {
    Tensor tensor = strata::tensor({{1, 2}});
    CHECK(tensor.dtype() == kLong);
    CHECK(sizes_of(tensor) == std::vector<int64_t>({1, 2}));
    CHECK(equal(tensor, arange(1, 3, 1, kLong).view(tensor.sizes())));
    CHECK_FALSE(tensor.requires_grad());
  }
  {
    Tensor tensor = strata::tensor({{1}, {2}});
    CHECK(tensor.dtype() == kLong);
    CHECK(sizes_of(tensor) == std::vector<int64_t>({2, 1}));
    CHECK(equal(tensor, arange(1, 3, 1, kLong).view(tensor.sizes())));
    CHECK_FALSE(tensor.requires_grad());
  }
  {
    Tensor tensor = strata::tensor({{{1, 2}}});
    CHECK(tensor.dtype() == kLong);
    CHECK(sizes_of(tensor) == std::vector<int64_t>({1, 1, 2}));
    CHECK(equal(tensor, arange(1, 3, 1, kLong).view(tensor.sizes())));
    CHECK_FALSE(tensor.requires_grad());
  }
  {
    Tensor tensor = strata::tensor({{{1}, {2}}});
    CHECK(tensor.dtype() == kLong);
    CHECK(sizes_of(tensor) == std::vector<int64_t>({1, 2, 1}));
    CHECK(equal(tensor, arange(1, 3, 1, kLong).view(tensor.sizes())));
    CHECK_FALSE(tensor.requires_grad());
  }
  {
    Tensor tensor = strata::tensor({{1, 2}, {3, 4}});
    CHECK(tensor.dtype() == kLong);
    CHECK(sizes_of(tensor) == std::vector<int64_t>({2, 2}));
    CHECK(equal(tensor, arange(1, 5, 1, kLong).view(tensor.sizes())));
    CHECK_FALSE(tensor.requires_grad());
  }
  {
    Tensor tensor = strata::tensor({{{{{{{{{{1}}}}}}}}}});
    CHECK(tensor.dtype() == kLong);
    CHECK(sizes_of(tensor) == std::vector<int64_t>({1, 1, 1, 1, 1, 1, 1, 1, 1, 1}));
    CHECK(equal(tensor, full({1}, 1, kLong).view(tensor.sizes())));
    CHECK_FALSE(tensor.requires_grad());
  }
  {
    Tensor tensor = strata::tensor({{{{{{{{{{1, 2}}}}}}}}}});
    CHECK(tensor.dtype() == kLong);
    CHECK(sizes_of(tensor) == std::vector<int64_t>({1, 1, 1, 1, 1, 1, 1, 1, 1, 2}));
    CHECK(equal(tensor, arange(1, 3, 1, kLong).view(tensor.sizes())));
    CHECK_FALSE(tensor.requires_grad());
  }
}

namespace {
void test_TorchTensorCtorMultiDimFloatingType_expected_dtype(ScalarType default_dtype) {
  DefaultDtype dtype_mode(default_dtype);
  {
    Tensor tensor = strata::tensor({{1.0, 2.0}});
    CHECK(tensor.dtype() == default_dtype);
    CHECK(sizes_of(tensor) == std::vector<int64_t>({1, 2}));
    CHECK(allclose(tensor, arange(1, 3, 1, default_dtype).view(tensor.sizes())));
    CHECK_FALSE(tensor.requires_grad());
  }
  {
    Tensor tensor = strata::tensor({{{{{{{{1.0, 2.0, 3.0}}}}}, {{{{{4.0, 5.0, 6.0}}}}}, {{{{{7.0, 8.0, 9.0}}}}}}}});
    CHECK(tensor.dtype() == default_dtype);
    CHECK(sizes_of(tensor) == std::vector<int64_t>({1, 1, 3, 1, 1, 1, 1, 3}));
    CHECK(allclose(tensor, arange(1, 10, 1, default_dtype).view(tensor.sizes())));
    CHECK_FALSE(tensor.requires_grad());
  }
}
}  // namespace

TEST_CASE("conformance tensor.cpp: TorchTensorCtorMultiDimFloatingType") {
  test_TorchTensorCtorMultiDimFloatingType_expected_dtype(/*default_dtype=*/kFloat);
  test_TorchTensorCtorMultiDimFloatingType_expected_dtype(/*default_dtype=*/kDouble);
}

TEST_CASE("conformance tensor.cpp: TorchTensorCtorMultiDimBoolType") {
  {
    Tensor tensor = strata::tensor({{true, false}});
    CHECK(tensor.dtype() == kBool);
    CHECK(sizes_of(tensor) == std::vector<int64_t>({1, 2}));
    Tensor expected = empty(tensor.sizes(), kBool);
    expected.select(0, 0).select(0, 0).fill_(true);
    expected.select(0, 0).select(0, 1).fill_(false);
    CHECK(equal(tensor, expected));
    CHECK_FALSE(tensor.requires_grad());
  }
  {
    Tensor tensor = strata::tensor({{true}, {false}});
    CHECK(tensor.dtype() == kBool);
    CHECK(sizes_of(tensor) == std::vector<int64_t>({2, 1}));
    Tensor expected = empty(tensor.sizes(), kBool);
    expected.select(0, 0).select(0, 0).fill_(true);
    expected.select(0, 1).select(0, 0).fill_(false);
    CHECK(equal(tensor, expected));
    CHECK_FALSE(tensor.requires_grad());
  }
}

TEST_CASE("conformance tensor.cpp: TorchTensorCtorMultiDimWithOptions") {
  {
    Tensor tensor = strata::tensor({{1, 2}}, dtype(kInt));
    CHECK(tensor.dtype() == kInt);
    CHECK(sizes_of(tensor) == std::vector<int64_t>({1, 2}));
    CHECK(equal(tensor, arange(1, 3, 1, kInt).view(tensor.sizes())));
    CHECK_FALSE(tensor.requires_grad());
  }
  {
    Tensor tensor = strata::tensor({{1, 2}, {3, 4}}, dtype(kFloat).requires_grad(true));
    CHECK(tensor.dtype() == kFloat);
    CHECK(sizes_of(tensor) == std::vector<int64_t>({2, 2}));
    CHECK(allclose(tensor, arange(1, 5, 1, kFloat).view(tensor.sizes())));
    CHECK(tensor.requires_grad());
  }
}

// differs: strata's nested initializer lists are typed, so lists of mixed depth or mixed element
// types ({{2, 3, 4}, {{5, 6}, {7}}}, {1, 2.0}, {true, 2}) do not compile: the four mixed-type
// checks are compile-time in strata. The ragged-list check runs with a list of one depth.
TEST_CASE("conformance tensor.cpp: TorchTensorCtorMultiDimErrorChecks") {
  expect_error<Error>([] { strata::tensor({{5, 6}, {7}}); }, "[");
  expect_error<Error>([] { strata::tensor({{{2, 3, 4}}, {{5, 6}, {7}}}); }, "[");
}

// skipped: TorchTensorCastRealToComplex (strata has no complex dtypes)
// skipped: TorchTensorCastComplexToRealErrorChecks (strata has no complex dtypes)

namespace {
void test_TorchTensorCtorMultiDim_CUDA_expected_dtype(ScalarType default_dtype) {
  DefaultDtype dtype_mode(default_dtype);

  Tensor tensor = strata::tensor({{{{{{{{1.0, 2.0, 3.0}}}}}, {{{{{4.0, 5.0, 6.0}}}}}, {{{{{7.0, 8.0, 9.0}}}}}}}},
                                 dtype(default_dtype).device(kCUDA));
  CHECK(tensor.device().is_cuda());
  CHECK(tensor.dtype() == default_dtype);
  CHECK(sizes_of(tensor) == std::vector<int64_t>({1, 1, 3, 1, 1, 1, 1, 3}));
  CHECK(allclose(tensor, arange(1, 10, 1, default_dtype).view(tensor.sizes()).to(kCUDA)));
  CHECK_FALSE(tensor.requires_grad());
}
}  // namespace

TEST_CASE("conformance tensor.cpp: TorchTensorCtorMultiDim_CUDA" * doctest::skip(cuda_missing)) {
  test_TorchTensorCtorMultiDim_CUDA_expected_dtype(/*default_dtype=*/kFloat);
  test_TorchTensorCtorMultiDim_CUDA_expected_dtype(/*default_dtype=*/kDouble);
}

namespace {
// differs: `{}` alone deduces no element type in C++ without LibTorch's TensorDataContainer, so
// the empty lists are spelled as initializer lists of double (a floating list: default dtype).
void test_TorchTensorCtorZeroSizedDim_expected_dtype(ScalarType default_dtype) {
  DefaultDtype dtype_mode(default_dtype);
  auto check_empty = [&](const Tensor& tensor, std::vector<int64_t> sizes) {
    CHECK(tensor.numel() == 0);
    CHECK(sizes_of(tensor) == sizes);
    CHECK(tensor.dtype() == default_dtype);
    CHECK_FALSE(tensor.requires_grad());
  };
  check_empty(strata::tensor(L1{}), {0});
  check_empty(strata::tensor(L2{{}, {}}), {2, 0});
  check_empty(strata::tensor(L3{{{}, {}}}), {1, 2, 0});
  check_empty(strata::tensor(L3{{{}}}), {1, 1, 0});
  check_empty(strata::tensor(L8{{{{{{{{}}}}}}}}), {1, 1, 1, 1, 1, 1, 1, 0});
  check_empty(strata::tensor(L8{{{{{{{{}}}}, {{{{}}}}}}}}), {1, 1, 1, 2, 1, 1, 1, 0});
  check_empty(strata::tensor(L10{{{{{{{{{{}}}}}}}}}}), {1, 1, 1, 1, 1, 1, 1, 1, 1, 0});
}
}  // namespace

TEST_CASE("conformance tensor.cpp: TorchTensorCtorZeroSizedDim") {
  test_TorchTensorCtorZeroSizedDim_expected_dtype(/*default_dtype=*/kFloat);
  test_TorchTensorCtorZeroSizedDim_expected_dtype(/*default_dtype=*/kDouble);
}

namespace {
void test_TorchTensorCtorWithoutSpecifyingDtype_expected_dtype(ScalarType default_dtype) {
  DefaultDtype dtype_mode(default_dtype);

  CHECK(strata::tensor({1., 2., 3.}).dtype() == default_dtype);
  CHECK(strata::tensor({{1., 2., 3.}}).dtype() == default_dtype);
  CHECK(strata::tensor({1., 2., 3.}, TensorOptions()).dtype() == default_dtype);
  CHECK(strata::tensor({{1., 2., 3.}}, TensorOptions()).dtype() == default_dtype);
}
}  // namespace

TEST_CASE("conformance tensor.cpp: TorchTensorCtorWithoutSpecifyingDtype") {
  CHECK(strata::tensor({1, 2, 3}).dtype() == kLong);
  CHECK(strata::tensor({{1, 2, 3}}).dtype() == kLong);
  CHECK(strata::tensor({1, 2, 3}, TensorOptions()).dtype() == kLong);
  CHECK(strata::tensor({{1, 2, 3}}, TensorOptions()).dtype() == kLong);

  test_TorchTensorCtorWithoutSpecifyingDtype_expected_dtype(/*default_dtype=*/kFloat);
  test_TorchTensorCtorWithoutSpecifyingDtype_expected_dtype(/*default_dtype=*/kDouble);
}

namespace {
// differs: std::vector<T> keeps T's dtype (int -> kInt32, double -> kFloat64, float -> kFloat32)
// where torch::tensor gives kLong / the default dtype; ArrayRef variants left out.
void test_TorchTensorCtorWithNonDtypeOptions_expected_dtype(ScalarType default_dtype) {
  DefaultDtype dtype_mode(default_dtype);

  CHECK(strata::tensor({1, 2, 3}, TensorOptions()).dtype() == kLong);
  CHECK(strata::tensor(std::vector<int>({1, 2, 3}), TensorOptions()).dtype() == kInt32);  // upstream: kLong

  CHECK(strata::tensor({1., 2., 3.}, TensorOptions()).dtype() == default_dtype);
  CHECK(strata::tensor(std::vector<double>({1., 2., 3.}), TensorOptions()).dtype() == kFloat64);  // upstream: default

  CHECK(strata::tensor({1.f, 2.f, 3.f}, TensorOptions()).dtype() == default_dtype);
  CHECK(strata::tensor(std::vector<float>({1.f, 2.f, 3.f}), TensorOptions()).dtype() == kFloat32);  // upstream: default
}
}  // namespace

TEST_CASE("conformance tensor.cpp: TorchTensorCtorWithNonDtypeOptions") {
  test_TorchTensorCtorWithNonDtypeOptions_expected_dtype(/*default_dtype=*/kFloat);
  test_TorchTensorCtorWithNonDtypeOptions_expected_dtype(/*default_dtype=*/kDouble);
}

TEST_CASE("conformance tensor.cpp: Arange") {
  {
    Tensor x = arange(0, 5);
    CHECK(x.dtype() == kLong);
  }
  for (ScalarType default_dtype : {kFloat, kDouble}) {
    DefaultDtype dtype_mode(default_dtype);
    CHECK(arange(0., 5).dtype() == default_dtype);
  }
}

// skipped: PrettyPrintTensorDataContainer (torch::detail::TensorDataContainer is LibTorch-internal)
// skipped: TensorDataContainerCallingAccessorOfWrongType (same)

// differs: the storage deleter-context check is left out (no public storage/DataPtr API).
TEST_CASE("conformance tensor.cpp: FromBlob") {
  std::vector<double> v = {1.0, 2.0, 3.0};
  Tensor tensor = from_blob(v.data(), {static_cast<int64_t>(v.size())}, dtype(kFloat64).requires_grad(true));
  CHECK(tensor.requires_grad());
  CHECK(tensor.dtype() == kFloat64);
  CHECK(tensor.numel() == 3);
  CHECK(tensor.select(0, 0).item<double>() == 1);
  CHECK(tensor.select(0, 1).item<double>() == 2);
  CHECK(tensor.select(0, 2).item<double>() == 3);
  CHECK(tensor.data_ptr<double>() == v.data());  // no copy
}

TEST_CASE("conformance tensor.cpp: FromBlobUsesDeleter") {
  bool called = false;
  {
    std::vector<int32_t> v = {1, 2, 3};
    Tensor tensor = from_blob(
        v.data(), {static_cast<int64_t>(v.size())},
        /*deleter=*/[&called](void*) { called = true; }, kInt32);
  }
  CHECK(called);
}

TEST_CASE("conformance tensor.cpp: FromBlobWithStrides") {
  // clang-format off
  std::vector<int32_t> v = {
    1, 2, 3,
    4, 5, 6,
    7, 8, 9
  };
  // clang-format on
  Tensor tensor = from_blob(v.data(), /*sizes=*/{3, 3}, /*strides=*/{1, 3}, kInt32);
  CHECK(tensor.dtype() == kInt32);
  CHECK(tensor.numel() == 9);
  const std::vector<int64_t> expected_strides = {1, 3};
  CHECK(tensor.strides().vec() == expected_strides);
  for (int64_t i = 0; i < tensor.size(0); ++i) {
    for (int64_t j = 0; j < tensor.size(1); ++j) {
      // NOTE: This is column major because the strides are swapped.
      CHECK(tensor.select(0, i).select(0, j).item<int32_t>() == 1 + (j * tensor.size(1)) + i);
    }
  }
}
