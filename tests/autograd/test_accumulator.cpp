// A leaf's AccumulateGrad (Note [Kept accumulators] in autograd/variable.cpp): one per leaf,
// shared by all its graphs; a graph keeps its leaves alive and a leaf does not keep its graphs
// alive; set_data to another dtype or shape starts a new one for later graphs.
#include <doctest/doctest.h>

#include <strata/strata.h>

#include <vector>

#include "../test_util.h"

using namespace strata;

namespace {

// `output` is leaf * scalar: its grad_fn's first edge leads to the leaf's accumulator.
std::shared_ptr<autograd::Node> accumulator_of(const Tensor& output) {
  return output.grad_fn()->next_edges().at(0).function;
}

// A leaf over memory whose release the test sees.
Tensor watched_leaf(std::vector<float>& data, bool& released) {
  return from_blob(data.data(), {static_cast<int64_t>(data.size())}, [&released](void*) { released = true; },
                   TensorOptions().requires_grad(true));
}

}  // namespace

TEST_CASE("kept accumulators: a leaf has one AccumulateGrad for its graphs, at once and one after another") {
  Tensor w = ones({3}).requires_grad_();
  Tensor a = w * 2.0;
  Tensor b = w * 3.0;
  std::shared_ptr<autograd::Node> first = accumulator_of(a);
  CHECK(first->name() == "AccumulateGrad");
  CHECK(accumulator_of(b).get() == first.get());
  a.sum().backward();
  b.sum().backward();
  CHECK(equal(w.grad(), full({3}, 5.0)));

  const autograd::Node* kept = first.get();
  first.reset();
  a = Tensor();
  b = Tensor();  // every graph that held the accumulator is gone
  Tensor c = w * 4.0;
  CHECK(accumulator_of(c).get() == kept);
  CHECK(static_cast<const autograd::AccumulateGrad&>(*accumulator_of(c)).variable().impl() == w.impl());
  c.sum().backward();
  CHECK(equal(w.grad(), full({3}, 9.0)));
}

TEST_CASE("kept accumulators: a graph keeps its leaves alive, and a leaf does not keep its graphs alive") {
  std::vector<float> data{1, 2, 3};
  bool released = false;
  int hook_runs = 0;
  Tensor y;
  {
    Tensor leaf = watched_leaf(data, released);
    leaf.register_hook([&hook_runs](const Tensor&) {
      ++hook_runs;
      return Tensor();
    });
    y = (leaf * 2.0).sum();
  }
  CHECK_FALSE(released);  // y's graph holds the leaf the caller dropped
  y.backward();
  CHECK(hook_runs == 1);  // and its hook still runs
  y = Tensor();
  CHECK(released);  // no cycle through the accumulator the leaf keeps

  released = false;
  {
    Tensor leaf = watched_leaf(data, released);
    (leaf * 2.0).sum().backward();
    (leaf * 3.0).sum().backward();
    CHECK(equal(leaf.grad(), full({3}, 5.0)));
  }
  CHECK(released);
}

TEST_CASE("kept accumulators: set_data to another dtype or shape gives later graphs a new accumulator") {
  Tensor w = ones({2}).requires_grad_();
  Tensor before = w * 3.0;
  std::shared_ptr<autograd::Node> old_node = accumulator_of(before);
  CHECK(old_node->output_metadata(0).dtype == kFloat32);

  w.set_data(ones({2}, kFloat64));
  Tensor after = w * 2.0;
  std::shared_ptr<autograd::Node> new_node = accumulator_of(after);
  CHECK(new_node.get() != old_node.get());
  CHECK(new_node->output_metadata(0).dtype == kFloat64);
  CHECK(old_node->output_metadata(0).dtype == kFloat32);  // the earlier graph keeps its own
  after.sum().backward();
  CHECK(w.grad().dtype() == kFloat64);
  CHECK(equal(w.grad(), full({2}, 2.0, kFloat64)));

  w.set_data(zeros({2}, kFloat64));  // same dtype, shape and device: the same accumulator
  CHECK(accumulator_of(w * 1.0).get() == new_node.get());
  w.set_data(zeros({5}, kFloat64));
  Tensor longer = w * 1.0;
  CHECK(accumulator_of(longer).get() != new_node.get());
  CHECK(accumulator_of(longer)->output_metadata(0).shape.ref() == IntArrayRef{5});
}
