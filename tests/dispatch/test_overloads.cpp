// find_op and call by a name without an overload name. See Note [Overload resolution].
#include <doctest/doctest.h>

#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;
using strata::testing::scalar_tensor;
using strata::testing::expect_error;

namespace {
}  // namespace

TEST_CASE("overloads: call picks the overload whose arguments fit, exact kinds first") {
  Library def("ov_pick", Library::DEF);
  def.def("pick.Tensor(Tensor self, Tensor other) -> str", [](const Tensor&, const Tensor&) { return std::string("Tensor"); });
  def.def("pick.Scalar(Tensor self, Scalar other) -> str", [](const Tensor&, const Scalar&) { return std::string("Scalar"); });
  def.def("pick.float(Tensor self, float other) -> str", [](const Tensor&, double) { return std::string("float"); });
  def.def("pick.dims(Tensor self, int[] dims, bool keepdim=False) -> str",
          [](const Tensor&, IntArrayRef, bool) { return std::string("dims"); });
  Tensor x = scalar_tensor(1);
  CHECK(call("ov_pick::pick", x, x).to_string() == "Tensor");
  CHECK(call("ov_pick::pick", x, 2.5).to_string() == "float");   // a float is exact for float, a conversion to Scalar
  CHECK(call("ov_pick::pick", x, Scalar(2)).to_string() == "Scalar");
  CHECK(call("ov_pick::pick", x, std::vector<int64_t>{1}).to_string() == "dims");
  CHECK(call("ov_pick::pick", x, std::vector<int64_t>{1}, true).to_string() == "dims");
  CHECK(call("ov_pick::pick.Scalar", x, 2.5).to_string() == "Scalar");  // a named overload stays exact
  expect_error<TypeError>([&] { call("ov_pick::pick", x, "text"); }, "[ov_pick::pick]",
                                                {"no overload accepts the arguments (Tensor, str)", "ov_pick::pick.Tensor(Tensor self, Tensor other) -> str",
                                                 "ov_pick::pick.dims(Tensor self, int[] dims, bool keepdim=False) -> str"});
}

TEST_CASE("overloads: built-in add takes add.Tensor for a tensor and add.Scalar for a number") {
  Tensor a = tensor({1.0f, 2.0f});
  CHECK(call("strata::add", a, a).to_tensor().data_ptr<float>()[1] == 4.0f);
  CHECK(call("strata::add", a, 3).to_tensor().data_ptr<float>()[1] == 5.0f);
}

TEST_CASE("overloads: equally good fits are an error unless one has no overload name") {
  Library def("ov_tie", Library::DEF);
  def.def("tie(Tensor x) -> str", [](const Tensor&) { return std::string("plain"); });
  def.def("tie.other(Tensor x) -> str", [](const Tensor&) { return std::string("other"); });
  def.def("both.a(Tensor x) -> str", [](const Tensor&) { return std::string("a"); });
  def.def("both.b(Tensor y) -> str", [](const Tensor&) { return std::string("b"); });
  Tensor x = scalar_tensor(1);
  CHECK(call("ov_tie::tie", x).to_string() == "plain");
  expect_error<TypeError>([&] { call("ov_tie::both", x); }, "[ov_tie::both]",
                          {"fit several overloads equally well", "ov_tie::both.a(Tensor x)", "ov_tie::both.b(Tensor y)"});
}

TEST_CASE("overloads: find_op without an overload name takes the unnamed one, else the only one") {
  Library def("ov_find", Library::DEF);
  def.def("plain(Tensor x) -> Tensor");
  def.def("plain.more(Tensor x, int n) -> Tensor");
  def.def("only.one(Tensor x) -> Tensor");
  def.def("many.a(Tensor x) -> Tensor");
  def.def("many.b(Tensor x) -> Tensor");
  CHECK(find_op("ov_find::plain").name() == "ov_find::plain");
  CHECK(find_op("ov_find::plain.more").name() == "ov_find::plain.more");
  CHECK(find_op("ov_find::only").name() == "ov_find::only.one");
  expect_error<ValueError>([] { find_op("ov_find::many"); }, "[ov_find::many]",
                           {"ambiguous", "defined overloads: ov_find::many.a, ov_find::many.b"});
  expect_error<ValueError>([] { find_op("ov_find::only.two"); }, "[ov_find::only.two]", {"ov_find::only.one"});
  expect_error<ValueError>([] { find_op("ov_find::nothing"); }, "[ov_find::nothing]", {"no operator of this name"});
}
