// Mutation from the schema: Tensor(a!) arguments get their version bumped once per call by the
// dispatcher and are refused by autograd when they are leaves that require grad; Tensor(a)
// returns must alias their argument.
#include <doctest/doctest.h>

#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;
using strata::testing::scalar_tensor;

namespace {

const Tensor& scale_cpu(const Tensor& x, double factor) {
  *x.data_ptr<float>() *= static_cast<float>(factor);
  return x;
}

struct MutableOps {
  Library def{"mut_ops", Library::DEF};
  Library cpu{"mut_ops", Library::IMPL, DispatchKey::CPU};
  MutableOps() {
    def.def("scale_(Tensor(a!) x, float factor) -> Tensor(a!)");
    cpu.impl("scale_", [](const Tensor& x, double factor) -> Tensor { return scale_cpu(x, factor); });
  }
};

}  // namespace

TEST_CASE("mutation: the dispatcher bumps a Tensor(a!) argument's version once per call") {
  MutableOps ops;
  Tensor x = scalar_tensor(2);
  const uint32_t before = x.version();
  auto op = find_op("mut_ops::scale_").typed<Tensor(const Tensor&, double)>();
  op.call(x, 3.0);
  CHECK(x.version() == before + 1);
  call("mut_ops::scale_", x, 2.0);  // boxed calls too
  CHECK(x.version() == before + 2);
  CHECK(x.item<float>() == 12.0f);
  Tensor view = x.view({1});  // views share the counter
  op.call(view, 1.0);
  CHECK(x.version() == before + 3);
}

TEST_CASE("mutation: built-in in-place ops bump exactly once, with or without autograd") {
  Tensor x = ones({3});
  uint32_t v = x.version();
  x.add_(ones({3}));
  CHECK(x.version() == v + 1);
  x.mul_(2.0);
  CHECK(x.version() == v + 2);
  x.zero_();
  CHECK(x.version() == v + 3);
  x.copy_(ones({3}));
  CHECK(x.version() == v + 4);

  Tensor leaf = ones({3}).requires_grad_();
  Tensor y = leaf * 2.0;  // a non-leaf: in-place ops are recorded
  v = y.version();
  y.add_(ones({3}));
  CHECK(y.version() == v + 1);
  y.relu_();
  CHECK(y.version() == v + 2);
}

TEST_CASE("mutation: a custom mutable op refuses a leaf that requires grad") {
  MutableOps ops;
  auto op = find_op("mut_ops::scale_").typed<Tensor(const Tensor&, double)>();
  Tensor leaf = scalar_tensor(2).requires_grad_();
  testing::expect_error<Error>([&] { op.call(leaf, 3.0); }, "[mut_ops::scale_] a leaf tensor that requires grad");
  testing::expect_error<Error>([&] { call("mut_ops::scale_", leaf, 3.0); },
                               "[mut_ops::scale_] a leaf tensor that requires grad");
  CHECK(leaf.item<float>() == 2.0f);
  NoGradGuard no_grad;  // PyTorch's way to update a parameter
  op.call(leaf, 3.0);
  CHECK(leaf.item<float>() == 6.0f);
}

TEST_CASE("mutation: a view op whose kernel returns a copy is an error naming the op") {
  Library def("alias_ops", Library::DEF);
  def.def("same(Tensor(a) x) -> Tensor(a)");
  def.def("same_(Tensor(a!) x) -> Tensor(a!)");
  def.def("parts(Tensor(a) x) -> (Tensor(a), Tensor)");
  Library cpu("alias_ops", Library::IMPL, DispatchKey::CPU);
  cpu.impl("same", [](const Tensor& x) { return x.clone(); });
  cpu.impl("same_", [](const Tensor& x) { return x.view(x.sizes()); });
  cpu.impl("parts", [](const Tensor& x) { return std::tuple<Tensor, Tensor>(x.clone(), x); });
  Tensor x = ones({2});
  testing::expect_error<Error>([&] { find_op("alias_ops::same").typed<Tensor(const Tensor&)>().call(x); },
                               "[alias_ops::same]", {"does not share its storage"});
  testing::expect_error<Error>([&] { call("alias_ops::same", x); }, "[alias_ops::same]", {"does not share"});
  testing::expect_error<Error>([&] { find_op("alias_ops::same_").typed<Tensor(const Tensor&)>().call(x); },
                               "[alias_ops::same_]", {"itself"});
  testing::expect_error<Error>(
      [&] { find_op("alias_ops::parts").typed<std::tuple<Tensor, Tensor>(const Tensor&)>().call(x); },
      "[alias_ops::parts]", {"return 1"});
  {
    Library views("alias_ops", Library::IMPL, DispatchKey::CPU);
    views.impl("same", [](const Tensor& x) { return x.view(x.sizes()); });
    Tensor y = find_op("alias_ops::same").typed<Tensor(const Tensor&)>().call(x);
    CHECK(y.impl()->storage().get() == x.impl()->storage().get());
  }
}

TEST_CASE("mutation: a CompositeImplicitAutograd in-place op bumps through its inner ops only") {
  Library def("mut_composite", Library::DEF);
  def.def("inc_(Tensor(a!) x) -> Tensor(a!)", [](const Tensor& x) -> Tensor { return x.add_(1.0); });
  Tensor x = ones({2});
  const uint32_t before = x.version();
  find_op("mut_composite::inc_").typed<Tensor(const Tensor&)>().call(x);
  CHECK(x.version() == before + 1);
  CHECK(x.sum().item<float>() == 4.0f);
}
