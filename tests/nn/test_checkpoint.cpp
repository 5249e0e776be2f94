// Tests for nn/checkpoint.cpp: a failed save keeps the previous checkpoint; loading a directory
// names it.
#include <doctest/doctest.h>

#include <strata/nn/checkpoint.h>
#include <strata/nn/modules.h>
#include <strata/nn/optim.h>
#include <strata/nn/sequential.h>
#include <strata/ops/ops.h>

#include <filesystem>
#include <string>

#include "../test_util.h"

using namespace strata;
using strata::testing::expect_error;
using strata::testing::file_bytes;
using strata::testing::files_starting_with;
using strata::testing::FileSizeLimitScope;

namespace {
std::filesystem::path fresh_folder(const std::string& name) {
  auto folder = std::filesystem::temp_directory_path() / ("strata_test_checkpoint_" + name);
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  return folder;
}
}  // namespace

TEST_CASE("checkpoint: a save that fails under a file-size limit keeps the previous checkpoint") {
  auto folder = fresh_folder("torn");
  std::string path = (folder / "net.safetensors").string();
  nn::Linear small(2, 2);
  nn::save(small, path);
  auto previous = file_bytes(path);
  nn::Linear big(256, 256);  // 257 KB of parameters, past the 64 KiB limit
  {
    FileSizeLimitScope limit(64 * 1024);
    expect_error<Error>([&] { nn::save(big, path); }, "[save_safetensors] cannot write", {path});
  }
  CHECK(file_bytes(path) == previous);
  CHECK(files_starting_with(folder, "net").size() == 1);
  nn::Linear restored(2, 2);
  nn::load(restored, path);
  CHECK(equal(restored->weight, small->weight));
}

TEST_CASE("checkpoint: loading a directory or a missing file throws naming the path") {
  auto folder = fresh_folder("directory");
  nn::Linear net(2, 2);
  expect_error<Error>([&] { nn::load(net, folder.string()); }, "[load_safetensors] cannot read '" + folder.string(),
                      {"directory"});
  optim::SGD sgd(net->parameters(), optim::SGDOptions(0.1));
  expect_error<Error>([&] { optim::load(sgd, folder.string()); }, "[load_safetensors]", {"directory"});
  std::string missing = (folder / "missing.safetensors").string();
  expect_error<Error>([&] { nn::load(net, missing); }, "[load_safetensors] cannot open '" + missing, {"No such file"});
}
