// Schema defaults in boxed calls, and schema inference. See Notes [Identifier defaults] and
// [Schema inference] in dispatch/boxing.cpp.
#include <doctest/doctest.h>

#include <strata/dispatch/operator_entry.h>
#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;
using strata::testing::scalar_tensor;
using strata::testing::expect_error;

namespace {
IValue boxed_default(const std::string& argument) {
  FunctionSchema schema = parse_schema("f(" + argument + ") -> ()");
  return detail::default_to_ivalue(schema.arguments.at(0), "f");
}
}  // namespace

TEST_CASE("boxing: list, dtype, device, layout and memory-format defaults box") {
  CHECK(boxed_default("float[] w=[1., 2.]").to_double_list() == std::vector<double>{1.0, 2.0});
  CHECK(boxed_default("float[2] w=3").to_double_list() == std::vector<double>{3.0, 3.0});
  CHECK(boxed_default("bool[2] b=[True, False]").to_bool_list() == std::vector<bool>{true, false});
  CHECK(boxed_default("bool[3] b=True").to_bool_list() == std::vector<bool>{true, true, true});
  CHECK(boxed_default("ScalarType d=long").to_scalar_type() == kInt64);
  CHECK(boxed_default("ScalarType? d=float").to_scalar_type() == kFloat32);
  CHECK(boxed_default("ScalarType d=bfloat16").to_scalar_type() == kBFloat16);
  CHECK(boxed_default("ScalarType d=int8").to_scalar_type() == kInt8);
  CHECK(boxed_default("ScalarType d=short").to_scalar_type() == kInt16);
  CHECK(boxed_default("Device d=meta").to_device() == Device(kMeta));
  CHECK(boxed_default("Device d='cpu'").to_device() == Device(kCPU));
  CHECK(boxed_default("int r=Sum").to_int() == 2);
  CHECK(boxed_default("int r=Mean").to_int() == 1);
  CHECK(boxed_default("MemoryFormat m=channels_last").to_int() == 2);
  CHECK(boxed_default("Layout l=strided").to_int() == 0);
  CHECK(boxed_default("float x=-inf").to_double() == -std::numeric_limits<double>::infinity());
}

TEST_CASE("boxing: every identifier the parser accepts has a boxed value") {
  for (auto [base, type] : {std::pair{BaseType::Int, "int"}, {BaseType::ScalarType, "ScalarType"},
                            {BaseType::Layout, "Layout"}, {BaseType::MemoryFormat, "MemoryFormat"},
                            {BaseType::Device, "Device"}}) {
    CHECK_FALSE(default_identifiers(base).empty());
    for (std::string_view name : default_identifiers(base)) {
      INFO(type, " x=", name);
      CHECK_NOTHROW(boxed_default(detail::str_cat(type, " x=", name)));
    }
  }
  CHECK(default_identifiers(BaseType::Str).empty());
}

TEST_CASE("boxing: a boxed call fills in list and identifier defaults for the kernel") {
  Library def("box_defaults", Library::DEF);
  def.def("f(Tensor x, float[] w=[1., 2.], bool[2] b=[True, False], ScalarType d=long, Device dev=meta, int r=Sum) -> str",
          [](const Tensor&, ArrayRef<double> w, const std::vector<bool>& b, ScalarType d, Device dev, int64_t r) {
            return detail::str_cat(w[0] + w[1], " ", b[0], b[1], " ", d, " ", dev, " ", r);
          });
  Tensor x = scalar_tensor(0);
  CHECK(call("box_defaults::f", x).to_string() == "3 10 Int64 meta 2");
  CHECK(call("box_defaults::f", x, std::vector<double>{4, 4}, true).to_string() == "8 11 Int64 meta 2");
}

TEST_CASE("boxing: def(name, fn) infers the schema from the C++ signature") {
  Library def("box_infer", Library::DEF);
  def.def("mix", [](const Tensor& x, int64_t n, const std::string& s, std::vector<double> w, std::optional<ScalarType>,
                    const optional_tensor_list&) { return std::make_tuple(x, n + static_cast<int64_t>(s.size() + w.size())); });
  def.def("mix.none", [](const Tensor&) {});
  def.def("box_infer::ident", [](bool b, const Scalar&, Device, IntArrayRef) { return std::vector<bool>{b}; });
  CHECK(find_op("box_infer::mix").schema().str() ==
        "box_infer::mix(Tensor _0, int _1, str _2, float[] _3, ScalarType? _4, Tensor?[] _5) -> (Tensor, int)");
  CHECK(find_op("box_infer::mix.none").schema().str() == "box_infer::mix.none(Tensor _0) -> ()");
  CHECK(find_op("box_infer::ident").schema().str() == "box_infer::ident(bool _0, Scalar _1, Device _2, int[] _3) -> bool[]");
  Tensor x = scalar_tensor(1);
  auto typed = find_op("box_infer::mix").typed<std::tuple<Tensor, int64_t>(const Tensor&, int64_t, std::string_view,
                                                                             ArrayRef<double>, std::optional<ScalarType>,
                                                                             const optional_tensor_list&)>();
  CHECK(std::get<1>(typed.call(x, 1, "ab", std::vector<double>{1}, std::nullopt, {})) == 4);
  CHECK(call("box_infer::mix.none", x).is_none());
  CHECK(find_op("box_infer::mix").has_kernel_for(DispatchKey::CompositeImplicitAutograd));
}

TEST_CASE("boxing: schema inference rejects C++ types with no schema type") {
  Library def("box_infer_bad", Library::DEF);
  expect_error<TypeError>([&] { def.def("narrow_int", [](const Tensor& x, int) { return x; }); }, "[box_infer_bad::narrow_int]",
                          {"cannot infer a schema", "argument 2 has C++ type int"});
  expect_error<TypeError>([&] { def.def("bad_return", [](const Tensor&) { return 1.0f; }); }, "[box_infer_bad::bad_return]",
                          {"cannot infer a schema", "return type float"});
  expect_error<TypeError>([&] { def.def("boxed", BoxedKernel([](const OperatorHandle&, Stack&) {})); },
                          "[box_infer_bad::boxed]", {"boxed kernel"});
  CHECK_FALSE(has_op("box_infer_bad::narrow_int"));
}
