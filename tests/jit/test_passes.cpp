// Graph passes: dead code, common subexpressions, constant folding, and their safety rules.
#include <doctest/doctest.h>

#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;

namespace {

size_t count_of(const std::string& text, const std::string& what) {
  size_t count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

}  // namespace

TEST_CASE("jit::eliminate_dead_code: removes unused pure nodes, keeps mutations") {
  auto fn = [](const tensor_list& in) -> tensor_list {
    Tensor unused = in[0].exp() * 3.0;  // computed, never returned
    in[1].add_(1.0);                     // changes an input: a visible effect
    return {in[0] + 1.0};
  };
  Tensor x = randn({4}), counter = zeros({4});
  jit::Graph g = jit::trace(fn, {x, counter});
  REQUIRE(count_of(g.str(), "strata::exp") == 1);
  CHECK(jit::eliminate_dead_code(g) == 2);
  const std::string text = g.str();
  INFO(text);
  CHECK(count_of(text, "strata::exp") == 0);
  CHECK(count_of(text, "strata::add_.Scalar") == 1);
  Tensor fresh = zeros({4});
  CHECK(equal(g.run({x, fresh})[0], x + 1.0));
  CHECK(equal(fresh, ones({4})));
}

TEST_CASE("jit::eliminate_common_subexpressions: merges equal pure nodes") {
  auto fn = [](const tensor_list& in) -> tensor_list {
    Tensor a = in[0].exp() + in[0].exp();
    Tensor b = (in[0] * 2.0) + (in[0] * 3.0);  // different constants: not equal
    return {a, b};
  };
  Tensor x = randn({5});
  jit::Graph g = jit::trace(fn, {x});
  CHECK(jit::eliminate_common_subexpressions(g) == 1);
  const std::string text = g.str();
  INFO(text);
  CHECK(count_of(text, "strata::exp") == 1);
  CHECK(count_of(text, "strata::mul.Scalar") == 2);
  tensor_list eager = fn({x}), replayed = g.run({x});
  CHECK(equal(eager[0], replayed[0]));
  CHECK(equal(eager[1], replayed[1]));
}

TEST_CASE("jit::eliminate_common_subexpressions: never merges random ops or values that are mutated") {
  auto random_fn = [](const tensor_list& in) -> tensor_list { return {rand_like(in[0]) - rand_like(in[0])}; };
  jit::Graph random = jit::trace(random_fn, {randn({8})});
  CHECK(jit::eliminate_common_subexpressions(random) == 0);
  CHECK_FALSE(equal(random.run({randn({8})})[0], zeros({8})));

  auto mutating_fn = [](const tensor_list& in) -> tensor_list {
    Tensor a = in[0] * 2.0;
    a.add_(1.0);  // a's class is mutated: a * 2.0 below must stay its own node
    Tensor b = in[0] * 2.0;
    return {a + b};
  };
  Tensor x = randn({3});
  jit::Graph g = jit::trace(mutating_fn, {x});
  CHECK(jit::eliminate_common_subexpressions(g) == 0);
  CHECK(equal(g.run({x})[0], mutating_fn({x})[0]));
}

TEST_CASE("jit::fold_constants: evaluates constant subgraphs once, never captured tensors") {
  Tensor w = randn({3});
  auto fn = [&](const tensor_list& in) -> tensor_list {
    Tensor c = ones({3}) * 2.0 + arange(3.0);  // constant: folded
    return {in[0] * c + w * 2.0};              // w is captured: it may change between runs
  };
  Tensor x = randn({3});
  jit::Graph g = jit::trace(fn, {x});
  CHECK(jit::fold_constants(g) == 4);  // ones, mul, arange, add
  jit::eliminate_dead_code(g);
  const std::string text = g.str();
  INFO(text);
  CHECK(count_of(text, "strata::ones") == 0);
  CHECK(count_of(text, "strata::mul.Scalar") == 1);  // w * 2.0 stays
  CHECK(equal(g.run({x})[0], fn({x})[0]));
  w.add_(1.0);  // the parameter changes: the graph follows
  CHECK(equal(g.run({x})[0], fn({x})[0]));
}

TEST_CASE("jit::fold_constants: a constant that is later mutated is not folded") {
  auto fn = [](const tensor_list& in) -> tensor_list {
    Tensor acc = zeros({2});
    acc.add_(in[0]);
    return {acc};
  };
  Tensor x = randn({2});
  jit::Graph g = jit::trace(fn, {x});
  CHECK(jit::fold_constants(g) == 0);
  CHECK(equal(g.run({x})[0], x));
  CHECK(equal(g.run({x})[0], x));  // a folded zeros would have accumulated 2x here
}
