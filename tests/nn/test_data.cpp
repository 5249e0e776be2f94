// Tests for nn/data.cpp: TensorDataset, DataLoader, and the IDX and CSV readers.
#include <doctest/doctest.h>

#include <strata/nn/data.h>
#include <strata/ops/ops.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "../test_util.h"

using namespace strata;
using strata::testing::expect_error;

namespace {

using Bytes = std::vector<uint8_t>;
const std::string kFashionMnist = "/usr/share/datasets/fashion-mnist";

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("strata_test_data_" + name)).string();
}

void write_file(const std::string& path, const Bytes& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
}
void write_text(const std::string& path, const std::string& text) { write_file(path, Bytes(text.begin(), text.end())); }

uint32_t crc32(const Bytes& bytes) {
  uint32_t crc = 0xffffffffu;
  for (uint8_t byte : bytes) {
    crc ^= byte;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1u)));
  }
  return ~crc;
}

// A gzip member (RFC 1952) holding `data` in one stored (uncompressed) deflate block (RFC 1951).
Bytes gzip_stored(const Bytes& data) {
  Bytes out = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff, 0x01};
  uint16_t length = static_cast<uint16_t>(data.size());
  for (uint16_t value : {length, static_cast<uint16_t>(~length)}) {
    out.push_back(value & 0xff);
    out.push_back(value >> 8);
  }
  out.insert(out.end(), data.begin(), data.end());
  for (uint32_t value : {crc32(data), static_cast<uint32_t>(data.size())})
    for (int i = 0; i < 4; ++i) out.push_back((value >> (8 * i)) & 0xff);
  return out;
}

std::vector<int64_t> int64_values(const Tensor& t) {
  Tensor c = t.to(kInt64).contiguous();
  return std::vector<int64_t>(c.data_ptr<int64_t>(), c.data_ptr<int64_t>() + c.numel());
}
std::vector<double> double_values(const Tensor& t) {
  Tensor c = t.to(kFloat64).contiguous();
  return std::vector<double>(c.data_ptr<double>(), c.data_ptr<double>() + c.numel());
}

// samples/data/digits.csv.gz, searched for above the working directory and the test binary.
std::string find_digits() {
  for (std::filesystem::path start : {std::filesystem::current_path(), std::filesystem::read_symlink("/proc/self/exe")}) {
    for (std::filesystem::path dir = start; !dir.empty(); dir = dir.parent_path()) {
      std::filesystem::path candidate = dir / "samples" / "data" / "digits.csv.gz";
      if (std::filesystem::exists(candidate)) return candidate.string();
      if (dir == dir.parent_path()) break;
    }
  }
  return {};
}

// Example i is ({i, 10 * i}, i % 3): checks batching through Dataset's default get_batch.
struct CountingDataset : data::Dataset {
  size_t count;
  explicit CountingDataset(size_t n) : count(n) {}
  data::Example get(size_t index) const override {
    auto i = static_cast<int64_t>(index);
    return {tensor(std::vector<int64_t>{i, 10 * i}, {2}, kInt64), tensor(std::vector<int64_t>{i % 3}, {}, kInt64)};
  }
  size_t size() const override { return count; }
};

}  // namespace

TEST_CASE("data: TensorDataset yields rows and checks its sizes") {
  Tensor images = arange(12, kFloat32).reshape({4, 3});
  Tensor labels = tensor(std::vector<int64_t>{5, 6, 7, 8}, {4}, kInt64);
  data::TensorDataset ds(images, labels);
  CHECK(ds.size() == 4);
  auto [x, y] = ds.get(2);
  CHECK(double_values(x) == std::vector<double>{6, 7, 8});
  CHECK(y.item<int64_t>() == 7);
  expect_error<IndexError>([&] { ds.get(4); }, "[TensorDataset]", {"index 4", "4 examples"});
  expect_error<ValueError>([&] { data::TensorDataset(images, zeros({3})); }, "[TensorDataset]", {"4", "3"});
}

TEST_CASE("data: DataLoader batches in order without shuffle") {
  data::TensorDataset ds(arange(10, kInt64).reshape({5, 2}), arange(5, kInt64));
  data::DataLoader loader(ds, 2);
  CHECK(loader.size() == 3);
  std::vector<std::vector<int64_t>> targets;
  for (auto& [xb, yb] : loader) {
    CHECK(xb.dim() == 2);
    CHECK(xb.size(0) == yb.size(0));
    targets.push_back(int64_values(yb));
  }
  CHECK(targets == std::vector<std::vector<int64_t>>{{0, 1}, {2, 3}, {4}});
  data::DataLoader dropping(ds, 2, false, true);
  CHECK(dropping.size() == 2);
  int batches = 0;
  for (auto& [xb, yb] : dropping) {
    CHECK(xb.size(0) == 2);
    ++batches;
  }
  CHECK(batches == 2);
  expect_error<ValueError>([&] { data::DataLoader(ds, 0); }, "[DataLoader]", {"batch_size", "0"});
}

// Visits the examples given at construction, in reverse each epoch after the first.
struct ListSampler : data::Sampler {
  explicit ListSampler(std::vector<int64_t> order) : order(std::move(order)) {}
  std::vector<int64_t> epoch_indices() override {
    if (epochs++ > 0) std::reverse(order.begin(), order.end());
    return order;
  }
  size_t size() const override { return order.size(); }
  std::vector<int64_t> order;
  int epochs = 0;
};

TEST_CASE("data: a DataLoader with a sampler batches the sampler's indices, asking at each epoch") {
  data::TensorDataset ds(arange(10, kInt64).reshape({5, 2}), arange(5, kInt64));
  ListSampler sampler({4, 0, 2});
  data::DataLoader loader(ds, 2, sampler);
  CHECK(loader.size() == 2);
  std::vector<std::vector<int64_t>> targets;
  for (auto& [xb, yb] : loader) targets.push_back(int64_values(yb));
  CHECK(targets == std::vector<std::vector<int64_t>>{{4, 0}, {2}});
  targets.clear();
  for (auto& [xb, yb] : loader) targets.push_back(int64_values(yb));
  CHECK(targets == std::vector<std::vector<int64_t>>{{2, 0}, {4}});
  data::DataLoader dropping(ds, 2, sampler, /*drop_last=*/true);
  CHECK(dropping.size() == 1);
  ListSampler bad({1, 5});
  data::DataLoader out_of_range(ds, 2, bad);
  expect_error<IndexError>([&] { out_of_range.begin(); }, "[DataLoader]", {"index 5", "5 examples"});
}

TEST_CASE("data: shuffled epochs are permutations, new each epoch, reproducible by seed") {
  data::TensorDataset ds(arange(100, kInt64).reshape({50, 2}), arange(50, kInt64));
  data::DataLoader loader(ds, 8, true);
  auto epoch = [&] {
    std::vector<int64_t> order;
    for (auto& [xb, yb] : loader) {
      std::vector<int64_t> rows = int64_values(xb), targets = int64_values(yb);
      for (size_t i = 0; i < targets.size(); ++i) CHECK(rows[2 * i] == 2 * targets[i]);  // rows stay paired
      order.insert(order.end(), targets.begin(), targets.end());
    }
    return order;
  };
  manual_seed(7);
  std::vector<int64_t> first = epoch(), second = epoch();
  std::vector<int64_t> sorted = first;
  std::sort(sorted.begin(), sorted.end());
  CHECK(sorted == int64_values(arange(50, kInt64)));
  CHECK(first != second);
  manual_seed(7);
  CHECK(epoch() == first);
}

TEST_CASE("data: the default get_batch stacks examples; temporaries are owned") {
  data::DataLoader loader(CountingDataset(5), 3);  // the loader keeps the temporary alive
  std::vector<Tensor> data_batches;
  for (auto& [xb, yb] : loader) {
    data_batches.push_back(xb);
    CHECK(yb.dim() == 1);
  }
  REQUIRE(data_batches.size() == 2);
  CHECK(data_batches[0].sizes().vec() == std::vector<int64_t>{3, 2});
  CHECK(int64_values(data_batches[1]) == std::vector<int64_t>{3, 30, 4, 40});
  auto shared = std::make_shared<CountingDataset>(0);
  data::DataLoader empty_loader(shared, 4);
  CHECK(empty_loader.size() == 0);
  CHECK(empty_loader.begin() == empty_loader.end());
}

TEST_CASE("data: read_idx reads hand-made IDX files, plain and gzip") {
  Bytes u8 = {0, 0, 0x08, 2, 0, 0, 0, 2, 0, 0, 0, 3, 1, 2, 3, 4, 5, 255};
  std::string path = temp_path("u8.idx");
  write_file(path, u8);
  Tensor t = data::read_idx(path);
  CHECK(t.dtype() == kUInt8);
  CHECK(t.sizes().vec() == std::vector<int64_t>{2, 3});
  CHECK(int64_values(t) == std::vector<int64_t>{1, 2, 3, 4, 5, 255});
  write_file(path + ".gz", gzip_stored(u8));
  CHECK(int64_values(data::read_idx(path + ".gz")) == int64_values(t));

  Tensor i16 = data::read_idx_bytes(Bytes{0, 0, 0x0B, 1, 0, 0, 0, 2, 0xff, 0xfe, 0x01, 0x00});
  CHECK(i16.dtype() == kInt16);
  CHECK(int64_values(i16) == std::vector<int64_t>{-2, 256});
  Tensor i8 = data::read_idx_bytes(Bytes{0, 0, 0x09, 1, 0, 0, 0, 2, 0x80, 0x7f});
  CHECK(i8.dtype() == kInt8);
  CHECK(int64_values(i8) == std::vector<int64_t>{-128, 127});
  Tensor i32 = data::read_idx_bytes(Bytes{0, 0, 0x0C, 1, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xfb});
  CHECK(int64_values(i32) == std::vector<int64_t>{-5});
  Tensor f32 = data::read_idx_bytes(Bytes{0, 0, 0x0D, 0, 0x3f, 0xc0, 0, 0});
  CHECK(f32.dim() == 0);
  CHECK(f32.item<float>() == 1.5f);
  Tensor f64 = data::read_idx_bytes(Bytes{0, 0, 0x0E, 1, 0, 0, 0, 1, 0xc0, 0x04, 0, 0, 0, 0, 0, 0});
  CHECK(double_values(f64) == std::vector<double>{-2.5});
  std::remove(path.c_str());
  std::remove((path + ".gz").c_str());
}

TEST_CASE("data: read_idx rejects truncated and corrupt files") {
  Bytes valid = {0, 0, 0x0C, 2, 0, 0, 0, 1, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0, 2};
  for (size_t length = 0; length < valid.size(); ++length) {
    INFO("length ", length);
    expect_error<ValueError>([&] { data::read_idx_bytes(std::span(valid.data(), length), "cut.idx"); }, "[read_idx] cut.idx");
  }
  expect_error<ValueError>([] { data::read_idx_bytes(Bytes{0, 1, 8, 0, 0}, "x"); }, "[read_idx] x", {"magic"});
  expect_error<ValueError>([] { data::read_idx_bytes(Bytes{0, 0, 7, 0, 0}, "x"); }, "[read_idx] x", {"type code 0x7"});
  expect_error<ValueError>([] { data::read_idx_bytes(Bytes{0, 0, 8, 1, 0, 0, 0, 1, 5, 6}, "x"); }, "[read_idx] x",
                           {"need 1 bytes", "has 2"});
  Bytes huge = {0, 0, 0x0E, 3, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
  expect_error<ValueError>([&] { data::read_idx_bytes(huge, "x"); }, "[read_idx] x", {"overflow"});

  std::string path = temp_path("truncated.idx.gz");
  Bytes gz = gzip_stored(valid);
  gz.resize(gz.size() - 10);
  write_file(path, gz);
  expect_error<ValueError>([&] { data::read_idx(path); }, "[read_idx]", {"truncated.idx.gz"});
  expect_error<ValueError>([] { data::read_idx("/nonexistent/x.idx"); }, "[read_idx] cannot open");
  std::remove(path.c_str());
}

TEST_CASE("data: Fashion-MNIST test set loads" * doctest::skip(!std::filesystem::exists(kFashionMnist))) {
  data::Example test_set = data::load_mnist(kFashionMnist, /*train=*/false);
  CHECK(test_set.data.sizes().vec() == std::vector<int64_t>{10000, 1, 28, 28});
  CHECK(test_set.data.dtype() == kFloat32);
  CHECK(test_set.data.min().item<float>() == 0.0f);
  CHECK(test_set.data.max().item<float>() == 1.0f);
  CHECK(test_set.target.dtype() == kInt64);
  CHECK(test_set.target.sizes().vec() == std::vector<int64_t>{10000});
  CHECK(test_set.target.min().item<int64_t>() == 0);
  CHECK(test_set.target.max().item<int64_t>() == 9);
  expect_error<ValueError>([] { data::load_mnist("/nonexistent", true); }, "[load_mnist]", {"train-images-idx3-ubyte"});
}

TEST_CASE("data: read_csv reads numbers and names the line of a fault") {
  std::string path = temp_path("table.csv");
  write_text(path, "a,b,c\n1,2.5,-3\n\n 4 , 5e1,+6\r\n");
  Tensor table = data::read_csv(path, kFloat64, /*header=*/true);
  CHECK(table.dtype() == kFloat64);
  CHECK(table.sizes().vec() == std::vector<int64_t>{2, 3});
  CHECK(double_values(table) == std::vector<double>{1, 2.5, -3, 4, 50, 6});
  write_file(path + ".gz", gzip_stored(Bytes{'1', ',', '2', '\n'}));
  CHECK(data::read_csv(path + ".gz").sizes().vec() == std::vector<int64_t>{1, 2});

  write_text(path, "1,2\n3,x\n");
  expect_error<ValueError>([&] { data::read_csv(path); }, "[read_csv]", {"line 2", "column 2", "'x'"});
  write_text(path, "1,2\n3,4,5\n");
  expect_error<ValueError>([&] { data::read_csv(path); }, "[read_csv]", {"line 2", "3 columns", "2"});
  write_text(path, "1,,2\n");
  expect_error<ValueError>([&] { data::read_csv(path); }, "[read_csv]", {"line 1", "column 2"});
  expect_error<TypeError>([&] { data::read_csv(path, kInt64); }, "[read_csv]", {"Float32"});
  CHECK(double_values(data::parse_csv("7,8\n9,10")) == std::vector<double>{7, 8, 9, 10});
  expect_error<ValueError>([] { data::parse_csv("1\n1e999\n", kFloat64, false, "mem.csv"); }, "[read_csv] mem.csv",
                           {"line 2", "'1e999'"});
  CHECK(data::parse_csv("").sizes().vec() == std::vector<int64_t>{0, 0});
  std::remove(path.c_str());
  std::remove((path + ".gz").c_str());
}

TEST_CASE("data: load_digits reads the bundled UCI digits" * doctest::skip(find_digits().empty())) {
  data::Example digits = data::load_digits(find_digits());
  CHECK(digits.data.sizes().vec() == std::vector<int64_t>{1797, 64});
  CHECK(digits.data.dtype() == kFloat32);
  CHECK(digits.data.max().item<float>() == 1.0f);
  CHECK(digits.data.min().item<float>() == 0.0f);
  CHECK(digits.target.dtype() == kInt64);
  std::vector<int64_t> labels = int64_values(digits.target);
  CHECK(std::set<int64_t>(labels.begin(), labels.end()).size() == 10);
  CHECK(labels[0] == 0);
  CHECK(labels[1] == 1);
}

TEST_CASE("data: readers given a directory throw naming the path") {
  std::string directory = std::filesystem::temp_directory_path().string();
  expect_error<ValueError>([&] { (void)data::read_idx(directory); }, "[read_idx] cannot read '" + directory + "'",
                           {"directory"});
  expect_error<ValueError>([&] { (void)data::read_csv(directory); }, "[read_csv] cannot read '" + directory + "'",
                           {"directory"});
}
