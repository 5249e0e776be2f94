// Tests for dist/sampler.cpp.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "../test_util.h"

using namespace strata;

TEST_CASE("DistributedSampler: ranks share the indices, padded to equal counts as PyTorch does") {
  using Indices = std::vector<int64_t>;
  data::DistributedSampler r0(10, 3, 0, /*shuffle=*/false), r1(10, 3, 1, false), r2(10, 3, 2, false);
  CHECK(r0.size() == 4);
  CHECK(r0.epoch_indices() == Indices{0, 3, 6, 9});
  CHECK(r1.epoch_indices() == Indices{1, 4, 7, 0});
  CHECK(r2.epoch_indices() == Indices{2, 5, 8, 1});
  data::DistributedSampler dropping(10, 3, 2, false, 0, /*drop_last=*/true);
  CHECK(dropping.size() == 3);
  CHECK(dropping.epoch_indices() == Indices{2, 5, 8});
  data::DistributedSampler tiny(1, 3, 2, false);  // padding repeats the data set as often as needed
  CHECK(tiny.epoch_indices() == Indices{0});
}

TEST_CASE("DistributedSampler: shuffles the same way on every rank, anew with set_epoch") {
  data::DistributedSampler a(100, 2, 0), b(100, 2, 1);
  std::vector<int64_t> first_a = a.epoch_indices(), first_b = b.epoch_indices();
  std::set<int64_t> all(first_a.begin(), first_a.end());
  all.insert(first_b.begin(), first_b.end());
  CHECK(all.size() == 100);  // disjoint shares covering the data set
  CHECK(a.epoch_indices() == first_a);  // same epoch, same order
  a.set_epoch(1);
  CHECK(a.epoch_indices() != first_a);
}

TEST_CASE("DistributedSampler: defaults to dist's rank and world size and feeds a DataLoader") {
  const int w = dist::world_size();
  data::TensorDataset ds(arange(12, kInt64).reshape({6, 2}), arange(6, kInt64));
  data::DistributedSampler sampler(ds.size(), {}, {}, /*shuffle=*/false);
  CHECK(sampler.num_replicas() == w);
  CHECK(sampler.rank() == dist::rank());
  data::DataLoader loader(ds, 2, sampler);
  std::vector<int64_t> seen;
  for (auto& [x, y] : loader)
    for (int64_t i = 0; i < y.numel(); ++i) seen.push_back(y.data_ptr<int64_t>()[i]);
  CHECK(seen.size() == sampler.size());
  for (size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == static_cast<int64_t>((dist::rank() + i * w) % 6));
  strata::testing::expect_error<ValueError>([] { data::DistributedSampler(5, 2, 2); }, "[DistributedSampler]",
                                            {"rank", "[0, 2)", "2"});
}
