#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>

#include <strata/strata.h>

#include "../test_util.h"

using namespace strata;
using strata::testing::expect_error;

TEST_CASE("load_library: a .so of STRATA_LIBRARY blocks registers its ops until unloaded") {
  CHECK_FALSE(has_op("plugin_ops::triple"));
  {
    LibraryHandle plugin = load_library(STRATA_TEST_PLUGIN_PATH);
    CHECK(plugin.loaded());
    CHECK(plugin.defined_ops() == std::vector<std::string>{"plugin_ops::triple"});
    Tensor x = detail::make_empty({3}, kFloat32, kCPU);
    for (int i = 0; i < 3; ++i) x.data_ptr<float>()[i] = static_cast<float>(i);
    Tensor y = call("plugin_ops::triple", x).to_tensor();
    CHECK(y.data_ptr<float>()[2] == 6.0f);
    Tensor meta = find_op("plugin_ops::triple").typed<Tensor(const Tensor&)>().call(detail::make_empty({4}, kFloat32, kMeta));
    CHECK(meta.is_meta());
    CHECK(meta.sizes()[0] == 4);
  }
  CHECK_FALSE(has_op("plugin_ops::triple"));
  LibraryHandle again = load_library(STRATA_TEST_PLUGIN_PATH);  // and it loads again
  CHECK(has_op("plugin_ops::triple"));
}

TEST_CASE("load_library: missing files and non-libraries give the loader's reason") {
  expect_error<Error>([] { load_library("/nonexistent/libnothing.so"); }, "[load_library]",
                      {"/nonexistent/libnothing.so", "No such file"});
  std::string path = "strata_not_a_library.so";
  std::ofstream(path) << "this is text, not an ELF file\n";
  expect_error<Error>([&] { load_library(path); }, "[load_library]", {"cannot load"});
  std::remove(path.c_str());
}

TEST_CASE("load_library: a failing block undoes the whole library") {
  expect_error<ValueError>([] { load_library(STRATA_TEST_BAD_PLUGIN_PATH); }, "[", {"column"});
  CHECK_FALSE(has_op("bad_plugin_ops::fine"));
  CHECK_FALSE(has_op("bad_plugin_ops::broken"));
}
