// Compiling generated kernels with the machine's C++ compiler, caching them on disk, and
// loading them. See Note [Kernel cache].
#include <dlfcn.h>
#include <fcntl.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include <strata/jit/fusion.h>

extern char** environ;

namespace strata::jit::detail {

// Note [Kernel cache]
// A generated kernel (Note [Generated kernels] in fusion_codegen.cpp) is compiled once per
// machine, as TorchInductor caches its kernels:
// - the key hashes the source, the compiler's command and flags, and the CPU's feature flags
//   (the code is compiled with -march=native, so a cache shared between machines must not
//   hand one machine's code to another);
// - the cache is a folder: $STRATA_JIT_CACHE_DIR, else $XDG_CACHE_HOME/strata/kernels, else
//   $HOME/.cache/strata/kernels, else /tmp/strata-kernels-<uid>. It holds fused_<key>.cpp
//   (for reading) and fused_<key>.so. Being code that is loaded, it is used only when it is the
//   user's own and others cannot write to it (a folder strata makes is made 0700);
// - the compiler is $STRATA_JIT_CXX, else `c++`, run with posix_spawnp (no shell); its output
//   goes to fused_<key>.log, kept only when it fails. The .so is written under a name of this
//   process's own and renamed into place, so processes sharing the cache never load a half
//   written file. A compile that takes longer than $STRATA_JIT_COMPILE_TIMEOUT seconds (120
//   unless set) is stopped, with its subprocesses, and counts as failed;
// - in a process, a kernel stays loaded while something holds it (dlclose when the last
//   holder goes), and a program that failed to compile is not tried again.
// Failures (no compiler, a compile error, a folder that cannot be written) never reach the
// caller: the program runs without a generated kernel, and the first failure is reported once
// on stderr with what to do about it.

namespace {

const char* environment(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr && *value != '\0' ? value : nullptr;
}

CodegenMode mode_from_environment() {
  const char* value = environment("STRATA_JIT_CODEGEN");
  if (value == nullptr) return CodegenMode::large;
  const std::string text = value;
  if (text == "0" || text == "off") return CodegenMode::off;
  if (text == "always") return CodegenMode::always;
  if (text != "1" && text != "on" && text != "large")
    std::cerr << "[jit::compile] warning: STRATA_JIT_CODEGEN=" << text
              << " is not one of 0, off, 1, on, large, always; using large\n";
  return CodegenMode::large;
}

std::atomic<CodegenMode>& mode_setting() {
  static std::atomic<CodegenMode> mode{mode_from_environment()};
  return mode;
}

std::filesystem::path cache_folder() {
  if (const char* dir = environment("STRATA_JIT_CACHE_DIR")) return dir;
  if (const char* dir = environment("XDG_CACHE_HOME")) return std::filesystem::path(dir) / "strata" / "kernels";
  if (const char* dir = environment("HOME")) return std::filesystem::path(dir) / ".cache" / "strata" / "kernels";
  return std::filesystem::path("/tmp") / ("strata-kernels-" + std::to_string(getuid()));
}

std::string compiler() {
  const char* value = environment("STRATA_JIT_CXX");
  return value != nullptr ? value : "c++";
}

const std::vector<std::string>& compiler_flags() {
  static const std::vector<std::string> flags = {"-O3", "-march=native", "-std=c++20", "-ffp-contract=off",
                                                 "-fno-math-errno", "-fPIC", "-shared", "-w"};
  return flags;
}

// The CPU's feature flags, as /proc/cpuinfo lists them (empty where it does not exist).
const std::string& cpu_flags() {
  static const std::string flags = [] {
    std::ifstream cpuinfo("/proc/cpuinfo");
    std::string line;
    while (std::getline(cpuinfo, line))
      if (line.rfind("flags", 0) == 0) return line;
    return std::string();
  }();
  return flags;
}

std::string cache_key(const std::string& source, const std::string& command) {
  uint64_t hash = 14695981039346656037ull;  // FNV-1a, 64 bits
  for (const std::string* part : {&source, &command, &cpu_flags()}) {
    for (unsigned char byte : *part) hash = (hash ^ byte) * 1099511628211ull;
    hash = (hash ^ 0xffu) * 1099511628211ull;  // parts cannot run into each other
  }
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

struct Failure {
  std::string what;
};

// How long one compile may take: $STRATA_JIT_COMPILE_TIMEOUT seconds, else kCompileTimeout.
// A compile usually takes about half a second; the limit is for a compiler that hangs.
constexpr double kCompileTimeout = 120;

double compile_timeout_seconds() {
  const char* value = environment("STRATA_JIT_COMPILE_TIMEOUT");
  if (value == nullptr) return kCompileTimeout;
  char* end = nullptr;
  const double seconds = std::strtod(value, &end);
  if (end != value && *end == '\0' && seconds > 0 && std::isfinite(seconds)) return seconds;
  std::cerr << "[jit::compile] warning: STRATA_JIT_COMPILE_TIMEOUT=" << value
            << " is not a positive number of seconds; using " << kCompileTimeout << "\n";
  return kCompileTimeout;
}

// Runs the compiler on `source_path`, writing `library_path`; its output goes to `log_path`.
void run_compiler(const std::string& command, const std::filesystem::path& source_path,
                  const std::filesystem::path& library_path, const std::filesystem::path& log_path) {
  std::vector<std::string> args{command};
  for (const std::string& flag : compiler_flags()) args.push_back(flag);
  args.insert(args.end(), {"-o", library_path.string(), source_path.string()});
  std::vector<char*> argv;
  for (std::string& arg : args) argv.push_back(arg.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addclose(&actions, STDIN_FILENO);
  // The compiler leads a process group of its own, so a timeout ends its subprocesses too.
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  pid_t child = 0;
  const int spawned = posix_spawnp(&child, command.c_str(), &actions, &attributes, argv.data(), environ);
  posix_spawnattr_destroy(&attributes);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0)
    throw Failure{"could not run the compiler '" + command + "' (" + std::strerror(spawned) +
                  "); set STRATA_JIT_CXX to a C++ compiler"};
  const double timeout = compile_timeout_seconds();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout);
  auto pause = std::chrono::milliseconds(1);
  int status = 0;
  for (;;) {
    const pid_t waited = waitpid(child, &status, WNOHANG);
    if (waited == child) break;
    if (waited < 0 && errno != EINTR) {
      const int error = errno;
      ::kill(-child, SIGKILL);
      throw Failure{std::string("waiting for the compiler failed: ") + std::strerror(error)};
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      ::kill(-child, SIGKILL);
      while (waitpid(child, &status, 0) < 0 && errno == EINTR) {
      }
      std::ostringstream seconds;
      seconds << timeout;
      throw Failure{"the compiler '" + command + "' did not finish " + source_path.string() + " within " +
                    seconds.str() + " s and was stopped; set STRATA_JIT_COMPILE_TIMEOUT (seconds) to allow longer"};
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::milliseconds(20));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw Failure{"the compiler '" + command + "' failed on " + source_path.string() + "; its output is in " +
                  log_path.string()};
}

// Code is loaded from the folder, so it must be this user's and closed to others' writes
// (a shared /tmp is not).
void check_owned(const std::filesystem::path& folder) {
  struct stat info {};
  if (::stat(folder.c_str(), &info) != 0 || !S_ISDIR(info.st_mode))
    throw Failure{"the kernel cache " + folder.string() + " is not a folder"};
  if (info.st_uid != ::getuid() || (info.st_mode & S_IWOTH) != 0)
    throw Failure{"the kernel cache " + folder.string() +
                  " belongs to another user or others may write to it; set STRATA_JIT_CACHE_DIR to a folder of yours"};
}

std::shared_ptr<const GeneratedKernel> open_kernel(const std::filesystem::path& path) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return nullptr;
  std::shared_ptr<void> library(handle, [](void* opened) { dlclose(opened); });
  using Abi = int (*)();
  auto abi = reinterpret_cast<Abi>(dlsym(handle, "strata_fused_abi"));
  auto function = reinterpret_cast<GeneratedKernel::Function>(dlsym(handle, "strata_fused_kernel"));
  if (abi == nullptr || function == nullptr || abi() != kGeneratedKernelAbi) return nullptr;
  return std::make_shared<const GeneratedKernel>(GeneratedKernel{function, path.string(), std::move(library)});
}

std::shared_ptr<const GeneratedKernel> compile_and_open(const std::string& source, const std::string& command,
                                                         const std::string& key) {
  const std::filesystem::path folder = cache_folder();
  const std::filesystem::path library_path = folder / ("fused_" + key + ".so");
  std::error_code error;
  if (std::filesystem::create_directories(folder, error))
    std::filesystem::permissions(folder, std::filesystem::perms::owner_all, error);
  if (error) throw Failure{"cannot create the kernel cache " + folder.string() + ": " + error.message()};
  check_owned(folder);
  if (std::filesystem::exists(library_path, error))
    if (auto kernel = open_kernel(library_path)) return kernel;
  // Names of this process's own, renamed into place once complete.
  static std::atomic<int> counter{0};
  const std::string own = "." + std::to_string(getpid()) + "." + std::to_string(counter++);
  const std::filesystem::path source_path = folder / ("fused_" + key + own + ".cpp");
  const std::filesystem::path built_path = folder / ("fused_" + key + own + ".so");
  const std::filesystem::path log_path = folder / ("fused_" + key + ".log");
  {
    std::ofstream file(source_path);
    file << source;
    if (!file.flush()) throw Failure{"cannot write " + source_path.string()};
  }
  try {
    run_compiler(command, source_path, built_path, log_path);
  } catch (...) {
    std::filesystem::remove(source_path, error);
    std::filesystem::remove(built_path, error);
    throw;
  }
  std::filesystem::rename(built_path, library_path, error);
  if (!error) std::filesystem::rename(source_path, folder / ("fused_" + key + ".cpp"), error);
  std::filesystem::remove(log_path, error);
  std::filesystem::remove(source_path, error);
  std::filesystem::remove(built_path, error);
  auto kernel = open_kernel(library_path);
  if (kernel == nullptr) {
    const char* why = dlerror();
    throw Failure{"cannot load " + library_path.string() + ": " + (why != nullptr ? why : "not a strata kernel")};
  }
  return kernel;
}

struct KernelCache {
  std::mutex mutex;
  std::unordered_map<std::string, std::weak_ptr<const GeneratedKernel>> loaded;
  std::unordered_set<std::string> failed;  // keys that did not compile or load
  bool reported = false;
};

KernelCache& kernel_cache() {
  static KernelCache* cache = new KernelCache();  // never destroyed: kernels may outlive static destructors
  return *cache;
}

}  // namespace

CodegenMode codegen_mode() { return mode_setting().load(std::memory_order_relaxed); }
void set_codegen_mode(CodegenMode mode) { mode_setting().store(mode, std::memory_order_relaxed); }

std::shared_ptr<const GeneratedKernel> load_generated_kernel(const std::string& source) {
  const std::string command = compiler();
  std::string signature = command;
  for (const std::string& flag : compiler_flags()) signature += " " + flag;
  const std::string key = cache_key(source, signature);
  KernelCache& cache = kernel_cache();
  // One compile at a time: a compiled function compiles each of its programs once.
  std::lock_guard<std::mutex> lock(cache.mutex);
  if (auto kernel = cache.loaded[key].lock()) return kernel;
  if (cache.failed.count(key) != 0) return nullptr;
  const auto fail = [&](const std::string& what) -> std::shared_ptr<const GeneratedKernel> {
    cache.failed.insert(key);
    if (!cache.reported)
      std::cerr << "[jit::compile] warning: " << what
                << ". Fused programs run without generated kernels (slower on large tensors); set "
                   "STRATA_JIT_CODEGEN=0 to not try. Later failures are not reported.\n";
    cache.reported = true;
    return nullptr;
  };
  try {
    auto kernel = compile_and_open(source, command, key);
    cache.loaded[key] = kernel;
    return kernel;
  } catch (const Failure& failure) {
    return fail(failure.what);
  } catch (const std::exception& error) {  // std::filesystem and allocation errors
    return fail(std::string("generating a kernel failed: ") + error.what());
  }
}

}  // namespace strata::jit::detail
