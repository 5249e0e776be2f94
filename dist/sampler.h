#pragma once
// data::DistributedSampler: each rank's share of a data set, for a DataLoader.
//
//   data::DistributedSampler sampler(dataset.size());   // rank and world size from dist::
//   data::DataLoader loader(dataset, 64, sampler);
//   for (int epoch = 0; ...; ++epoch) { sampler.set_epoch(epoch); for (auto& [x, y] : loader) ... }
#include <cstdint>
#include <optional>
#include <vector>

#include <strata/nn/data.h>

namespace strata::data {

// As PyTorch's: the indices 0..dataset_size-1, shuffled by a generator seeded with seed +
// epoch (the same order on every rank), padded by repeating the first indices until every
// rank gets the same count (or, with drop_last, cut to a multiple of the ranks), and dealt
// out rank, rank + num_replicas, ... Call set_epoch at each epoch for a new shuffle.
class DistributedSampler : public Sampler {
 public:
  explicit DistributedSampler(size_t dataset_size, std::optional<int> num_replicas = {}, std::optional<int> rank = {},
                              bool shuffle = true, uint64_t seed = 0, bool drop_last = false);
  void set_epoch(uint64_t epoch) { epoch_ = epoch; }
  uint64_t epoch() const { return epoch_; }
  std::vector<int64_t> epoch_indices() override;
  size_t size() const override { return num_samples_; }  // this rank's examples per epoch
  int num_replicas() const { return num_replicas_; }
  int rank() const { return rank_; }

 private:
  size_t dataset_size_;
  int num_replicas_;
  int rank_;
  bool shuffle_;
  uint64_t seed_;
  bool drop_last_;
  uint64_t epoch_ = 0;
  size_t num_samples_;
};

}  // namespace strata::data
