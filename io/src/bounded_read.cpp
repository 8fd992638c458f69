#include "stiefel/io/bounded_read.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace stiefel::io {

namespace {

// What the file at PATH is, in words, from its mode.
std::string kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

// Opens PATH without blocking (a FIFO would block an ordinary open), then checks what it is.
int open_regular(const std::filesystem::path& path, std::uintmax_t max_bytes, const std::string& what,
                 std::uintmax_t& size) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) throw IoError(path.string() + ": cannot be read as " + what + " (" + std::strerror(errno) + ")");
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    const std::string kind = kind_of(st.st_mode);
    ::close(fd);
    throw IoError(path.string() + ": " + kind + ", not " + what + " (a regular file is expected)");
  }
  size = std::uintmax_t(st.st_size);
  if (size > max_bytes) {
    ::close(fd);
    throw IoError(path.string() + ": " + byte_count(size) + ", larger than " + what + " can be (at most " +
                  byte_count(max_bytes) + ")");
  }
  return fd;
}

}  // namespace

std::string byte_count(std::uintmax_t bytes) {
  const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  std::uintmax_t v = bytes;
  while (u < 4 && v >= 1024 && v % 1024 == 0) {
    v /= 1024;
    ++u;
  }
  return std::to_string(v) + " " + units[u];
}

std::uintmax_t check_regular_file(const std::filesystem::path& path, std::uintmax_t max_bytes,
                                  const std::string& what) {
  std::uintmax_t size = 0;
  ::close(open_regular(path, max_bytes, what, size));
  return size;
}

std::string read_regular_file(const std::filesystem::path& path, std::uintmax_t max_bytes, const std::string& what) {
  std::uintmax_t size = 0;
  const int fd = open_regular(path, max_bytes, what, size);
  std::string out;
  out.reserve(std::size_t(size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      throw IoError(path.string() + ": cannot be read as " + what + " (" + std::strerror(e) + ")");
    }
    if (n == 0) break;
    out.append(buf, std::size_t(n));
    if (out.size() > max_bytes) {  // grew while it was read
      ::close(fd);
      throw IoError(path.string() + ": larger than " + what + " can be (at most " + byte_count(max_bytes) + ")");
    }
  }
  ::close(fd);
  return out;
}

}  // namespace stiefel::io
