#pragma once
// Data sets, batching, and readers for common file formats (IDX as used by MNIST and
// Fashion-MNIST, numeric CSV), plain or gzip-compressed.
//
//   data::TensorDataset ds(images, labels);
//   data::DataLoader loader(ds, /*batch_size=*/64, /*shuffle=*/true);
//   for (auto& [xb, yb] : loader) { ... }   // each begin() starts a new epoch
#include <concepts>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include <strata/tensor/tensor.h>

namespace strata::data {

struct Example {
  Tensor data;
  Tensor target;
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual Example get(size_t index) const = 0;
  virtual size_t size() const = 0;
  // The examples at `indices` stacked along a new dim 0. The default calls get() per index;
  // override it when a whole batch can be gathered at once.
  virtual Example get_batch(std::span<const int64_t> indices) const;
};

// Example i is (data[i], targets[i]); both tensors share their first dimension.
class TensorDataset : public Dataset {
 public:
  TensorDataset(Tensor data, Tensor targets);
  Example get(size_t index) const override;
  size_t size() const override;
  Example get_batch(std::span<const int64_t> indices) const override;  // one index_select each
  const Tensor& data() const { return data_; }
  const Tensor& targets() const { return targets_; }

 private:
  Tensor data_;
  Tensor targets_;
};

// Chooses which examples an epoch visits, and in what order (data::DistributedSampler gives
// each process of a data-parallel job its own shard). A DataLoader borrows its sampler and
// asks it for a fresh order at each begin().
class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual std::vector<int64_t> epoch_indices() = 0;  // indices into the dataset
  virtual size_t size() const = 0;                   // how many epoch_indices() returns
};

// Batches of a dataset. A loader built from an lvalue borrows it (the dataset must outlive the
// loader); one built from a temporary or a shared_ptr shares ownership.
class DataLoader {
 public:
  class Iterator {
   public:
    using iterator_category = std::input_iterator_tag;
    using value_type = Example;
    using difference_type = std::ptrdiff_t;
    using pointer = Example*;
    using reference = Example&;

    Iterator() = default;
    Example& operator*() { return current_; }
    Example* operator->() { return &current_; }
    Iterator& operator++();
    bool operator==(const Iterator& other) const { return batch_ == other.batch_; }

   private:
    friend class DataLoader;
    Iterator(const DataLoader* loader, size_t batch);
    const DataLoader* loader_ = nullptr;
    size_t batch_ = 0;
    Example current_;
  };

  DataLoader(const Dataset& dataset, int64_t batch_size, bool shuffle = false, bool drop_last = false);
  DataLoader(std::shared_ptr<const Dataset> dataset, int64_t batch_size, bool shuffle = false, bool drop_last = false);
  template <class D>
    requires std::derived_from<std::remove_cvref_t<D>, Dataset> && (!std::is_lvalue_reference_v<D>)
  DataLoader(D&& dataset, int64_t batch_size, bool shuffle = false, bool drop_last = false)
      : DataLoader(std::shared_ptr<const Dataset>(std::make_shared<std::remove_cvref_t<D>>(std::move(dataset))),
                   batch_size, shuffle, drop_last) {}
  // Batches in the order `sampler` gives (it must outlive the loader and index this dataset).
  DataLoader(const Dataset& dataset, int64_t batch_size, Sampler& sampler, bool drop_last = false);
  DataLoader(std::shared_ptr<const Dataset> dataset, int64_t batch_size, Sampler& sampler, bool drop_last = false);

  // Starts an epoch: with shuffle, a fresh permutation drawn from the global generator
  // (reproducible after manual_seed).
  Iterator begin();
  Iterator end() const;
  size_t size() const;  // batches per epoch
  int64_t batch_size() const { return batch_size_; }
  const Dataset& dataset() const { return *dataset_; }

 private:
  Example load_batch(size_t batch) const;

  std::shared_ptr<const Dataset> dataset_;
  int64_t batch_size_;
  bool shuffle_;
  bool drop_last_;
  Sampler* sampler_ = nullptr;  // borrowed; null: every example, shuffled or not
  std::vector<int64_t> order_;  // this epoch's example order
};

// IDX files (MNIST's format): magic 0 0 <type> <ndim>, big-endian u32 dims, big-endian data.
// u8 -> UInt8, i8 -> Int8, i16 -> Int16, i32 -> Int32, f32 -> Float32, f64 -> Float64. gzip files are detected by
// their magic bytes and decompressed.
Tensor read_idx(const std::string& path);
Tensor read_idx_bytes(std::span<const uint8_t> bytes, std::string_view source = "<memory>");

// MNIST or Fashion-MNIST (same file names, optionally .gz) from `directory`: images Float32
// [N, 1, 28, 28] scaled to [0, 1], labels Int64 [N]. train: the 60000 training examples,
// else the 10000 test examples.
Example load_mnist(const std::string& directory, bool train);

// A numeric CSV file (plain or gzip) as a [rows, columns] tensor of `dtype` (Float32 or
// Float64). Blank lines are skipped; `header` skips the first line.
Tensor read_csv(const std::string& path, ScalarType dtype = kFloat32, bool header = false);
Tensor parse_csv(std::string_view text, ScalarType dtype = kFloat32, bool header = false,
                 std::string_view source = "<memory>");

// The UCI handwritten digits CSV (64 pixels 0..16, then the label; samples/data/digits.csv.gz):
// images Float32 [N, 64] scaled to [0, 1] (divided by 16), labels Int64 [N].
Example load_digits(const std::string& path);

// A file's bytes, gunzipped when it starts with the gzip magic. Errors name `op` and the path.
std::vector<uint8_t> read_maybe_gzip(const std::string& path, const char* op);

}  // namespace strata::data
