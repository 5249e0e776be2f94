// Every schema type as a kernel argument and return, typed and boxed. See Note [Canonical C++ types].
#include <doctest/doctest.h>

#include <sstream>

#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;
using strata::testing::scalar_tensor;
using strata::testing::expect_error;

namespace {
template <class T>
std::string text(const T& value) {
  std::ostringstream out;
  out << IValue(value);
  return out.str();
}
}  // namespace

TEST_CASE("kernel types: str takes std::string_view, std::string and const std::string&, returns std::string") {
  Library def("kt_str", Library::DEF);
  def.def("view(str x) -> str", [](std::string_view s) { return std::string(s) + "!"; });
  def.def("owned(str x) -> str", [](std::string s) { return s + "?"; });
  def.def("ref(str x) -> str", [](const std::string& s) { return s + "."; });
  CHECK(find_op("kt_str::view").typed<std::string(std::string_view)>().call("hi") == "hi!");
  CHECK(find_op("kt_str::owned").typed<std::string(const std::string&)>().call("hi") == "hi?");
  CHECK(call("kt_str::ref", "hi").to_string() == "hi.");
  Stack stack{std::string("yo")};
  find_op("kt_str::owned").call_boxed(stack);
  CHECK(stack.at(0).to_string() == "yo?");
}

TEST_CASE("kernel types: int[], float[] and bool[] lists, as views and vectors, in and out") {
  Library def("kt_list", Library::DEF);
  def.def("ints(int[] x) -> int[]", [](std::vector<int64_t> v) { v.push_back(7); return v; });
  def.def("floats(float[] x) -> float[]", [](ArrayRef<double> v) { auto r = v.vec(); r.push_back(0.5); return r; });
  def.def("floats_vec(float[] x) -> float", [](const std::vector<double>& v) { return v.empty() ? 0.0 : v.back(); });
  def.def("bools(bool[] x) -> bool[]", [](const std::vector<bool>& v) { auto r = v; r.flip(); return r; });

  CHECK(find_op("kt_list::ints").typed<std::vector<int64_t>(IntArrayRef)>().call({1, 2}) == std::vector<int64_t>{1, 2, 7});
  CHECK(call("kt_list::ints", std::vector<int64_t>{3}).to_int_list() == std::vector<int64_t>{3, 7});
  auto floats = find_op("kt_list::floats").typed<std::vector<double>(ArrayRef<double>)>();
  CHECK(floats.call(std::vector<double>{1.5}) == std::vector<double>{1.5, 0.5});
  CHECK(call("kt_list::floats", std::vector<double>{2.5}).to_double_list() == std::vector<double>{2.5, 0.5});
  CHECK(call("kt_list::floats", std::vector<int64_t>{2}).to_double_list() == std::vector<double>{2.0, 0.5});  // int[] converts
  CHECK(call("kt_list::floats_vec", std::vector<double>{1, 4.25}).to_double() == 4.25);
  auto bools = find_op("kt_list::bools").typed<std::vector<bool>(const std::vector<bool>&)>();
  CHECK(bools.call({true, false}) == std::vector<bool>{false, true});
  CHECK(call("kt_list::bools", std::vector<bool>{true}).to_bool_list() == std::vector<bool>{false});
  CHECK(text(std::vector<double>{1.5, 2}) == "[1.5, 2]");
  CHECK(text(std::vector<bool>{true, false}) == "[True, False]");
}

TEST_CASE("kernel types: Tensor?[] is a list of optional tensors with its own IValue kind") {
  Library def("kt_opt_list", Library::DEF);
  def.def("present(Tensor?[] x) -> int", [](const optional_tensor_list& list) {
    return static_cast<int64_t>(std::count_if(list.begin(), list.end(), [](const auto& t) { return t.has_value(); }));
  });
  Tensor x = scalar_tensor(1);
  optional_tensor_list list{x, std::nullopt, x};
  CHECK(find_op("kt_opt_list::present").typed<int64_t(const optional_tensor_list&)>().call(list) == 2);
  IValue boxed(list);
  CHECK(boxed.is_optional_tensor_list());
  CHECK(text(list) == "[Tensor[], None, Tensor[]]");
  CHECK(call("kt_opt_list::present", list).to_int() == 2);
  CHECK(call("kt_opt_list::present", tensor_list{x}).to_int() == 1);  // a tensor_list converts
  expect_error<TypeError>([&] { find_op("kt_opt_list::present").typed<int64_t(const tensor_list&)>(); },
                          "[kt_opt_list::present]", {"argument 1 'x'", "optional_tensor_list"});
}

TEST_CASE("kernel types: T? of every type, typed and boxed") {
  Library def("kt_opt", Library::DEF);
  using Sig = std::string(std::optional<int64_t>, std::optional<double>, std::optional<std::string_view>,
                          std::optional<IntArrayRef>, std::optional<ArrayRef<double>>,
                          const std::optional<std::vector<bool>>&, const std::optional<Scalar>&,
                          std::optional<ScalarType>, std::optional<Device>, const std::optional<Tensor>&,
                          const std::optional<tensor_list>&, const std::optional<optional_tensor_list>&);
  def.def("maybe(int? a, float? b, str? c, int[]? d, float[]? e, bool[]? f, Scalar? g, ScalarType? h, Device? i, "
          "Tensor? j, Tensor[]? k, Tensor?[]? l) -> str",
          [](std::optional<int64_t> a, std::optional<double> b, std::optional<std::string> c,
             std::optional<std::vector<int64_t>> d, std::optional<std::vector<double>> e,
             const std::optional<std::vector<bool>>& f, const std::optional<Scalar>& g, std::optional<ScalarType> h,
             std::optional<Device> i, const std::optional<Tensor>& j, const std::optional<tensor_list>& k,
             const std::optional<optional_tensor_list>& l) {
            return detail::str_cat(a.has_value(), b.has_value(), c.value_or("-"), d ? d->size() : 9, e ? e->size() : 9,
                                   f ? f->size() : 9, g.has_value(), h.has_value(), i.has_value(), j.has_value(),
                                   k ? k->size() : 9, l ? l->size() : 9);
          });
  auto typed = find_op("kt_opt::maybe").typed<Sig>();
  CHECK(typed.call({}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}, {}) == "00-999000099");
  Tensor x = scalar_tensor(1);
  std::vector<int64_t> ints{1, 2};
  std::vector<double> doubles{1};
  CHECK(typed.call(1, 2.0, "s", IntArrayRef(ints), ArrayRef<double>(doubles), std::vector<bool>{true}, Scalar(1), kFloat32,
                   Device(kCPU), x, tensor_list{x}, optional_tensor_list{x, std::nullopt}) == "11s2111111" "12");
  CHECK(call("kt_opt::maybe", std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt,
             std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt, std::nullopt)
            .to_string() == "00-999000099");
  CHECK(call("kt_opt::maybe", 1, 2.0, "s", ints, doubles, std::vector<bool>{true}, 3, kFloat32, Device(kCPU), x,
             tensor_list{x}, optional_tensor_list{x})
            .to_string() == "11s2111111" "11");
}

TEST_CASE("kernel types: returns of every single type, tuples mixing kinds, and none") {
  Library def("kt_ret", Library::DEF);
  def.def("scalar(int x) -> Scalar", [](int64_t x) { return Scalar(x * 2); });
  def.def("dtype(int x) -> ScalarType", [](int64_t) { return kFloat64; });
  def.def("device(int x) -> Device", [](int64_t) { return Device(kMeta); });
  def.def("flag(int x) -> bool", [](int64_t x) { return x > 0; });
  def.def("maybe(int x) -> Tensor?", [](int64_t x) { return x > 0 ? std::optional<Tensor>(scalar_tensor(1)) : std::nullopt; });
  def.def("stats(Tensor x) -> (Tensor, Tensor, int)", [](const Tensor& x) { return std::make_tuple(x, x, int64_t{3}); });
  int calls = 0;
  def.def("nothing(Tensor x) -> ()", [&calls](const Tensor&) { ++calls; });

  CHECK(find_op("kt_ret::scalar").typed<Scalar(int64_t)>().call(2).to_long() == 4);
  CHECK(call("kt_ret::dtype", 1).to_scalar_type() == kFloat64);
  CHECK(call("kt_ret::device", 1).to_device() == Device(kMeta));
  CHECK(call("kt_ret::flag", 1).to_bool());
  CHECK(call("kt_ret::maybe", -1).is_none());
  CHECK(find_op("kt_ret::maybe").typed<std::optional<Tensor>(int64_t)>().call(1).has_value());

  Tensor x = scalar_tensor(2);
  auto [a, b, n] = find_op("kt_ret::stats").typed<std::tuple<Tensor, Tensor, int64_t>(const Tensor&)>().call(x);
  CHECK((a.is_same(x) && b.is_same(x) && n == 3));
  IValue boxed = call("kt_ret::stats", x);
  REQUIRE(boxed.is_tuple());
  CHECK(boxed.to_tuple().size() == 3);
  CHECK(boxed.to_tuple()[2].to_int() == 3);
  CHECK(text(IValue::tuple({IValue(1), IValue(2.5)})) == "(1, 2.5)");
  Stack stack{x};
  find_op("kt_ret::stats").call_boxed(stack);
  CHECK(stack.size() == 3);

  find_op("kt_ret::nothing").typed<void(const Tensor&)>().call(x);
  CHECK(call("kt_ret::nothing", x).is_none());
  CHECK(calls == 2);
}

TEST_CASE("kernel types: mismatched C++ signatures throw TypeError naming the argument or return") {
  Library def("kt_bad", Library::DEF);
  def.def("floats(float[] w, bool[] b) -> (Tensor, int)");
  Library cpu("kt_bad", Library::IMPL, DispatchKey::CPU);
  expect_error<TypeError>([&] { cpu.impl("floats", [](IntArrayRef, const std::vector<bool>&) { return std::make_tuple(Tensor(), int64_t{}); }); },
                          "[kt_bad::floats]", {"argument 1 'w'", "float[]", "ArrayRef<double>"});
  expect_error<TypeError>([&] { cpu.impl("floats", [](ArrayRef<double>, IntArrayRef) { return std::make_tuple(Tensor(), int64_t{}); }); },
                          "[kt_bad::floats]", {"argument 2 'b'", "std::vector<bool>"});
  expect_error<TypeError>([&] { cpu.impl("floats", [](ArrayRef<double>, const std::vector<bool>&) { return std::make_tuple(Tensor(), 1.0); }); },
                          "[kt_bad::floats]", {"return 2", "std::tuple<Tensor, int64_t>"});
  expect_error<TypeError>([] { find_op("kt_bad::floats").typed<std::tuple<Tensor, int64_t>(std::vector<double>, bool)>(); },
                          "[kt_bad::floats]", {"argument 2 'b'"});
  cpu.impl("floats", [](ArrayRef<double>, const std::vector<bool>&) { return std::make_tuple(scalar_tensor(0), int64_t{1}); });
  expect_error<TypeError>([] { call("kt_bad::floats", "no", std::vector<bool>{}); }, "[kt_bad::floats]",
                          {"argument 'w'", "float[]", "str"});
  expect_error<TypeError>([] { call("kt_bad::floats", std::vector<double>{}, std::vector<int64_t>{1}); },
                          "[kt_bad::floats]", {"argument 'b'", "bool[]"});
}
