// Tests for tensor/serialize.cpp, tensor/safetensors.cpp and tensor/json.cpp: round trips,
// files written by hand to the .npy and safetensors specs, and corrupt input.
#include <doctest/doctest.h>

#include <strata/ops/ops.h>
#include <strata/tensor/json.h>
#include <strata/tensor/serialize.h>

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "../test_util.h"
#include "fake_cuda.h"

using namespace strata;
using strata::testing::expect_error;

namespace {

using Bytes = std::vector<uint8_t>;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("strata_test_serialize_" + name)).string();
}

void append(Bytes& bytes, std::string_view text) { bytes.insert(bytes.end(), text.begin(), text.end()); }
template <class T>
void append_value(Bytes& bytes, T value) {
  uint8_t raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  bytes.insert(bytes.end(), raw, raw + sizeof(T));
}
void append_u64_le(Bytes& bytes, uint64_t value) {
  for (int i = 0; i < 8; ++i) bytes.push_back(static_cast<uint8_t>(value >> (8 * i)));
}

// A .npy file: magic, version, little-endian header length (2 bytes for v1, 4 for v2/v3), the
// dict padded with spaces and '\n' so the data starts at a multiple of 64, then `data`.
Bytes npy_file(int major, std::string dict, const Bytes& data) {
  size_t prefix = major == 1 ? 10 : 12;
  size_t total = prefix + dict.size() + 1;
  dict.append((64 - total % 64) % 64, ' ');
  dict += '\n';
  Bytes bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  size_t length = dict.size();
  bytes.push_back(length & 0xff);
  bytes.push_back((length >> 8) & 0xff);
  if (major != 1) bytes.insert(bytes.end(), {0, 0});
  append(bytes, dict);
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

// A safetensors file: u64 little-endian header length, the JSON header padded to 8, then data.
Bytes safetensors_file(std::string header, const Bytes& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  Bytes bytes;
  append_u64_le(bytes, header.size());
  append(bytes, header);
  bytes.insert(bytes.end(), data.begin(), data.end());
  return bytes;
}

// A tensor of exactly T (strata::tensor infers Int64 and Float32 from literals, like PyTorch).
template <class T>
Tensor make(const std::vector<T>& values, std::vector<int64_t> shape) {
  return tensor(values, shape, scalar_type_of<T>);
}

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.sizes().vec() != b.sizes().vec()) return false;
  Tensor ac = a.contiguous(), bc = b.contiguous();
  return a.numel() == 0 || std::memcmp(ac.data_ptr(), bc.data_ptr(), ac.nbytes()) == 0;
}

// One tensor of each dtype with awkward values (NaN, -0, extremes).
std::vector<Tensor> sample_tensors() {
  return {
      make<bool>({true, false, true, true, false, false}, {2, 3}),
      make<uint8_t>({0, 1, 127, 128, 255, 7}, {3, 2}),
      make<int8_t>({INT8_MIN, -1, 0, 1, INT8_MAX}, {5, 1}),
      make<int16_t>({INT16_MIN, -300, 0, 300, INT16_MAX, 7}, {2, 3}),
      make<int32_t>({INT32_MIN, -1, 0, 1, INT32_MAX}, {5}),
      make<int64_t>({INT64_MIN, -5, 0, INT64_MAX}, {2, 1, 2}),
      make<float>({0.5f, -0.0f, NAN, INFINITY, 1e-45f, -3.25f}, {2, 3}).to(kFloat16),
      make<float>({0.5f, -0.0f, NAN, -INFINITY, 1e30f, -3.25f}, {6}).to(kBFloat16),
      make<float>({0.1f, -0.0f, NAN, INFINITY, 1e-45f, 3.4e38f}, {3, 2}),
      make<double>({0.1, -0.0, NAN, -INFINITY, 5e-324, 1.7e308}, {1, 6}),
  };
}

}  // namespace

TEST_CASE("npy: round trips are bit-exact for every dtype NumPy has") {
  for (const Tensor& t : sample_tensors()) {
    if (t.dtype() == kBFloat16) continue;
    INFO("dtype ", t.dtype());
    CHECK(same_bits(load_npy_bytes(save_npy_bytes(t)), t));
  }
  std::string path = temp_path("round_trip.npy");
  Tensor t = make<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  save_npy(path, t);
  CHECK(same_bits(load_npy(path), t));
  std::remove(path.c_str());
}

TEST_CASE("npy: 0-d, zero-size and non-contiguous tensors") {
  Tensor scalar = make<double>({2.5}, {});
  Tensor loaded = load_npy_bytes(save_npy_bytes(scalar));
  CHECK(loaded.dim() == 0);
  CHECK(loaded.item<double>() == 2.5);
  for (auto shape : {std::vector<int64_t>{0}, std::vector<int64_t>{3, 0, 2}}) {
    Tensor empty_tensor = zeros(shape, kInt64);
    CHECK(same_bits(load_npy_bytes(save_npy_bytes(empty_tensor)), empty_tensor));
  }
  Tensor transposed = arange(6, kFloat32).reshape({2, 3}).t();
  CHECK_FALSE(transposed.is_contiguous());
  CHECK(same_bits(load_npy_bytes(save_npy_bytes(transposed)), transposed.contiguous()));
}

TEST_CASE("npy and safetensors: strided tensors of every element width save their values in order") {
  // The savers copy strided tensors element by element without ops (Note [Values without ops]).
  for (const Tensor& sample : sample_tensors()) {
    INFO("dtype ", sample.dtype());
    const int64_t n = sample.numel() / 2 * 2;
    Tensor flat = sample.reshape({-1}).slice(0, 0, n);
    std::vector<Tensor> strided = {
        flat.reshape({n / 2, 2}).t(),                                         // transposed
        flat.slice(0, 1, n, 2),                                               // stepped
        flat.slice(0, 0, 1).expand({3, 4}),                                   // stride 0
        flat.reshape({1, n / 2, 2}).permute({2, 0, 1}).slice(2, 1, n / 2),  // 3-d, offset
        flat.select(0, n - 1),                                                // 0-d with an offset
    };
    for (const Tensor& t : strided) {
      INFO("sizes ", t.sizes(), " strides ", t.strides());
      if (sample.dtype() != kBFloat16) CHECK(same_bits(load_npy_bytes(save_npy_bytes(t)), t.contiguous()));
      auto loaded = load_safetensors_bytes(save_safetensors_bytes({{"t", t}}));
      CHECK(same_bits(loaded.at("t"), t.contiguous()));
    }
  }
}

TEST_CASE("npy and safetensors: a device tensor is saved from a copy on the host; one with gaps is refused") {
  strata::testing::FakeCudaBackend backend;  // its device memory is host memory
  float values[4] = {1.5f, -2.0f, 0.0f, 0.0f};
  Tensor device_tensor = detail::wrap_external(values, {2}, {1}, kFloat32, Device(kCUDA), {}, "test");
  CHECK(equal(load_npy_bytes(save_npy_bytes(device_tensor)), make<float>({1.5f, -2.0f}, {2})));
  CHECK(equal(load_safetensors_bytes(save_safetensors_bytes({{"w", device_tensor}})).at("w"),
              make<float>({1.5f, -2.0f}, {2})));
  // Dense in another order of dims (as to(kCUDA) keeps a transposed tensor): the block, reordered.
  Tensor transposed = detail::wrap_external(values, {2, 2}, {1, 2}, kFloat32, Device(kCUDA), {}, "test");
  CHECK(equal(load_npy_bytes(save_npy_bytes(transposed)), make<float>({1.5f, 0.0f, -2.0f, 0.0f}, {2, 2})));
  Tensor sliced = detail::wrap_external(values, {2}, {2}, kFloat32, Device(kCUDA), {}, "test");
  expect_error<NotImplementedError>([&] { save_npy_bytes(sliced); },
                                    "[save_npy] reading the values of a strided cuda:0 tensor is not supported");
}

TEST_CASE("npy: the header is version 1.0, 64-byte aligned, in NumPy's dict form") {
  Bytes bytes = save_npy_bytes(make<float>({1, 2, 3}, {3}));
  REQUIRE(bytes.size() == 128 + 12);  // NumPy's own header for this is 128 bytes too
  CHECK(std::memcmp(bytes.data(), "\x93NUMPY\x01\x00", 8) == 0);
  CHECK(bytes[8] + 256 * bytes[9] == 128 - 10);
  std::string header(bytes.begin() + 10, bytes.begin() + 128);
  CHECK(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 0) == 0);
  CHECK(header.back() == '\n');
  auto header_of = [](const Tensor& t) {
    Bytes file = save_npy_bytes(t);
    return std::string(file.begin() + 10, file.begin() + 10 + file[8] + 256 * file[9]);
  };
  CHECK(header_of(zeros({2, 3})).find("'shape': (2, 3), }") != std::string::npos);
  CHECK(header_of(zeros({})).find("'shape': (), }") != std::string::npos);
  CHECK(header_of(zeros({2, 3})).size() % 64 == 64 - 10);
  expect_error<TypeError>([] { save_npy_bytes(zeros({2}, kBFloat16)); }, "[save_npy]", {"BFloat16"});
}

TEST_CASE("npy: hand-written files load with the right values") {
  SUBCASE("v1.0 <f4 2x3, every byte spelled out") {
    Bytes bytes = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, 118, 0};
    append(bytes, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }");
    bytes.resize(127, ' ');
    bytes.push_back('\n');
    REQUIRE(bytes.size() == 128);
    for (float value : {1.f, 2.f, 3.f, 4.f, 5.f, 6.5f}) append_value(bytes, value);
    Tensor t = load_npy_bytes(bytes);
    CHECK(t.sizes().vec() == std::vector<int64_t>{2, 3});
    CHECK(t.dtype() == kFloat32);
    CHECK(t.select(1, 2).select(0, 1).item<float>() == 6.5f);
    CHECK(t.select(0, 0).select(0, 1).item<float>() == 2.f);
  }
  SUBCASE("big-endian >i4") {
    Bytes data = {0x00, 0x00, 0x01, 0x02, 0xff, 0xff, 0xff, 0xfe, 0x7f, 0xff, 0xff, 0xff};
    Tensor t = load_npy_bytes(npy_file(1, "{'descr': '>i4', 'fortran_order': False, 'shape': (3,), }", data));
    REQUIRE(t.dtype() == kInt32);
    CHECK(t.select(0, 0).item<int32_t>() == 258);
    CHECK(t.select(0, 1).item<int32_t>() == -2);
    CHECK(t.select(0, 2).item<int32_t>() == INT32_MAX);
  }
  SUBCASE("big-endian >f8 and a double-quoted, reordered dict") {
    Bytes data = {0x40, 0x09, 0x21, 0xfb, 0x54, 0x44, 0x2d, 0x18};  // pi
    Tensor t = load_npy_bytes(npy_file(1, "{\"shape\": (1,), \"fortran_order\": False, \"descr\": \">f8\"}", data));
    CHECK(t.select(0, 0).item<double>() == 3.141592653589793);
  }
  SUBCASE("fortran order 2x3: columns are stored one after the other") {
    Bytes data;
    for (int64_t value : {1, 4, 2, 5, 3, 6}) append_value(data, value);
    Tensor t = load_npy_bytes(npy_file(1, "{'descr': '<i8', 'fortran_order': True, 'shape': (2, 3), }", data));
    CHECK(t.is_contiguous());
    CHECK(same_bits(t, make<int64_t>({1, 2, 3, 4, 5, 6}, {2, 3})));
  }
  SUBCASE("fortran order 2x3x2 of <i2: the first index varies fastest") {
    Bytes data;
    for (int16_t k = 0; k < 2; ++k)
      for (int16_t j = 0; j < 3; ++j)
        for (int16_t i = 0; i < 2; ++i) append_value(data, static_cast<int16_t>(100 * i + 10 * j + k));
    Tensor t = load_npy_bytes(npy_file(1, "{'descr': '<i2', 'fortran_order': True, 'shape': (2, 3, 2), }", data));
    CHECK(t.is_contiguous());
    CHECK_FALSE(t.is_view());
    CHECK(same_bits(t, make<int16_t>({0, 1, 10, 11, 20, 21, 100, 101, 110, 111, 120, 121}, {2, 3, 2})));
  }
  SUBCASE("v2.0 and v3.0 headers, |b1, |u1 and <f2") {
    Tensor b = load_npy_bytes(npy_file(2, "{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }", {1, 0, 2}));
    CHECK(same_bits(b, make<bool>({true, false, true}, {3})));
    Tensor u = load_npy_bytes(npy_file(3, "{'descr': '|u1', 'fortran_order': False, 'shape': (2, 1), }", {9, 200}));
    CHECK(same_bits(u, make<uint8_t>({9, 200}, {2, 1})));
    Tensor h = load_npy_bytes(npy_file(2, "{'descr': '<f2', 'fortran_order': False, 'shape': (), }", {0x00, 0x3c}));
    CHECK(h.dtype() == kFloat16);
    CHECK(h.item<float>() == 1.0f);
  }
}

TEST_CASE("npy: every truncation of a valid file throws ValueError") {
  Bytes valid = save_npy_bytes(make<int32_t>({1, 2, 3}, {3}));
  for (size_t length = 0; length < valid.size(); ++length) {
    INFO("length ", length);
    expect_error<ValueError>([&] { load_npy_bytes(std::span(valid.data(), length), "cut.npy"); }, "[load_npy] cut.npy");
  }
}

TEST_CASE("npy: corrupt files throw ValueError naming the fault") {
  auto header = [](std::string dict, Bytes data = {}) { return npy_file(1, std::move(dict), data); };
  auto check = [](const Bytes& bytes, std::initializer_list<std::string_view> fragments) {
    expect_error<ValueError>([&] { load_npy_bytes(bytes, "bad.npy"); }, "[load_npy] bad.npy", fragments);
  };
  Bytes bad_magic = save_npy_bytes(zeros({2}));
  bad_magic[1] = 'X';
  check(bad_magic, {"magic"});
  Bytes bad_version = save_npy_bytes(zeros({2}));
  bad_version[6] = 4;
  check(bad_version, {"version 4.0"});
  Bytes long_header = save_npy_bytes(zeros({2}));
  long_header[9] = 0x7f;
  check(long_header, {"header length", "past the end"});
  check(header("{'descr': '<f4', 'fortran_order': False}"), {"'shape'"});
  check(header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'extra': 1}"), {"'extra'"});
  check(header("{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2,)}"), {"fortran_order"});
  check(header("{'descr': '<f4', 'fortran_order': False, 'shape': (-2,)}"), {"non-negative"});
  check(header("{'descr': '<f4', 'fortran_order': False, 'shape': (2,)"), {"expected '}'"});
  check(header("{'descr': '<c8', 'fortran_order': False, 'shape': (2,)}"), {"unsupported descr '<c8'"});
  check(header("{'descr': '|f4', 'fortran_order': False, 'shape': (1,)}", Bytes(4)), {"byte order"});
  check(header("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}"), {"too large"});
  check(header("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296)}"), {"overflows"});
  check(header("{'descr': '<f4', 'fortran_order': False, 'shape': (0, 4611686018427387904, 4)}"), {"overflows"});
  check(header("{'descr': '<f4', 'fortran_order': False, 'shape': (3,)}", Bytes(8)), {"need 12 bytes", "has 8"});
  check(header("{'descr': '<f4', 'fortran_order': False, 'shape': (1,)}", Bytes(8)), {"need 4 bytes", "has 8"});
  expect_error<ValueError>([] { load_npy("/nonexistent/strata.npy"); }, "[load_npy] cannot open '/nonexistent/strata.npy'");
}

TEST_CASE("safetensors: round trips are bit-exact for every dtype, with metadata") {
  std::map<std::string, Tensor> tensors;
  std::vector<Tensor> samples = sample_tensors();
  for (size_t i = 0; i < samples.size(); ++i) tensors["t" + std::to_string(i)] = samples[i];
  tensors["scalar"] = make<double>({-1.5}, {});
  tensors["empty"] = zeros({0, 3}, kFloat32);
  tensors["strided"] = arange(12, kInt64).reshape({3, 4}).t();
  tensors["we\"ird\\ name\n\x01\xc3\xa9"] = ones({1});
  SafetensorsMetadata metadata = {{"format", "pt"}, {"note", "quote \" and \\ and\ttab"}};
  std::string path = temp_path("round_trip.safetensors");
  save_safetensors(path, tensors, metadata);
  std::map<std::string, Tensor> loaded = load_safetensors(path);
  REQUIRE(loaded.size() == tensors.size());
  for (const auto& entry : tensors) {  // not a structured binding: clang 14's INFO cannot capture those
    const std::string& name = entry.first;
    INFO("tensor ", name);
    REQUIRE(loaded.count(name) == 1);
    CHECK(same_bits(loaded[name], entry.second.contiguous()));
  }
  CHECK(load_safetensors_metadata(path) == metadata);
  std::remove(path.c_str());
}

TEST_CASE("serialize: int8 and int16 use NumPy's i1/i2 and safetensors' I8/I16") {
  Bytes npy8 = save_npy_bytes(make<int8_t>({-1}, {1}));
  CHECK(std::string(npy8.begin(), npy8.end()).find("'descr': '|i1'") != std::string::npos);
  Bytes npy16 = save_npy_bytes(make<int16_t>({-1}, {1}));
  CHECK(std::string(npy16.begin(), npy16.end()).find("'descr': '<i2'") != std::string::npos);
  Tensor big_endian = load_npy_bytes(npy_file(1, "{'descr': '>i2', 'fortran_order': False, 'shape': (1,), }", {0xfe, 0xd4}));
  CHECK(big_endian.dtype() == kInt16);
  CHECK(big_endian.item<int64_t>() == -300);
  Bytes st = save_safetensors_bytes({{"a", make<int8_t>({-2}, {1})}, {"b", make<int16_t>({-3}, {1})}});
  std::string header(st.begin() + 8, st.end());
  CHECK(header.find("\"dtype\":\"I8\"") != std::string::npos);
  CHECK(header.find("\"dtype\":\"I16\"") != std::string::npos);
  auto loaded = load_safetensors_bytes(st);
  CHECK(loaded.at("a").dtype() == kInt8);
  CHECK(loaded.at("b").item<int64_t>() == -3);
}

TEST_CASE("safetensors: the layout follows the spec") {
  Bytes bytes = save_safetensors_bytes({{"b", make<float>({1, 2}, {2})}, {"a", make<int32_t>({7}, {1})}});
  uint64_t header_length = 0;
  for (int i = 0; i < 8; ++i) header_length |= uint64_t{bytes[i]} << (8 * i);
  CHECK(header_length % 8 == 0);
  REQUIRE(bytes.size() == 8 + header_length + 12);
  std::string header(bytes.begin() + 8, bytes.begin() + 8 + header_length);
  CHECK(header.find("\"a\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}") != std::string::npos);
  CHECK(header.find("\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}") != std::string::npos);
  int32_t a = 0;
  std::memcpy(&a, bytes.data() + 8 + header_length, 4);
  CHECK(a == 7);
  CHECK(load_safetensors_bytes(save_safetensors_bytes({})).empty());
}

TEST_CASE("safetensors: a hand-written file with two tensors and __metadata__ loads") {
  Bytes data;
  for (float value : {1.5f, -2.f, 3.f, 4.f}) append_value(data, value);
  for (int64_t value : {10, -20}) append_value(data, value);
  std::string header =
      "{\"__metadata__\": {\"format\": \"pt\", \"caf\\u00e9\": \"\\ud83d\\ude00\"},\n"
      " \"weight\": {\"dtype\": \"F32\", \"shape\": [2, 2], \"data_offsets\": [0, 16]},\n"
      " \"step\": {\"shape\": [2], \"data_offsets\": [16, 32], \"dtype\": \"I64\"}}";
  SafetensorsMetadata metadata;
  auto tensors = load_safetensors_bytes(safetensors_file(header, data), "hand", &metadata);
  REQUIRE(tensors.size() == 2);
  CHECK(same_bits(tensors["weight"], make<float>({1.5f, -2.f, 3.f, 4.f}, {2, 2})));
  CHECK(same_bits(tensors["step"], make<int64_t>({10, -20}, {2})));
  CHECK(metadata["format"] == "pt");
  CHECK(metadata["caf\xc3\xa9"] == "\xf0\x9f\x98\x80");
}

TEST_CASE("safetensors: every truncation of a valid file throws ValueError") {
  Bytes valid = save_safetensors_bytes({{"x", make<float>({1, 2, 3}, {3})}}, {{"k", "v"}});
  for (size_t length = 0; length < valid.size(); ++length) {
    INFO("length ", length);
    expect_error<ValueError>([&] { load_safetensors_bytes(std::span(valid.data(), length), "cut"); },
                             "[load_safetensors] cut");
  }
}

TEST_CASE("safetensors: corrupt files throw ValueError naming the fault") {
  auto check = [](const std::string& header, size_t data_size, std::initializer_list<std::string_view> fragments) {
    Bytes bytes = safetensors_file(header, Bytes(data_size));
    expect_error<ValueError>([&] { load_safetensors_bytes(bytes, "bad.st"); }, "[load_safetensors] bad.st", fragments);
  };
  auto entry = [](std::string name, std::string dtype, std::string shape, std::string offsets) {
    return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":" + offsets + "}";
  };
  Bytes huge_length;
  append_u64_le(huge_length, ~uint64_t{0});
  append(huge_length, "{}      ");
  expect_error<ValueError>([&] { load_safetensors_bytes(huge_length, "bad.st"); }, "[load_safetensors] bad.st",
                           {"header length 18446744073709551615", "past the end"});
  check("{\"a\":", 0, {"invalid JSON", "unexpected end"});
  check("{\"a\" 1}", 0, {"invalid JSON", "expected ':'"});
  check("{\"a\":[1,]}", 0, {"invalid JSON"});
  check("{\"a\":\"\\x\"}", 0, {"unknown escape"});
  check("{\"a\":01}", 0, {"leading zero"});
  check("[]", 0, {"not a JSON object"});
  check("{" + entry("a", "F32", "[1]", "[0,4]") + "} x", 4, {"after the JSON value"});
  check("{" + entry("a", "F32", "[1]", "[0,4]") + "," + entry("a", "F32", "[1]", "[0,4]") + "}", 4, {"duplicate key \"a\""});
  check("{" + entry("a", "C64", "[1]", "[0,8]") + "}", 8, {"unknown dtype 'C64'", "'a'"});
  check("{" + entry("a", "F32", "[-1]", "[0,4]") + "}", 4, {"non-negative"});
  check("{" + entry("a", "F32", "[1.5]", "[0,4]") + "}", 4, {"non-negative"});
  check("{" + entry("a", "U8", "[4294967296,4294967296]", "[0,0]") + "}", 0, {"overflows"});
  check("{" + entry("a", "U8", "[0,4611686018427387904,4]", "[0,0]") + "}", 0, {"overflows"});
  check("{" + entry("a", "F32", "[2]", "[0,8]") + "}", 4, {"past the end of the 4-byte data buffer"});
  check("{" + entry("a", "F32", "[2]", "[8,0]") + "}", 8, {"backwards"});
  check("{" + entry("a", "F32", "[2]", "[0,4]") + "}", 4, {"spanning 4 bytes", "need 8"});
  check("{" + entry("a", "F32", "[2]", "[0,8]") + "," + entry("b", "F32", "[2]", "[4,12]") + "}", 12,
        {"'a' and 'b' overlap"});
  check("{" + entry("a", "F32", "[1]", "[4,8]") + "}", 8, {"4 unused bytes before tensor 'a'"});
  check("{" + entry("a", "F32", "[1]", "[0,4]") + "}", 6, {"2 bytes after the last tensor"});
  check("{" + entry("a", "F32", "[1]", "[0]") + "}", 4, {"two integers"});
  check("{\"a\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, {"'data_offsets'"});
  check("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1}}", 4, {"unexpected key 'x'"});
  check("{\"__metadata__\":{\"k\":1}}", 0, {"__metadata__", "not a string"});
  check("{\"a\":[" + std::string(100, '[') + std::string(100, ']') + "]}", 0, {"too deep"});
  expect_error<ValueError>([] { load_safetensors("/nonexistent/x.safetensors"); }, "[load_safetensors] cannot open");
  expect_error<ValueError>([] { save_safetensors_bytes({{"__metadata__", zeros({1})}}); }, "[save_safetensors]",
                           {"reserved"});
}

TEST_CASE("safetensors: 100,000 metadata entries load (duplicate keys found in linear time)") {
  SafetensorsMetadata metadata;
  for (int i = 0; i < 100'000; ++i) metadata["key" + std::to_string(i)] = "v";
  Bytes bytes = save_safetensors_bytes({{"w", ones({2})}}, metadata);
  SafetensorsMetadata loaded;
  auto tensors = load_safetensors_bytes(bytes, "many.st", &loaded);
  CHECK(loaded == metadata);
  CHECK(tensors.size() == 1);
}

TEST_CASE("safetensors: a header object with more than the member limit is rejected naming the limit") {
  std::string header = "{\"__metadata__\":{";
  header.reserve(12 * (detail::kMaxJsonObjectMembers + 1));
  for (size_t i = 0; i <= detail::kMaxJsonObjectMembers; ++i) header += (i ? ",\"" : "\"") + std::to_string(i) + "\":\"\"";
  header += "}}";
  Bytes bytes = safetensors_file(header, {});
  header = {};
  expect_error<ValueError>([&] { load_safetensors_bytes(bytes, "wide.st"); }, "[load_safetensors] wide.st",
                           {"more than 1000000 members", "limit"});
  expect_error<ValueError>([] { detail::parse_json("{\"a\":1,\"b\":2,\"c\":3}", "[t] ", 2); }, "[t] ",
                           {"more than 2 members"});
  CHECK(detail::parse_json("{\"a\":1,\"b\":2}", "[t] ", 2).members.size() == 2);
}

TEST_CASE("json: strings, numbers and nesting") {
  detail::JsonValue value = detail::parse_json(" {\"a\": [1, -2.5e3, true, false, null, \"x\\ty\"], \"b\": {}} ", "[t] ");
  REQUIRE(value.is_object());
  const detail::JsonValue* a = value.find("a");
  REQUIRE(a);
  REQUIRE(a->items.size() == 6);
  CHECK(a->items[0].as_uint64() == 1u);
  CHECK_FALSE(a->items[1].as_uint64());
  CHECK(a->items[1].text == "-2.5e3");
  CHECK(a->items[2].boolean);
  CHECK(a->items[5].text == "x\ty");
  CHECK(detail::parse_json(detail::json_quote("q\"\\\n\x02"), "[t] ").text == "q\"\\\n\x02");
  CHECK_FALSE(detail::parse_json("18446744073709551616", "[t] ").as_uint64());
}
