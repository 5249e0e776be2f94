// Bad input to the dispatcher: each throws the right Error subclass, names the op and the
// cause, and leaves the registry as it was.
#include <doctest/doctest.h>

#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;
using strata::testing::expect_error;

namespace {
Tensor identity_cpu(const Tensor& x, double) { return x; }
Tensor cpu_scalar() { return detail::make_empty({}, kFloat32, kCPU); }
}  // namespace

TEST_CASE("dispatch errors: a malformed schema points at the column and registers nothing") {
  Library def("err_test_a", Library::DEF);
  std::string message = expect_error<ValueError>([&] { def.def("bad(Tensor x, float beta=1.0 -> Tensor"); }, "[",
                                                 {"column"});
  CHECK(message.find('^') != std::string::npos);
  CHECK_FALSE(has_op("err_test_a::bad"));
}

TEST_CASE("dispatch errors: defining an operator twice names both sites") {
  Library def("err_test_b", Library::DEF);
  def.def("op(Tensor x, float beta) -> Tensor");
  Library fragment("err_test_b", Library::FRAGMENT);
  std::string message = expect_error<ValueError>([&] { fragment.def("op(Tensor x, float beta) -> Tensor"); },
                                                 "[err_test_b::op]", {"defined twice", "test_dispatch_errors.cpp"});
  // Both sites: the first def's line and the second's.
  CHECK(message.find("test_dispatch_errors.cpp", message.find("test_dispatch_errors.cpp") + 1) != std::string::npos);
  CHECK(find_op("err_test_b::op").schema().arguments.size() == 2);
}

TEST_CASE("dispatch errors: a namespace has one live DEF library") {
  Library def("err_test_c", Library::DEF);
  expect_error<ValueError>([] { Library again("err_test_c", Library::DEF); }, "[err_test_c]", {"defined twice"});
}

TEST_CASE("dispatch errors: impl for an undefined operator") {
  Library cpu("err_test_d", Library::IMPL, DispatchKey::CPU);
  expect_error<ValueError>([&] { cpu.impl("missing", identity_cpu); }, "[err_test_d::missing]", {"impl for CPU"});
  CHECK_FALSE(has_op("err_test_d::missing"));
}

TEST_CASE("dispatch errors: a kernel whose signature does not match the schema") {
  Library def("err_test_e", Library::DEF);
  def.def("op(Tensor x, float beta=1.0) -> Tensor");
  Library cpu("err_test_e", Library::IMPL, DispatchKey::CPU);
  expect_error<TypeError>([&] { cpu.impl("op", [](const Tensor& x, float) { return x; }); }, "[err_test_e::op]",
                          {"argument 2 'beta'", "double"});
  expect_error<TypeError>([&] { cpu.impl("op", [](const Tensor& x) { return x; }); }, "[err_test_e::op]",
                          {"2 arguments"});
  expect_error<TypeError>([&] { cpu.impl("op", [](const Tensor&, double) { return 1.0; }); }, "[err_test_e::op]",
                          {"return"});
  CHECK_FALSE(find_op("err_test_e::op").has_kernel_for(DispatchKey::CPU));
  expect_error<TypeError>([] { find_op("err_test_e::op").typed<Tensor(const Tensor&)>(); }, "[err_test_e::op]",
                          {"typed<Sig>()"});
}

TEST_CASE("dispatch errors: no kernel for the tensor's key lists the keys that have one") {
  Library def("err_test_f", Library::DEF);
  def.def("op(Tensor x, float beta=1.0) -> Tensor");
  Library cpu("err_test_f", Library::IMPL, DispatchKey::CPU);
  cpu.impl("op", identity_cpu);
  Tensor meta = detail::make_empty({2}, kFloat32, kMeta);
  expect_error<NotImplementedError>([&] { call("err_test_f::op", meta); }, "[err_test_f::op]",
                                    {"no kernel for dispatch key Meta", "CPU"});
}

TEST_CASE("dispatch errors: boxed calls with wrong argument counts or kinds") {
  Library def("err_test_g", Library::DEF);
  def.def("op(Tensor x, float beta) -> Tensor");
  Library cpu("err_test_g", Library::IMPL, DispatchKey::CPU);
  cpu.impl("op", identity_cpu);
  Tensor x = cpu_scalar();
  expect_error<TypeError>([&] { call("err_test_g::op", x, 1.0, 2.0); }, "[err_test_g::op]", {"at most 2"});
  expect_error<TypeError>([&] { call("err_test_g::op", x); }, "[err_test_g::op]", {"missing argument 'beta'"});
  expect_error<TypeError>([&] { call("err_test_g::op", 1.0, x); }, "[err_test_g::op]",
                          {"argument 'x' (position 1) must be Tensor, got float"});
  expect_error<TypeError>([&] { call("err_test_g::op", x, "text"); }, "[err_test_g::op]", {"'beta'", "got str"});
  expect_error<ValueError>([&] { call("err_test_g::nothing", x); }, "[err_test_g::nothing]", {"no operator"});
}

TEST_CASE("dispatch errors: IValue accessors name the kinds") {
  IValue number(2.5);
  expect_error<TypeError>([&] { (void)number.to_tensor(); }, "[IValue]", {"expected Tensor", "float"});
  expect_error<TypeError>([&] { (void)number.to_int(); }, "[IValue]", {"expected int"});
  CHECK(IValue(3).to_double() == 3.0);
  CHECK(IValue(true).is_bool());
  CHECK(IValue("s").is_string());
}

TEST_CASE("dispatch errors: a Library may not register into another namespace") {
  Library def("err_test_h", Library::DEF);
  def.def("op(Tensor x, float beta) -> Tensor");
  Library cpu("err_test_other", Library::IMPL, DispatchKey::CPU);
  expect_error<ValueError>([&] { cpu.impl("err_test_h::op", identity_cpu); }, "[err_test_h::op]",
                           {"namespace 'err_test_other'"});
}
