// Tests for tensor/file_io.cpp: atomic writes keep the old file on failure; readers name the
// path for missing files and directories.
#include <doctest/doctest.h>

#include <strata/ops/ops.h>
#include <strata/tensor/file_io.h>
#include <strata/tensor/serialize.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "../test_util.h"

using namespace strata;
using strata::testing::expect_error;
using strata::testing::file_bytes;
using strata::testing::files_starting_with;
using strata::testing::FileSizeLimitScope;

namespace {
// A fresh folder per test, so leftover temporary files can be counted.
std::filesystem::path fresh_folder(const std::string& name) {
  auto folder = std::filesystem::temp_directory_path() / ("strata_test_file_io_" + name);
  std::filesystem::remove_all(folder);
  std::filesystem::create_directories(folder);
  return folder;
}
}  // namespace

TEST_CASE("file_io: a save that fails under a file-size limit leaves the old file intact") {
  auto folder = fresh_folder("torn");
  std::string st_path = (folder / "weights.safetensors").string();
  std::string npy_path = (folder / "weights.npy").string();
  save_safetensors(st_path, {{"w", ones({4})}});
  save_npy(npy_path, ones({4}));
  auto old_st = file_bytes(st_path), old_npy = file_bytes(npy_path);
  Tensor big = zeros({100'000});  // 400 KB, past the 64 KiB limit
  {
    FileSizeLimitScope limit(64 * 1024);
    expect_error<Error>([&] { save_safetensors(st_path, {{"w", big}}); }, "[save_safetensors] cannot write",
                        {st_path, "unchanged"});
    expect_error<Error>([&] { save_npy(npy_path, big); }, "[save_npy] cannot write", {npy_path});
  }
  CHECK(file_bytes(st_path) == old_st);
  CHECK(file_bytes(npy_path) == old_npy);
  CHECK(files_starting_with(folder, "weights").size() == 2);  // no temporary files left
  CHECK(equal(load_safetensors(st_path).at("w"), ones({4})));
}

TEST_CASE("file_io: write_file_atomically removes the temporary file when the writer throws") {
  auto folder = fresh_folder("writer_throws");
  std::string path = (folder / "out.txt").string();
  detail::write_file_bytes(path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>("old"), 3), "test");
  CHECK_THROWS_AS(detail::write_file_atomically(path, [](detail::FileSink& sink) {
    sink.write(std::string_view("partial"));
    throw std::runtime_error("writer failed");
  }, "test"), std::runtime_error);
  CHECK(file_bytes(path) == std::vector<char>{'o', 'l', 'd'});
  CHECK(files_starting_with(folder, "out").size() == 1);
  detail::write_file_atomically(path, [](detail::FileSink& sink) { sink.write(std::string_view("new!")); }, "test");
  CHECK(file_bytes(path) == std::vector<char>{'n', 'e', 'w', '!'});
  expect_error<Error>([&] { save_npy((folder / "missing" / "x.npy").string(), ones({1})); },
                      "[save_npy] cannot open", {"missing/x.npy"});
}

TEST_CASE("file_io: readers given a directory or a missing file throw naming the path") {
  auto folder = fresh_folder("directory");
  std::string directory = folder.string();
  expect_error<Error>([&] { (void)load_npy(directory); }, "[load_npy] cannot read '" + directory + "'", {"directory"});
  expect_error<Error>([&] { (void)load_safetensors(directory); }, "[load_safetensors] cannot read '" + directory + "'",
                      {"directory"});
  expect_error<Error>([&] { (void)load_safetensors_metadata(directory); }, "[load_safetensors]", {"directory"});
  std::string missing = (folder / "missing.npy").string();
  expect_error<Error>([&] { (void)load_npy(missing); }, "[load_npy] cannot open '" + missing + "'",
                      {"No such file"});
}
