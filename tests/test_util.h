#pragma once
// Shared test helpers.
#include <doctest/doctest.h>

#include <strata/strata.h>

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <optional>
#include <vector>
#include <string>
#include <string_view>

namespace strata::testing {

// A 0-d float32 tensor holding `value` (on Meta: shape and dtype only), made without dispatch.
inline Tensor scalar_tensor(float value, Device device = kCPU) {
  Tensor t = detail::make_empty({}, kFloat32, device);
  if (device.is_cpu()) *t.data_ptr<float>() = value;
  return t;
}

// Runs fn, requires it to throw E, and checks the message starts with `prefix` (e.g. "[add]")
// and contains every fragment.
template <class E, class Fn>
std::string expect_error(Fn&& fn, std::string_view prefix, std::initializer_list<std::string_view> fragments = {}) {
  try {
    fn();
  } catch (const E& error) {
    std::string message = error.what();
    INFO("message: " << message);
    CHECK(message.rfind(prefix, 0) == 0);
    for (auto fragment : fragments) CHECK(message.find(fragment) != std::string::npos);
    return message;
  } catch (const std::exception& other) {
    FAIL("threw the wrong exception type: " << other.what());
    return {};
  }
  FAIL("did not throw; expected a message starting with " << prefix);
  return {};
}

// Limits the size of files this process writes (RLIMIT_FSIZE, soft limit) with SIGXFSZ ignored,
// so a write past the limit fails with EFBIG instead of killing the process; restores both.
struct FileSizeLimitScope {
  rlimit previous_limit{};
  void (*previous_handler)(int) = SIG_DFL;
  explicit FileSizeLimitScope(rlim_t bytes) {
    previous_handler = std::signal(SIGXFSZ, SIG_IGN);
    getrlimit(RLIMIT_FSIZE, &previous_limit);
    rlimit limited = previous_limit;
    limited.rlim_cur = bytes;
    REQUIRE(setrlimit(RLIMIT_FSIZE, &limited) == 0);
  }
  ~FileSizeLimitScope() {
    setrlimit(RLIMIT_FSIZE, &previous_limit);
    std::signal(SIGXFSZ, previous_handler);
  }
};

// Sets an environment variable (unsets it for nullptr) and restores it on destruction. Only
// for code that reads the environment when called, with no other thread reading it meanwhile.
struct EnvironmentScope {
  std::string name;
  std::optional<std::string> previous;
  EnvironmentScope(std::string variable, const char* value) : name(std::move(variable)) {
    if (const char* old = std::getenv(name.c_str())) previous = old;
    if (value != nullptr) ::setenv(name.c_str(), value, 1);
    else ::unsetenv(name.c_str());
  }
  ~EnvironmentScope() {
    if (previous) ::setenv(name.c_str(), previous->c_str(), 1);
    else ::unsetenv(name.c_str());
  }
  EnvironmentScope(const EnvironmentScope&) = delete;
  EnvironmentScope& operator=(const EnvironmentScope&) = delete;
};

inline std::vector<char> file_bytes(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

// Names in `folder` that start with `prefix` (to find leftover temporary files).
inline std::vector<std::string> files_starting_with(const std::filesystem::path& folder, const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& entry : std::filesystem::directory_iterator(folder)) {
    std::string name = entry.path().filename().string();
    if (name.rfind(prefix, 0) == 0) names.push_back(name);
  }
  return names;
}

// A generated-kernel cache folder of one test's own ($STRATA_JIT_CACHE_DIR names it while this
// lives), removed afterwards with everything compiled into it.
struct TemporaryKernelCache {
  std::filesystem::path folder;
  EnvironmentScope variable;
  TemporaryKernelCache()
      : folder(std::filesystem::temp_directory_path() /
               ("strata-test-kernels-" + std::to_string(::getpid()) + "-" + std::to_string(next_id()))),
        variable("STRATA_JIT_CACHE_DIR", folder.c_str()) {}
  ~TemporaryKernelCache() {
    std::error_code ignored;
    std::filesystem::remove_all(folder, ignored);
  }
  TemporaryKernelCache(const TemporaryKernelCache&) = delete;
  TemporaryKernelCache& operator=(const TemporaryKernelCache&) = delete;
  // The folder's file names, sorted (none before anything is compiled).
  std::vector<std::string> files() const {
    if (!std::filesystem::exists(folder)) return {};
    std::vector<std::string> names = files_starting_with(folder, "");
    std::sort(names.begin(), names.end());
    return names;
  }
  static int next_id() {
    static std::atomic<int> id{0};
    return id++;
  }
};

}  // namespace strata::testing
