#include <strata/nn/data.h>

#include <bit>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <numeric>
#include <optional>
#include <random>

#include <zlib.h>

#include <strata/ops/ops.h>
#include <strata/tensor/random.h>
#include <strata/tensor/file_io.h>
#include <strata/tensor/serialize.h>

namespace strata::data {

Example Dataset::get_batch(std::span<const int64_t> indices) const {
  tensor_list data, targets;
  data.reserve(indices.size());
  targets.reserve(indices.size());
  for (int64_t index : indices) {
    Example example = get(static_cast<size_t>(index));
    data.push_back(std::move(example.data));
    targets.push_back(std::move(example.target));
  }
  return {stack(data), stack(targets)};
}

TensorDataset::TensorDataset(Tensor data, Tensor targets) : data_(std::move(data)), targets_(std::move(targets)) {
  STRATA_CHECK_VALUE(data_.defined() && targets_.defined(), "[TensorDataset] data and targets must be defined");
  STRATA_CHECK_VALUE(data_.dim() > 0 && targets_.dim() > 0, "[TensorDataset] data and targets need a first dimension, got ",
                     data_.dim(), "-d data and ", targets_.dim(), "-d targets");
  STRATA_CHECK_VALUE(data_.size(0) == targets_.size(0), "[TensorDataset] data has ", data_.size(0),
                     " examples (size of dim 0) but targets has ", targets_.size(0));
}

Example TensorDataset::get(size_t index) const {
  STRATA_CHECK_INDEX(index < size(), "[TensorDataset] index ", index, " is out of range for ", size(), " examples");
  auto i = static_cast<int64_t>(index);
  return {data_.select(0, i), targets_.select(0, i)};
}

size_t TensorDataset::size() const { return static_cast<size_t>(data_.size(0)); }

Example TensorDataset::get_batch(std::span<const int64_t> indices) const {
  Tensor index = tensor(std::vector<int64_t>(indices.begin(), indices.end()), {static_cast<int64_t>(indices.size())});
  return {data_.index_select(0, index), targets_.index_select(0, index)};
}

DataLoader::DataLoader(const Dataset& dataset, int64_t batch_size, bool shuffle, bool drop_last)
    : DataLoader(std::shared_ptr<const Dataset>(&dataset, [](const Dataset*) {}), batch_size, shuffle, drop_last) {}

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, int64_t batch_size, bool shuffle, bool drop_last)
    : dataset_(std::move(dataset)), batch_size_(batch_size), shuffle_(shuffle), drop_last_(drop_last) {
  STRATA_CHECK_VALUE(dataset_, "[DataLoader] the dataset is null");
  STRATA_CHECK_VALUE(batch_size > 0, "[DataLoader] batch_size must be positive, got ", batch_size);
}

DataLoader::DataLoader(const Dataset& dataset, int64_t batch_size, Sampler& sampler, bool drop_last)
    : DataLoader(std::shared_ptr<const Dataset>(&dataset, [](const Dataset*) {}), batch_size, sampler, drop_last) {}

DataLoader::DataLoader(std::shared_ptr<const Dataset> dataset, int64_t batch_size, Sampler& sampler, bool drop_last)
    : DataLoader(std::move(dataset), batch_size, /*shuffle=*/false, drop_last) {
  sampler_ = &sampler;
}

size_t DataLoader::size() const {
  size_t examples = sampler_ ? sampler_->size() : dataset_->size(), batch = static_cast<size_t>(batch_size_);
  return drop_last_ ? examples / batch : (examples + batch - 1) / batch;
}

DataLoader::Iterator DataLoader::begin() {
  if (sampler_) {
    order_ = sampler_->epoch_indices();
    const auto examples = static_cast<int64_t>(dataset_->size());
    for (int64_t index : order_)
      STRATA_CHECK_INDEX(index >= 0 && index < examples, "[DataLoader] the sampler gave index ", index,
                         " for a dataset of ", examples, " examples");
    return Iterator(this, 0);
  }
  order_.resize(dataset_->size());
  std::iota(order_.begin(), order_.end(), int64_t{0});
  if (shuffle_ && order_.size() > 1) {  // Fisher-Yates with the generator manual_seed seeds
    auto& generator = strata::detail::default_cpu_generator();
    std::lock_guard lock(generator.mutex);
    for (size_t i = order_.size() - 1; i > 0; --i) {
      std::uniform_int_distribution<size_t> pick(0, i);
      std::swap(order_[i], order_[pick(generator.engine)]);
    }
  }
  return Iterator(this, 0);
}

DataLoader::Iterator DataLoader::end() const {
  Iterator end;
  end.batch_ = size();
  return end;
}

Example DataLoader::load_batch(size_t batch) const {
  size_t first = batch * static_cast<size_t>(batch_size_);
  size_t count = std::min(static_cast<size_t>(batch_size_), order_.size() - first);
  return dataset_->get_batch(std::span<const int64_t>(order_.data() + first, count));
}

DataLoader::Iterator::Iterator(const DataLoader* loader, size_t batch) : loader_(loader), batch_(batch) {
  if (batch_ < loader_->size()) current_ = loader_->load_batch(batch_);
}

DataLoader::Iterator& DataLoader::Iterator::operator++() {
  ++batch_;
  current_ = batch_ < loader_->size() ? loader_->load_batch(batch_) : Example{};
  return *this;
}

// ---- readers -------------------------------------------------------------------------------

std::vector<uint8_t> read_maybe_gzip(const std::string& path, const char* op) {
  // zlib reads files without the gzip magic as they are, so one path serves both.
  strata::detail::check_readable_file(path, op);  // a directory, not a file: a clear error
  gzFile file = gzopen(path.c_str(), "rb");
  if (!file) strata::detail::throw_error<ValueError>("[", op, "] cannot open '", path, "': ", std::strerror(errno));
  std::vector<uint8_t> bytes;
  constexpr size_t kChunk = 1 << 20;
  while (true) {
    size_t old_size = bytes.size();
    bytes.resize(old_size + kChunk);
    int count = gzread(file, bytes.data() + old_size, kChunk);
    if (count < 0) {
      int code = 0;
      std::string message = gzerror(file, &code);
      gzclose(file);
      strata::detail::throw_error<ValueError>("[", op, "] '", path, "' is corrupt: ", message);
    }
    bytes.resize(old_size + static_cast<size_t>(count));
    if (count == 0) break;
  }
  int code = 0;
  const char* message = gzerror(file, &code);
  std::string error = code != Z_OK ? message : "";
  gzclose(file);
  if (!error.empty())
    strata::detail::throw_error<ValueError>("[", op, "] '", path, "' is truncated or corrupt: ", error);
  return bytes;
}

Tensor read_idx_bytes(std::span<const uint8_t> bytes, std::string_view source) {
  const std::string context = "[read_idx] " + std::string(source) + ": ";
  auto fail = [&](const auto&... what) { strata::detail::throw_error<ValueError>(context, what...); };
  if (bytes.size() < 4) fail("the file has ", bytes.size(), " bytes, too few for the 4-byte magic number");
  if (bytes[0] != 0 || bytes[1] != 0) fail("not an IDX file (the magic number must start with two zero bytes)");
  struct IdxType {
    uint8_t code;
    int64_t item_size;
    ScalarType dtype;
  };
  constexpr IdxType kTypes[] = {{0x08, 1, kUInt8},   {0x09, 1, kInt8},    {0x0B, 2, kInt16},
                                {0x0C, 4, kInt32},   {0x0D, 4, kFloat32}, {0x0E, 8, kFloat64}};
  const IdxType* type = nullptr;
  for (const IdxType& candidate : kTypes)
    if (candidate.code == bytes[2]) type = &candidate;
  if (!type) fail("unknown data type code 0x", std::hex, int(bytes[2]));
  const size_t ndim = bytes[3];
  if (bytes.size() < 4 + 4 * ndim) fail("truncated inside the ", ndim, " dimension sizes");
  std::vector<int64_t> shape(ndim);
  for (size_t d = 0; d < ndim; ++d) {
    const uint8_t* p = bytes.data() + 4 + 4 * d;
    shape[d] = (int64_t{p[0]} << 24) | (int64_t{p[1]} << 16) | (int64_t{p[2]} << 8) | int64_t{p[3]};
  }
  std::optional<int64_t> nbytes = strata::detail::checked_nbytes(shape, type->item_size);
  if (!nbytes) fail("the dimension sizes overflow 64 bits when multiplied out");
  const size_t data_start = 4 + 4 * ndim;
  if (bytes.size() - data_start != static_cast<uint64_t>(*nbytes))
    fail("the dimensions need ", *nbytes, " bytes of data but the file has ", bytes.size() - data_start);

  Tensor result = strata::detail::make_empty(shape, type->dtype, kCPU);
  const int64_t count = *nbytes / type->item_size;
  const uint8_t* in = bytes.data() + data_start;
  auto big_endian = [&](int64_t i) {
    uint64_t value = 0;
    for (int64_t b = 0; b < type->item_size; ++b) value = (value << 8) | in[i * type->item_size + b];
    return value;
  };
  if (count == 0) return result;
  switch (type->code) {
    case 0x08: std::memcpy(result.data_ptr(), in, count); break;
    case 0x09: for (int64_t i = 0; i < count; ++i) result.data_ptr<int8_t>()[i] = static_cast<int8_t>(in[i]); break;
    case 0x0B: for (int64_t i = 0; i < count; ++i) result.data_ptr<int16_t>()[i] = static_cast<int16_t>(big_endian(i)); break;
    case 0x0C: for (int64_t i = 0; i < count; ++i) result.data_ptr<int32_t>()[i] = static_cast<int32_t>(big_endian(i)); break;
    case 0x0D: for (int64_t i = 0; i < count; ++i) result.data_ptr<float>()[i] = std::bit_cast<float>(static_cast<uint32_t>(big_endian(i))); break;
    default: for (int64_t i = 0; i < count; ++i) result.data_ptr<double>()[i] = std::bit_cast<double>(big_endian(i)); break;
  }
  return result;
}

Tensor read_idx(const std::string& path) {
  std::vector<uint8_t> bytes = read_maybe_gzip(path, "read_idx");
  return read_idx_bytes(bytes, "'" + path + "'");
}

namespace {

// Parses one numeric CSV field (surrounding spaces allowed).
bool parse_csv_number(std::string_view field, double& value) {
  while (!field.empty() && (field.front() == ' ' || field.front() == '\t')) field.remove_prefix(1);
  while (!field.empty() && (field.back() == ' ' || field.back() == '\t' || field.back() == '\r')) field.remove_suffix(1);
  if (!field.empty() && field.front() == '+') field.remove_prefix(1);
  auto [end, error] = std::from_chars(field.data(), field.data() + field.size(), value);
  return !field.empty() && error == std::errc() && end == field.data() + field.size();
}

}  // namespace

Tensor parse_csv(std::string_view text, ScalarType dtype, bool header, std::string_view source) {
  STRATA_CHECK_TYPE(dtype == kFloat32 || dtype == kFloat64, "[read_csv] dtype must be Float32 or Float64, got ", dtype);
  std::vector<double> values;
  int64_t columns = -1, rows = 0, line_number = 0;
  size_t position = 0;
  while (position < text.size()) {
    size_t line_end = text.find('\n', position);
    if (line_end == std::string_view::npos) line_end = text.size();
    std::string_view line = text.substr(position, line_end - position);
    position = line_end + 1;
    ++line_number;
    if (header && line_number == 1) continue;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    int64_t fields = 0;
    size_t start = 0;
    while (true) {
      size_t comma = line.find(',', start);
      std::string_view field = line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      double value = 0;
      if (!parse_csv_number(field, value))
        strata::detail::throw_error<ValueError>("[read_csv] ", source, " line ", line_number, ", column ", fields + 1,
                                                ": '", field, "' is not a number");
      values.push_back(value);
      ++fields;
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    if (columns < 0) columns = fields;
    if (fields != columns)
      strata::detail::throw_error<ValueError>("[read_csv] ", source, " line ", line_number, " has ", fields,
                                              " columns but earlier lines have ", columns);
    ++rows;
  }
  if (rows == 0) return empty({0, 0}, dtype);
  return tensor(values, {rows, columns}, dtype);
}

Tensor read_csv(const std::string& path, ScalarType dtype, bool header) {
  STRATA_CHECK_TYPE(dtype == kFloat32 || dtype == kFloat64, "[read_csv] dtype must be Float32 or Float64, got ", dtype);
  std::vector<uint8_t> bytes = read_maybe_gzip(path, "read_csv");
  return parse_csv(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), dtype, header,
                   "'" + path + "'");
}

Example load_digits(const std::string& path) {
  Tensor table = read_csv(path, kFloat32);
  STRATA_CHECK_VALUE(table.dim() == 2 && table.size(1) == 65, "[load_digits] '", path,
                     "' needs 65 columns (64 pixels, then the label), got ", table.size(1));
  Tensor images = table.narrow(1, 0, 64).div(16.0).contiguous();
  Tensor labels = table.select(1, 64).to(kInt64);
  return {images, labels};
}

namespace {

std::string find_mnist_file(const std::string& directory, const std::string& name) {
  for (const std::string& candidate : {name + ".gz", name}) {
    std::filesystem::path path = std::filesystem::path(directory) / candidate;
    if (std::filesystem::exists(path)) return path.string();
  }
  strata::detail::throw_error<ValueError>("[load_mnist] neither ", name, " nor ", name, ".gz is in '", directory, "'");
}

}  // namespace

Example load_mnist(const std::string& directory, bool train) {
  const std::string prefix = train ? "train" : "t10k";
  Tensor images = read_idx(find_mnist_file(directory, prefix + "-images-idx3-ubyte"));
  Tensor labels = read_idx(find_mnist_file(directory, prefix + "-labels-idx1-ubyte"));
  STRATA_CHECK_VALUE(images.dtype() == kUInt8 && images.dim() == 3 && images.size(1) == 28 && images.size(2) == 28,
                     "[load_mnist] the images in '", directory, "' are not UInt8 [N, 28, 28]: got ", images.dtype(), " ",
                     images.sizes());
  STRATA_CHECK_VALUE(labels.dim() == 1 && labels.size(0) == images.size(0), "[load_mnist] '", directory, "' has ",
                     images.size(0), " images but labels of shape ", labels.sizes());
  return {images.to(kFloat32).div(255.0).reshape({images.size(0), 1, 28, 28}), labels.to(kInt64)};
}

}  // namespace strata::data
