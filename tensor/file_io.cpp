// Whole-file reads and atomic writes on POSIX descriptors.
#include <strata/tensor/file_io.h>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include <strata/tensor/errors.h>

namespace strata::detail {

// Note [Atomic file writes]
// Writing a checkpoint in place destroys the previous one when the write fails halfway (disk
// full, a file-size limit, a crash). Every writer therefore goes through write_file_atomically:
// a new file "<path>.tmp.<pid>.<n>" in the same folder (so the rename cannot cross file systems)
// gets the whole contents, checked write by write, then fsync; only then does rename() replace
// `path`, which POSIX makes atomic. Any failure closes and unlinks the temporary file, and the
// old file keeps its bytes. The temporary file is created with mode 0666 (less the umask) like
// any other new file.
namespace {

std::atomic<uint64_t> temporary_file_counter{0};

std::string system_reason(int error) { return std::strerror(error); }

// Closes and unlinks the temporary file unless released.
struct TemporaryFile {
  std::string path;
  int descriptor = -1;
  ~TemporaryFile() {
    if (descriptor >= 0) ::close(descriptor);
    if (!path.empty()) ::unlink(path.c_str());
  }
};

}  // namespace

void FileSink::write(const void* data, size_t size) {
  const auto* bytes = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t written = ::write(descriptor_, bytes, size);
    if (written < 0 && errno == EINTR) continue;
    if (written <= 0)
      throw_error<ValueError>("[", op_, "] cannot write '", path_, "': ", system_reason(written < 0 ? errno : ENOSPC),
                         " (the previous file, if any, is unchanged)");
    bytes += written;
    size -= static_cast<size_t>(written);
  }
}

void write_file_atomically(const std::string& path, const std::function<void(FileSink&)>& writer, const char* op) {
  TemporaryFile temporary;
  temporary.path = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(temporary_file_counter++);
  temporary.descriptor = ::open(temporary.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (temporary.descriptor < 0) {
    int error = errno;
    temporary.path.clear();  // not ours to unlink
    throw_error<ValueError>("[", op, "] cannot open '", path, "' for writing: ", system_reason(error));
  }
  FileSink sink(temporary.descriptor, path, op);
  writer(sink);
  if (::fsync(temporary.descriptor) != 0)
    throw_error<ValueError>("[", op, "] cannot flush '", path, "' to disk: ", system_reason(errno));
  int descriptor = temporary.descriptor;
  temporary.descriptor = -1;
  if (::close(descriptor) != 0) throw_error<ValueError>("[", op, "] cannot write '", path, "': ", system_reason(errno));
  if (::rename(temporary.path.c_str(), path.c_str()) != 0)
    throw_error<ValueError>("[", op, "] cannot replace '", path, "': ", system_reason(errno));
  temporary.path.clear();
}

void write_file_bytes(const std::string& path, std::span<const uint8_t> bytes, const char* op) {
  write_file_atomically(path, [&](FileSink& sink) { sink.write(bytes); }, op);
}

namespace {
// Opens `path` for reading and checks it is not a directory; returns the descriptor and size.
int open_regular_file(const std::string& path, const char* op, off_t* size) {
  int descriptor = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (descriptor < 0) throw_error<ValueError>("[", op, "] cannot open '", path, "': ", system_reason(errno));
  struct stat status {};
  if (::fstat(descriptor, &status) != 0) {
    int error = errno;
    ::close(descriptor);
    throw_error<ValueError>("[", op, "] cannot read '", path, "': ", system_reason(error));
  }
  if (S_ISDIR(status.st_mode)) {
    ::close(descriptor);
    throw_error<ValueError>("[", op, "] cannot read '", path, "': it is a directory, not a file");
  }
  *size = S_ISREG(status.st_mode) ? status.st_size : 0;
  return descriptor;
}
}  // namespace

void check_readable_file(const std::string& path, const char* op) {
  off_t size = 0;
  ::close(open_regular_file(path, op, &size));
}

namespace {
// Reads up to `size` bytes; fewer only at the end of the file. Returns the count read.
size_t read_fully(int descriptor, uint8_t* data, size_t size, const std::string& path, const char* op) {
  size_t done = 0;
  while (done < size) {
    ssize_t count = ::read(descriptor, data + done, size - done);
    if (count < 0 && errno == EINTR) continue;
    if (count < 0) {
      int error = errno;
      ::close(descriptor);
      throw_error<ValueError>("[", op, "] cannot read '", path, "': ", system_reason(error));
    }
    if (count == 0) break;
    done += static_cast<size_t>(count);
  }
  return done;
}
}  // namespace

std::vector<uint8_t> read_file_bytes(const std::string& path, const char* op) {
  off_t size = 0;
  int descriptor = open_regular_file(path, op, &size);
  std::vector<uint8_t> bytes(static_cast<size_t>(size));
  bytes.resize(read_fully(descriptor, bytes.data(), bytes.size(), path, op));
  // Reads on past st_size, so pipes and files that grew meanwhile are read whole.
  uint8_t chunk[65536];
  while (size_t count = read_fully(descriptor, chunk, sizeof chunk, path, op)) bytes.insert(bytes.end(), chunk, chunk + count);
  ::close(descriptor);
  return bytes;
}

}  // namespace strata::detail
