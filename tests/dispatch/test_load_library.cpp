#include <doctest/doctest.h>

#include <dlfcn.h>

#include <cstdio>
#include <filesystem>
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
  expect_error<Error>([] { (void)load_library("/nonexistent/libnothing.so"); }, "[load_library]",
                      {"/nonexistent/libnothing.so", "No such file"});
  std::string path = "strata_not_a_library.so";
  std::ofstream(path) << "this is text, not an ELF file\n";
  expect_error<Error>([&] { (void)load_library(path); }, "[load_library]", {"cannot load"});
  std::remove(path.c_str());
}

TEST_CASE("load_library: a failing block undoes the whole library") {
  expect_error<ValueError>([] { (void)load_library(STRATA_TEST_BAD_PLUGIN_PATH); }, "[", {"column"});
  CHECK_FALSE(has_op("bad_plugin_ops::fine"));
  CHECK_FALSE(has_op("bad_plugin_ops::broken"));
}

namespace {
// True while the .so at `path` is mapped in this process (without loading it).
bool is_mapped(const char* path) {
  void* handle = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (handle) dlclose(handle);
  return handle != nullptr;
}
}  // namespace

TEST_CASE("load_library: loading one file twice, by any spelling, shares one reference-counted load") {
  namespace fs = std::filesystem;
  fs::path original(STRATA_TEST_PLUGIN_PATH);
  fs::path link = fs::temp_directory_path() / "strata_test_plugin_link.so";
  fs::remove(link);
  fs::create_symlink(original, link);
  LibraryHandle first = load_library(original.string());
  LibraryHandle second = load_library(link.string());
  LibraryHandle third = load_library((original.parent_path() / "." / original.filename()).string());
  CHECK(second.defined_ops() == first.defined_ops());
  CHECK(first.unload() == LibraryHandle::UnloadResult::StillShared);
  CHECK(second.unload() == LibraryHandle::UnloadResult::StillShared);
  CHECK(has_op("plugin_ops::triple"));  // the third still holds it
  CHECK(call("plugin_ops::triple", tensor({1.0f})).to_tensor().item<float>() == 3.0f);
  CHECK(third.unload() == LibraryHandle::UnloadResult::Unloaded);
  CHECK_FALSE(has_op("plugin_ops::triple"));
  CHECK_FALSE(is_mapped(STRATA_TEST_PLUGIN_PATH));
  CHECK(third.unload() == LibraryHandle::UnloadResult::NotLoaded);
  fs::remove(link);
}

TEST_CASE("load_library: unloading while a graph, a hook and a tensor use the library's code defers the close") {
  const char* path = STRATA_TEST_KEEPALIVE_PLUGIN_PATH;
  LibraryHandle plugin = load_library(path);
  Tensor x = tensor({1.0f, 2.0f}, TensorOptions().requires_grad(true));
  Tensor y = call("keepalive_ops::triple", x).to_tensor();  // y.grad_fn() is a Node of the .so's Function
  REQUIRE(y.grad_fn() != nullptr);
  call("keepalive_ops::double_gradient", y);  // a hook lambda of the .so
  Tensor blob = call("keepalive_ops::owned_blob", 4).to_tensor();  // a deleter of the .so

  CHECK(plugin.unload() == LibraryHandle::UnloadResult::Deferred);
  CHECK(plugin.unload_deferred());
  CHECK_FALSE(has_op("keepalive_ops::triple"));  // unregistered at once
  CHECK(is_mapped(path));

  y.sum().backward();  // runs the .so's backward and hook
  CHECK(x.grad().data_ptr<float>()[0] == 6.0f);
  CHECK(x.grad().data_ptr<float>()[1] == 6.0f);
  y = Tensor();  // drops the graph: the Node and the hook
  CHECK(is_mapped(path));  // the blob's deleter still needs it
  blob = Tensor();
  CHECK_FALSE(plugin.unload_deferred());
  CHECK_FALSE(is_mapped(path));

  LibraryHandle again = load_library(path);  // and it loads again
  CHECK(has_op("keepalive_ops::triple"));
}

TEST_CASE("load_library: a library whose code stayed mapped registers its operators again when reloaded") {
  const char* path = STRATA_TEST_KEEPALIVE_PLUGIN_PATH;
  LibraryHandle plugin = load_library(path);
  Tensor blob = call("keepalive_ops::owned_blob", 2).to_tensor();
  CHECK(plugin.unload() == LibraryHandle::UnloadResult::Deferred);
  CHECK_FALSE(has_op("keepalive_ops::owned_blob"));
  LibraryHandle again = load_library(path);
  CHECK(has_op("keepalive_ops::owned_blob"));
  CHECK(again.defined_ops().size() == 3);
  blob = Tensor();
  CHECK(is_mapped(path));  // `again` holds it
  CHECK(again.unload() == LibraryHandle::UnloadResult::Unloaded);
  CHECK_FALSE(is_mapped(path));
}
