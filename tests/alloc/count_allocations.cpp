// Heap allocations per op, counted by replacing the global operator new in this executable
// (strata_alloc_tests, not part of strata_tests, whose allocations must stay uncounted). See
// Note [Recording allocations] in autograd/function.h and Note [One allocation per tensor] in
// tensor/tensor_impl.h. Tensor data, and a new tensor's TensorImpl and Storage block, come from
// the CPU allocator's size-class cache (Note [Pooled small objects] in tensor/storage.cpp),
// which has its own tests; what is counted here is every other C++ object the call creates.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <strata/strata.h>

#include <cstdlib>
#include <new>

namespace {
thread_local bool counting = false;
thread_local long allocations = 0;

void* counted_allocation(std::size_t bytes) {
  if (counting) ++allocations;
  if (void* p = std::malloc(bytes ? bytes : 1)) return p;
  throw std::bad_alloc();
}
}  // namespace

void* operator new(std::size_t bytes) { return counted_allocation(bytes); }
void* operator new[](std::size_t bytes) { return counted_allocation(bytes); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }

using namespace strata;

namespace {

// Allocations made by one call of fn, after two warm-up calls (static op handles, thread-local
// caches and the size-class cache fill on first use).
template <class Fn>
long allocations_of(Fn&& fn) {
  fn();
  fn();
  allocations = 0;
  counting = true;
  fn();
  counting = false;
  return allocations;
}

}  // namespace

TEST_CASE("allocations: a new tensor comes from the pools, with no heap allocation") {
  CHECK(allocations_of([] { Tensor t = empty({4, 8}); }) == 0);
  CHECK(allocations_of([] { Tensor t = zeros({3}, TensorOptions(kFloat64)); }) == 0);
  CHECK(allocations_of([] { Tensor t = empty({2, 2}, TensorOptions().device(kMeta)); }) == 0);
  const Tensor a = randn({8}), b = randn({8});
  CHECK(allocations_of([&] { Tensor y = add(a, b); }) == 0);
  CHECK(allocations_of([&] { Tensor y = tanh(a); }) == 0);
  // A view shares the storage: one pooled TensorImpl, nothing else.
  CHECK(allocations_of([&] { Tensor v = a.narrow(0, 2, 4); }) == 0);
}

TEST_CASE("allocations: a view outlives its base's shared block") {
  Tensor view;
  {
    Tensor base = arange(0, 16, 1, TensorOptions(kFloat32));
    view = base.narrow(0, 4, 8);
  }  // base's TensorImpl is gone; its storage lives on in the same block
  CHECK(view.select(0, 0).item<float>() == 4.0f);
  CHECK(view.sum().item<float>() == 4 + 5 + 6 + 7 + 8 + 9 + 10 + 11);
}

// The recorded node, the output's AutogradMeta and a leaf's accumulator are pooled as well.
TEST_CASE("allocations: recording a differentiable op makes no heap allocation") {
  const Tensor a = randn({8}).requires_grad_(), b = randn({8}).requires_grad_();
  const Tensor w = randn({8, 8}).requires_grad_();
  // While a graph that uses the leaves is alive, their accumulators are shared (a training
  // step makes each parameter's accumulator once, at its first use).
  const Tensor keep = (a * b).sum() + w.sum();
  const Tensor h = a * b;  // a non-leaf input
  CHECK(allocations_of([&] { Tensor y = add(a, b); }) == 0);
  CHECK(allocations_of([&] { Tensor y = sub(a, b, 2.0); }) == 0);
  CHECK(allocations_of([&] { Tensor y = mul(a, b); }) == 0);
  CHECK(allocations_of([&] { Tensor y = a * 0.5; }) == 0);
  CHECK(allocations_of([&] { Tensor y = div(h, b); }) == 0);
  CHECK(allocations_of([&] { Tensor y = tanh(h); }) == 0);
  CHECK(allocations_of([&] { Tensor y = sigmoid(a); }) == 0);
  CHECK(allocations_of([&] { Tensor y = relu(h); }) == 0);
  CHECK(allocations_of([&] { Tensor y = exp(a); }) == 0);
  CHECK(allocations_of([&] { Tensor y = h.sum(); }) == 0);
  CHECK(allocations_of([&] { Tensor y = matmul(w, a); }) == 0);
  CHECK(allocations_of([&] { Tensor y = (h + 0.1); }) == 0);
  // The first use of a leaf in a graph adds its accumulator (pooled too).
  const Tensor fresh = randn({8}).requires_grad_();
  CHECK(allocations_of([&] { Tensor y = mul(fresh, h); }) == 0);
}

TEST_CASE("allocations: an op that records nothing costs only its output") {
  const Tensor a = randn({8}).requires_grad_();
  NoGradGuard no_grad;
  CHECK(allocations_of([&] { Tensor y = mul(a, a); }) == 0);
}

// Note [Engine bookkeeping]: the engine's table, stacks and ready queue are inline for a small
// graph, so backward allocates only the gradient lists that pass between Nodes and the tensors.
TEST_CASE("allocations: backward of a small graph allocates only gradients and their lists") {
  const Tensor a = ones({1}).requires_grad_(), b = ones({1}).requires_grad_();
  for (int warm_up = 0; warm_up < 2; ++warm_up) add(a, b).backward();  // the leaves' .grad exist
  const Tensor y = add(a, b);
  allocations = 0;
  counting = true;
  y.backward();
  counting = false;
  // The lists the Nodes receive and the one AddBackward returns are recycled ones (Note
  // [Recycled gradient lists]) and the leaves' gradients accumulate in place. Before the inline
  // bookkeeping it was 12, then 7 before tensors were pooled, 6 before the root's tensor and
  // gradient stopped being put in lists (Note [Backward from one output]), 4 before lists
  // were recycled, and 1 before backward functions took their result lists from the spares.
  CHECK(allocations == 0);
}

TEST_CASE("allocations: a chain's backward takes every gradient list from the spares") {
  const Tensor x = ones({4}).requires_grad_(), w = full({4}, 0.5).requires_grad_();
  auto chain = [&] { return (tanh(x * w) * 0.5 + 0.1).sum(); };
  for (int warm_up = 0; warm_up < 2; ++warm_up) chain().backward();
  const Tensor y = chain();
  allocations = 0;
  counting = true;
  y.backward();
  counting = false;
  CHECK(allocations == 0);
}
