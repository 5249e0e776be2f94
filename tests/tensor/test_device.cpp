// Tests for tensor/device.cpp: parsing, names, equality, and the CUDA queries without CUDA.
#include <doctest/doctest.h>

#include <strata/tensor/device.h>
#include <strata/tensor/errors.h>
#include <strata/tensor/parallel.h>

#include <sstream>
#include <string>

using namespace strata;

namespace {
std::string parse_error(std::string_view text) {
  try {
    Device device(text);
    return "parsed as " + device.str();
  } catch (const ValueError& error) {
    return error.what();
  }
}
}  // namespace

TEST_CASE("device: construction from type and index") {
  Device cpu(kCPU);
  CHECK(cpu.type() == kCPU);
  CHECK(cpu.index() == 0);
  CHECK(cpu.is_cpu());
  CHECK_FALSE(cpu.is_cuda());
  Device cuda(kCUDA, 3);
  CHECK(cuda.is_cuda());
  CHECK(cuda.index() == 3);
  CHECK(Device(kMeta).is_meta());
  Device implicit = kCUDA;  // implicit from DeviceType, like torch::Device
  CHECK(implicit == Device(kCUDA, 0));
}

TEST_CASE("device: parsing strings") {
  CHECK(Device("cpu") == Device(kCPU));
  CHECK(Device("cpu:0") == Device(kCPU));
  CHECK(Device("cuda") == Device(kCUDA, 0));
  CHECK(Device("cuda:1") == Device(kCUDA, 1));
  CHECK(Device("cuda:12") == Device(kCUDA, 12));
  CHECK(Device("meta") == Device(kMeta));
  CHECK(Device("cuda:1") != Device("cuda:0"));
  CHECK(Device("cpu") != Device("meta"));
}

TEST_CASE("device: str and operator<<") {
  CHECK(Device(kCPU).str() == "cpu");
  CHECK(Device(kCUDA).str() == "cuda:0");
  CHECK(Device(kCUDA, 2).str() == "cuda:2");
  CHECK(Device(kMeta).str() == "meta");
  std::ostringstream out;
  out << Device(kCUDA, 1) << ' ' << kMeta << ' ' << kCPU;
  CHECK(out.str() == "cuda:1 meta cpu");
  CHECK(device_type_name(kCUDA) == "cuda");
}

TEST_CASE("device: bad strings and indices throw ValueError naming [Device]") {
  for (std::string_view text : {"", "gpu", "CPU", "cuda:", "cuda:-1", "cuda:+1", "cuda:x", "cuda:1x", "cuda: 1",
                                " cpu", "cuda:1:2", "cuda:99999999999", "cpu:1", "meta:2"}) {
    INFO("text: \"", text, "\"");
    std::string message = parse_error(text);
    CHECK(message.rfind("[Device] ", 0) == 0);
  }
  CHECK(parse_error("gpu") ==
        "[Device] expected a device string like \"cpu\", \"cuda\", \"cuda:1\" or \"meta\", got \"gpu\"");
  CHECK(parse_error("cuda:-1") == "[Device] invalid device index \"-1\" in \"cuda:-1\"");
  CHECK(parse_error("cpu:1") == "[Device] a cpu device has only index 0, got 1");
  CHECK_THROWS_WITH_AS(Device(kCUDA, -1), "[Device] device index must be between 0 and 32767, got -1", ValueError);
  CHECK_THROWS_AS(Device(kCUDA, 40000), ValueError);
  CHECK_THROWS_AS(Device(kMeta, 1), ValueError);
}

TEST_CASE("device: CUDA queries in a build without CUDA") {
  CHECK_FALSE(cuda::is_available());
  CHECK(cuda::device_count() == 0);
  cuda::synchronize();  // a no-op, must not throw
}
