#pragma once
// Whole-file reads and crash-safe writes, shared by every reader and writer of files
// (.npy, safetensors, checkpoints, loss curves). Errors name the op and the path.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace strata::detail {

// Appends bytes to the temporary file of write_file_atomically; every write is checked.
class FileSink {
 public:
  FileSink(int descriptor, const std::string& path, const char* op) : descriptor_(descriptor), path_(path), op_(op) {}
  // Throws ValueError naming the op, the final path and the system's reason on a failed write.
  void write(const void* data, size_t size);
  void write(std::string_view text) { write(text.data(), text.size()); }
  void write(std::span<const uint8_t> bytes) { write(bytes.data(), bytes.size()); }

 private:
  int descriptor_;
  const std::string& path_;
  const char* op_;
};

// Writes `path` so that it holds either its old contents or all of the new ones, never a torn
// mix: `writer` fills a temporary file in the same folder, which is flushed to disk and renamed
// over `path` only when complete. On any failure (an exception from `writer` included) the
// temporary file is removed, `path` is left as it was, and the error propagates.
// See Note [Atomic file writes] in file_io.cpp.
void write_file_atomically(const std::string& path, const std::function<void(FileSink&)>& writer, const char* op);
void write_file_bytes(const std::string& path, std::span<const uint8_t> bytes, const char* op);

// The whole file. Throws ValueError naming `op` and the path when it is missing, a directory,
// or cannot be read.
std::vector<uint8_t> read_file_bytes(const std::string& path, const char* op);
// Throws ValueError naming `op` and the path unless it names an existing file that is not a
// directory (for readers that open files themselves, such as the gzip readers).
void check_readable_file(const std::string& path, const char* op);

}  // namespace strata::detail
