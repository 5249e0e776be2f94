// Library DEF/IMPL/FRAGMENT, kernels per key, alias keys, fallbacks, undo.
#include <doctest/doctest.h>

#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;
using strata::testing::scalar_tensor;

namespace {

Tensor plus_one_cpu(const Tensor& x, double beta) { return scalar_tensor(x.item<float>() + static_cast<float>(beta)); }
Tensor plus_one_meta(const Tensor& x, double) { return detail::make_empty(x.sizes(), x.dtype(), kMeta); }
Tensor times_ten_cpu(const Tensor& x, double) { return scalar_tensor(x.item<float>() * 10); }

}  // namespace

TEST_CASE("library: def, impl per key, typed and boxed calls") {
  Library def("lib_test_a", Library::DEF);
  def.def("plus(Tensor x, float beta=1.0) -> Tensor");
  Library cpu("lib_test_a", Library::IMPL, DispatchKey::CPU);
  cpu.impl("plus", plus_one_cpu);
  Library meta("lib_test_a", Library::IMPL, DispatchKey::Meta);
  meta.impl("plus", plus_one_meta);

  auto op = find_op("lib_test_a::plus").typed<Tensor(const Tensor&, double)>();
  CHECK(op.call(scalar_tensor(2), 1.0).item<float>() == 3.0f);
  Tensor on_meta = op.call(scalar_tensor(0, kMeta), 1.0);
  CHECK(on_meta.is_meta());

  IValue boxed = call("lib_test_a::plus", scalar_tensor(5));  // beta from its default
  CHECK(boxed.to_tensor().item<float>() == 6.0f);
  Stack stack{scalar_tensor(1), 2};  // an int where a float is expected converts
  find_op("lib_test_a::plus").call_boxed(stack);
  REQUIRE(stack.size() == 1);
  CHECK(stack[0].to_tensor().item<float>() == 3.0f);
}

TEST_CASE("library: destroying an IMPL library restores the kernel underneath") {
  Library def("lib_test_b", Library::DEF);
  def.def("plus(Tensor x, float beta=1.0) -> Tensor");
  Library cpu("lib_test_b", Library::IMPL, DispatchKey::CPU);
  cpu.impl("plus", plus_one_cpu);
  auto op = find_op("lib_test_b::plus").typed<Tensor(const Tensor&, double)>();
  {
    Library replacement("lib_test_b", Library::IMPL, DispatchKey::CPU);
    replacement.impl("plus", times_ten_cpu);
    CHECK(op.call(scalar_tensor(2), 1.0).item<float>() == 20.0f);
    CHECK(dump_dispatch_table("lib_test_b::plus").find("(active)") != std::string::npos);
  }
  CHECK(op.call(scalar_tensor(2), 1.0).item<float>() == 3.0f);
}

TEST_CASE("library: destroying the DEF library removes the operator; the namespace can be defined again") {
  {
    Library def("lib_test_c", Library::DEF);
    def.def("plus(Tensor x, float beta=1.0) -> Tensor");
    CHECK(has_op("lib_test_c::plus"));
  }
  CHECK_FALSE(has_op("lib_test_c::plus"));
  Library again("lib_test_c", Library::DEF);
  again.def("plus(Tensor x, float beta=2.0) -> Tensor");
  CHECK(std::get<double>(find_op("lib_test_c::plus").schema().arguments[1].default_value->value) == 2.0);
}

TEST_CASE("library: stateful lambdas and composite kernels") {
  Library def("lib_test_d", Library::DEF);
  int calls = 0;
  def.def("count(Tensor x) -> Tensor", [&calls](const Tensor& x) {
    ++calls;
    return x;
  });
  Tensor x = scalar_tensor(1);
  Tensor y = find_op("lib_test_d::count").typed<Tensor(const Tensor&)>().call(x);
  CHECK(y.is_same(x));
  CHECK(calls == 1);
  // A CompositeImplicitAutograd kernel serves Meta too.
  find_op("lib_test_d::count").typed<Tensor(Tensor)>().call(scalar_tensor(0, kMeta));
  CHECK(calls == 2);
  CHECK(dump_dispatch_table("lib_test_d::count").find("via CompositeImplicitAutograd") != std::string::npos);
}

TEST_CASE("library: CompositeExplicitAutograd serves every backend; a direct kernel wins over it") {
  Library def("lib_test_e", Library::DEF);
  def.def("plus(Tensor x, float beta=1.0) -> Tensor");
  Library explicit_impl("lib_test_e", Library::IMPL, DispatchKey::CompositeExplicitAutograd);
  explicit_impl.impl("plus", [](const Tensor& x, double) { return x; });
  auto op = find_op("lib_test_e::plus").typed<Tensor(const Tensor&, double)>();
  Tensor x = scalar_tensor(4);
  CHECK(op.call(x, 1.0).is_same(x));
  Library cpu("lib_test_e", Library::IMPL, DispatchKey::CPU);
  cpu.impl("plus", plus_one_cpu);
  CHECK(op.call(x, 1.0).item<float>() == 5.0f);
}

TEST_CASE("library: thread-local include/exclude guards and fallthrough") {
  Library def("lib_test_f", Library::DEF);
  def.def("plus(Tensor x, float beta=1.0) -> Tensor");
  Library cpu("lib_test_f", Library::IMPL, DispatchKey::CPU);
  cpu.impl("plus", plus_one_cpu);
  int traced = 0;
  Library tracer("lib_test_f", Library::IMPL, DispatchKey::Tracer);
  tracer.impl("plus", [&traced](const Tensor& x, double beta) {
    ++traced;
    ExcludeDispatchKeyGuard skip(DispatchKey::Tracer);
    return find_op("lib_test_f::plus").typed<Tensor(const Tensor&, double)>().call(x, beta);
  });
  auto op = find_op("lib_test_f::plus").typed<Tensor(const Tensor&, double)>();
  CHECK(op.call(scalar_tensor(1), 1.0).item<float>() == 2.0f);
  CHECK(traced == 0);  // Tracer is not in the tensor's keys
  {
    IncludeDispatchKeyGuard trace(DispatchKey::Tracer);
    CHECK(op.call(scalar_tensor(1), 1.0).item<float>() == 2.0f);
    CHECK(traced == 1);
  }
  CHECK(op.call(scalar_tensor(1), 1.0).item<float>() == 2.0f);
  CHECK(traced == 1);
}

TEST_CASE("library: a boxed fallback serves every operator of its key") {
  Library def("lib_test_g", Library::DEF);
  def.def("plus(Tensor x, float beta=1.0) -> Tensor");
  Library cpu("lib_test_g", Library::IMPL, DispatchKey::CPU);
  cpu.impl("plus", plus_one_cpu);
  std::vector<std::string> seen;
  {
    Library tracing("lib_test_g", Library::IMPL, DispatchKey::Tracer);
    tracing.fallback([&seen](const OperatorHandle& op, Stack& stack) {
      seen.push_back(op.name());
      ExcludeDispatchKeyGuard skip(DispatchKey::Tracer);
      op.call_boxed(stack);
    });
    IncludeDispatchKeyGuard trace(DispatchKey::Tracer);
    Tensor y = find_op("lib_test_g::plus").typed<Tensor(const Tensor&, double)>().call(scalar_tensor(1), 2.0);
    CHECK(y.item<float>() == 3.0f);
  }
  CHECK(seen == std::vector<std::string>{"lib_test_g::plus"});
  IncludeDispatchKeyGuard trace(DispatchKey::Tracer);  // fallback gone: Tracer falls through again
  find_op("lib_test_g::plus").typed<Tensor(const Tensor&, double)>().call(scalar_tensor(1), 2.0);
  CHECK(seen.size() == 1);
}

TEST_CASE("library: overloads and multiple returns") {
  Library def("lib_test_h", Library::DEF);
  def.def("split2.pair(Tensor x) -> (Tensor first, Tensor second)");
  def.def("split2.list(Tensor x, int n) -> Tensor[]");
  Library cpu("lib_test_h", Library::IMPL, DispatchKey::CPU);
  cpu.impl("split2.pair", [](const Tensor& x) { return std::make_tuple(x, x); });
  cpu.impl("split2.list", [](const Tensor& x, int64_t n) { return tensor_list(static_cast<size_t>(n), x); });
  Tensor x = scalar_tensor(1);
  auto [a, b] = find_op("lib_test_h::split2.pair").typed<std::tuple<Tensor, Tensor>(const Tensor&)>().call(x);
  CHECK(a.is_same(x));
  CHECK(b.is_same(x));
  CHECK(call("lib_test_h::split2.pair", x).to_tensor_list().size() == 2);
  CHECK(call("lib_test_h::split2.list", x, 3).to_tensor_list().size() == 3);
  CHECK_THROWS_WITH_AS(find_op("lib_test_h::split2"),
                       doctest::Contains("defined overloads: lib_test_h::split2.list, lib_test_h::split2.pair"), ValueError);
}

TEST_CASE("library: every argument kind reaches a kernel, typed and boxed") {
  Library def("lib_test_i", Library::DEF);
  def.def("kinds(Tensor a, Tensor? b, Tensor[] c, int d, float e, bool f, str g, int[] h, Scalar i, "
          "ScalarType j, Device k, int? l=None, int[2] m=1) -> Tensor");
  std::string seen;
  Library cpu("lib_test_i", Library::IMPL, DispatchKey::CPU);
  cpu.impl("kinds", [&seen](const Tensor& a, const std::optional<Tensor>& b, const tensor_list& c, int64_t d, double e,
                            bool f, std::string_view g, IntArrayRef h, const Scalar& i, ScalarType j, Device k,
                            std::optional<int64_t> l, IntArrayRef m) {
    seen = detail::str_cat(b.has_value(), " ", c.size(), " ", d, " ", e, " ", f, " ", g, " ", h.size(), " ",
                           i.to_double(), " ", j, " ", k, " ", l.value_or(-1), " ", m[0] + m[1]);
    return a;
  });
  Tensor x = scalar_tensor(1);
  call("lib_test_i::kinds", x, std::nullopt, tensor_list{x, x}, 3, 2.5, true, "hi", std::vector<int64_t>{1, 2, 3},
       Scalar(7), kFloat64, Device(kCPU), std::nullopt, 4);
  CHECK(seen == "0 2 3 2.5 1 hi 3 7 Float64 cpu -1 8");
  auto typed = find_op("lib_test_i::kinds")
                   .typed<Tensor(const Tensor&, const std::optional<Tensor>&, const tensor_list&, int64_t, double, bool,
                                 std::string_view, IntArrayRef, const Scalar&, ScalarType, Device,
                                 std::optional<int64_t>, IntArrayRef)>();
  typed.call(x, x, {x}, 1, 0.5, false, "yo", {5}, 1.5, kInt32, Device(kCPU), 9, {1, 1});
  CHECK(seen == "1 1 1 0.5 0 yo 1 1.5 Int32 cpu 9 2");
}

// A block made at run time stands in for a STRATA_LIBRARY* block that is still pending.
namespace {
void define_ordered_op(Library& m) { m.def("ordered(Tensor x) -> Tensor"); }
void implement_ordered_op(Library& m) { m.impl("ordered", [](const Tensor&) { return scalar_tensor(1); }); }
}  // namespace

TEST_CASE("library: a run-time Library runs pending static blocks first, so it registers after them") {
  detail::StaticLibraryBlock def_block(Library::DEF, "lib_test_order", std::nullopt, &define_ordered_op, __FILE__, __LINE__);
  detail::StaticLibraryBlock impl_block(Library::IMPL, "lib_test_order", DispatchKey::CPU, &implement_ordered_op, __FILE__, __LINE__);
  {
    // The op defined by the pending block is found, and the run-time kernel goes on top.
    Library replacement("lib_test_order", Library::IMPL, DispatchKey::CPU);
    replacement.impl("ordered", [](const Tensor&) { return scalar_tensor(2); });
    CHECK(call("lib_test_order::ordered", scalar_tensor(0)).to_tensor().item<float>() == 2.0f);
  }
  CHECK(call("lib_test_order::ordered", scalar_tensor(0)).to_tensor().item<float>() == 1.0f);
  strata::testing::expect_error<ValueError>([] { Library again("lib_test_order", Library::DEF); }, "[lib_test_order]",
                                            {"defined twice"});
}

// See Note [Discarded libraries]: registering through a temporary Library does not compile.
namespace {
Tensor identity_kernel(const Tensor& x) { return x; }
template <class L>
concept ImplOnTemporary = requires { L("lib_test_tmp", L::IMPL, DispatchKey::CPU).impl("op", &identity_kernel); };
template <class L>
concept DefOnTemporary = requires { L("lib_test_tmp", L::DEF).def("op(Tensor x) -> Tensor"); };
template <class L>
concept FallbackOnTemporary = requires { L("lib_test_tmp", L::IMPL, DispatchKey::CPU).fallback(BoxedKernel()); };
template <class L>
concept ImplOnLvalue = requires(L& library) { library.impl("op", &identity_kernel); };
template <class L>
concept DefOnLvalue = requires(L& library) { library.def("op(Tensor x) -> Tensor").def("op2", &identity_kernel); };
}  // namespace
static_assert(!ImplOnTemporary<Library>);
static_assert(!DefOnTemporary<Library>);
static_assert(!FallbackOnTemporary<Library>);
static_assert(ImplOnLvalue<Library>);
static_assert(DefOnLvalue<Library>);

TEST_CASE("library: def, impl and fallback work on a named Library and chain") {
  Library def("lib_test_chain", Library::DEF);
  def.def("a(Tensor x) -> Tensor").def("b", &identity_kernel);
  CHECK(has_op("lib_test_chain::a"));
  CHECK(find_op("lib_test_chain::b").schema().str() == "lib_test_chain::b(Tensor _0) -> Tensor");
}
