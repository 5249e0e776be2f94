// Tests for dist/ddp.cpp, run by every rank of a two-rank job: data-parallel training must
// give the parameters one process gets training on the global batch.
#include <doctest/doctest.h>

#include <functional>

#include "../test_util.h"

using namespace strata;

namespace {

nn::Sequential make_mlp(uint64_t seed) {
  manual_seed(seed);
  return nn::Sequential(nn::Linear(6, 16), nn::Tanh(), nn::Linear(16, 3));
}

struct Batch {
  Tensor x, y;
};

// The global batch of `step` (the same on every rank) and this rank's share of it.
Batch global_batch(int step, int64_t per_rank) {
  manual_seed(1000 + step);
  const int64_t rows = per_rank * dist::world_size();
  return {randn({rows, 6}), randn({rows, 3})};
}
Batch local_batch(const Batch& global, int64_t per_rank) {
  const int64_t first = dist::rank() * per_rank;
  return {global.x.narrow(0, first, per_rank), global.y.narrow(0, first, per_rank)};
}

void check_same_parameters(const nn::Sequential& a, const nn::Sequential& b) {
  tensor_list pa = a.parameters(), pb = b.parameters();
  REQUIRE(pa.size() == pb.size());
  for (size_t i = 0; i < pa.size(); ++i) {
    CAPTURE(i);
    CHECK(allclose(pa[i], pb[i], 1e-4, 1e-6));
  }
}

using MakeOptimizer = std::function<std::unique_ptr<optim::Optimizer>(const tensor_list&)>;

// Trains a DDP replica on each rank's share and a reference on the global batch, `steps` steps.
void check_matches_global_batch(const MakeOptimizer& make_optimizer, dist::DistributedDataParallelOptions options) {
  nn::Sequential reference = make_mlp(7);
  nn::Sequential replica = make_mlp(7 + dist::rank());  // rank 1 starts elsewhere: DDP broadcasts rank 0's
  auto ddp = dist::DistributedDataParallel(replica, options);
  check_same_parameters(reference, replica);
  auto reference_optimizer = make_optimizer(reference.parameters());
  auto replica_optimizer = make_optimizer(ddp.parameters());
  for (int step = 0; step < 5; ++step) {
    Batch global = global_batch(step, 8);
    Batch local = local_batch(global, 8);
    reference_optimizer->zero_grad();
    mse_loss(reference.forward(global.x), global.y).backward();
    reference_optimizer->step();
    replica_optimizer->zero_grad();
    mse_loss(ddp.forward(local.x), local.y).backward();
    replica_optimizer->step();
  }
  check_same_parameters(reference, replica);
}

}  // namespace

TEST_CASE("DistributedDataParallel: SGD on each rank's share matches SGD on the global batch") {
  check_matches_global_batch([](const tensor_list& p) {
    return std::make_unique<optim::SGD>(p, optim::SGDOptions(0.1).momentum(0.9));
  }, {});
}

TEST_CASE("DistributedDataParallel: Adam matches too, with gradients in several small buckets") {
  auto options = dist::DistributedDataParallelOptions().bucket_cap_mb(0.0005);  // 512 bytes
  nn::Sequential probe = make_mlp(7);
  CHECK(dist::DistributedDataParallel(probe, options).bucket_count() > 1);
  check_matches_global_batch([](const tensor_list& p) {
    return std::make_unique<optim::Adam>(p, optim::AdamOptions(1e-2));
  }, options);
}

TEST_CASE("DistributedDataParallel: no_sync accumulates locally, then the synced step averages the sum") {
  nn::Sequential reference = make_mlp(3);
  nn::Sequential replica = make_mlp(3);
  auto ddp = dist::DistributedDataParallel(replica);
  Batch first = global_batch(0, 4), second = global_batch(1, 4);
  mse_loss(reference.forward(first.x), first.y).backward();
  mse_loss(reference.forward(second.x), second.y).backward();
  {
    auto guard = ddp.no_sync();
    Batch local = local_batch(first, 4);
    mse_loss(ddp.forward(local.x), local.y).backward();
  }
  Tensor local_only = replica.parameters()[0].grad().clone();  // this rank's first micro-batch alone
  Batch local = local_batch(second, 4);
  mse_loss(ddp.forward(local.x), local.y).backward();
  tensor_list want = reference.parameters(), got = replica.parameters();
  for (size_t i = 0; i < want.size(); ++i) {
    CAPTURE(i);
    CHECK(allclose(got[i].grad(), want[i].grad(), 1e-4, 1e-6));
  }
  if (dist::world_size() > 1) CHECK(!allclose(local_only, want[0].grad(), 1e-4, 1e-6));
}

namespace {
struct TwoHeadsImpl : nn::Module {
  nn::Linear used{nullptr}, unused{nullptr};
  TwoHeadsImpl() {
    used = register_module("used", nn::Linear(4, 2));
    unused = register_module("unused", nn::Linear(4, 2));
  }
  Tensor forward(const Tensor& x) { return used->forward(x); }
};
STRATA_MODULE(TwoHeads);
}  // namespace

TEST_CASE("DistributedDataParallel: parameters without a gradient need find_unused_parameters") {
  manual_seed(5);
  TwoHeads net;
  auto ddp = dist::DistributedDataParallel(net, dist::DistributedDataParallelOptions().find_unused_parameters(true));
  for (int step = 0; step < 2; ++step) {
    ddp.zero_grad();
    ddp.forward(ones({3, 4})).sum().backward();
    CHECK(allclose(net->used->weight.grad(), full({2, 4}, 3.0)));
    CHECK(allclose(net->unused->weight.grad(), zeros({2, 4})));
  }
  TwoHeads strict;
  auto strict_ddp = dist::DistributedDataParallel(strict);
  strict_ddp.forward(ones({3, 4})).sum().backward();
  strata::testing::expect_error<Error>([&] { strict_ddp.forward(ones({3, 4})); }, "[DistributedDataParallel]",
                                       {"unused.weight", "find_unused_parameters"});
  strict_ddp.forward(ones({3, 4}));  // the error reset the step: evaluation without backward is fine
  strict_ddp.forward(ones({3, 4}));
}

TEST_CASE("DistributedDataParallel: every rank must wrap the same model") {
  if (dist::world_size() < 2) return;
  manual_seed(1);
  nn::Sequential net = dist::rank() == 0 ? make_mlp(1) : nn::Sequential(nn::Linear(6, 3));
  strata::testing::expect_error<ValueError>([&] { auto ddp = dist::DistributedDataParallel(net); }, "[DistributedDataParallel]",
                                            {"rank 1 has 2 parameters (21 elements)", "rank 0 has 4 (163 elements)"});
}
