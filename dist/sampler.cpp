// data::DistributedSampler (see dist/sampler.h).
#include <numeric>
#include <random>

#include <strata/dist/dist.h>

namespace strata::data {

DistributedSampler::DistributedSampler(size_t dataset_size, std::optional<int> num_replicas, std::optional<int> rank,
                                       bool shuffle, uint64_t seed, bool drop_last)
    : dataset_size_(dataset_size), shuffle_(shuffle), seed_(seed), drop_last_(drop_last) {
  STRATA_CHECK((num_replicas && rank) || dist::is_initialized(), "[DistributedSampler] dist::init() has not been "
               "called; call it first or pass num_replicas and rank");
  num_replicas_ = num_replicas ? *num_replicas : dist::world_size();
  rank_ = rank ? *rank : dist::rank();
  STRATA_CHECK_VALUE(num_replicas_ > 0, "[DistributedSampler] num_replicas must be positive, got ", num_replicas_);
  STRATA_CHECK_VALUE(rank_ >= 0 && rank_ < num_replicas_, "[DistributedSampler] rank must be in [0, ", num_replicas_,
                     "), got ", rank_);
  const auto replicas = static_cast<size_t>(num_replicas_);
  num_samples_ = drop_last_ ? dataset_size_ / replicas : (dataset_size_ + replicas - 1) / replicas;
}

std::vector<int64_t> DistributedSampler::epoch_indices() {
  std::vector<int64_t> indices(dataset_size_);
  std::iota(indices.begin(), indices.end(), int64_t{0});
  if (shuffle_ && indices.size() > 1) {  // the same Fisher-Yates on every rank: one seed, one order
    std::mt19937_64 engine(seed_ + epoch_);
    for (size_t i = indices.size() - 1; i > 0; --i) std::swap(indices[i], indices[engine() % (i + 1)]);
  }
  const size_t total = num_samples_ * static_cast<size_t>(num_replicas_);
  if (indices.empty()) return {};
  for (size_t i = 0; indices.size() < total; ++i) indices.push_back(indices[i]);  // pad by repeating
  indices.resize(total);
  std::vector<int64_t> mine;
  mine.reserve(num_samples_);
  for (size_t i = static_cast<size_t>(rank_); i < total; i += static_cast<size_t>(num_replicas_)) mine.push_back(indices[i]);
  return mine;
}

}  // namespace strata::data
