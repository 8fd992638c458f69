#include <stiefel/io/atomic_file.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

namespace stiefel::io {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const fs::path& path, const std::string& what) { throw IoError(path.string() + ": " + what); }

std::string errno_text(int err) { return std::strerror(err); }

const char* kind_of(mode_t mode) {
  if (S_ISLNK(mode)) return "a symbolic link";
  if (S_ISDIR(mode)) return "a folder";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device node";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

void refuse_non_regular(const fs::path& path) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    if (errno == ENOTDIR) fail(path, "its folder path " + path.parent_path().string() + " is not a folder");
    fail(path, "cannot be examined (" + errno_text(errno) + ")");
  }
  if (!S_ISREG(st.st_mode))
    fail(path, std::string("exists and is ") + kind_of(st.st_mode) + "; refusing to replace it with a file");
}

void make_parent(const fs::path& path) {
  if (path.filename().empty()) fail(path, "not a file path");
  const fs::path parent = path.parent_path();
  if (parent.empty()) return;
  std::error_code ec;
  if (fs::is_directory(parent, ec)) return;
  fs::create_directories(parent, ec);
  if (ec) fail(path, "cannot create its folder " + parent.string() + " (" + ec.message() + ")");
}

void fsync_path(const fs::path& file, const fs::path& reported, bool directory) {
  const int fd = ::open(file.c_str(), (directory ? O_RDONLY | O_DIRECTORY : O_RDONLY) | O_CLOEXEC);
  if (fd < 0) {
    if (directory) return;  // best effort for the folder entry
    fail(reported, "cannot reopen " + file.string() + " to sync it (" + errno_text(errno) + ")");
  }
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && !(directory && (err == EINVAL || err == EROFS)))
    fail(reported, "fsync of " + file.string() + " failed (" + errno_text(err) + ")");
}

void write_all(const fs::path& tmp, const fs::path& reported, std::string_view content) {
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) fail(reported, "cannot create " + tmp.string() + " (" + errno_text(errno) + ")");
  std::size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      fail(reported, "write to " + tmp.string() + " failed after " + std::to_string(done) + " of " +
                         std::to_string(content.size()) + " bytes (" + errno_text(err) + ")");
    }
    done += std::size_t(n);
  }
  if (::fsync(fd) != 0) {
    const int err = errno;
    ::close(fd);
    fail(reported, "fsync of " + tmp.string() + " failed (" + errno_text(err) + ")");
  }
  if (::close(fd) != 0) fail(reported, "close of " + tmp.string() + " failed (" + errno_text(errno) + ")");
}

bool process_alive(long pid) {
  if (pid <= 0) return true;  // not ours to judge
  return ::kill(pid_t(pid), 0) == 0 || errno == EPERM;
}

// This machine's name, for temporaries in folders that several machines share.
std::string host_name() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || !name[0]) return "localhost";
  std::string h = name;
  for (char& ch : h)
    if (ch == '/' || ch == '\0') ch = '_';
  return h;
}

}  // namespace

fs::path temporary_path(const fs::path& path) {
  return fs::path(path.string() + ".tmp." + std::to_string(::getpid()) + "." + host_name());
}

int remove_stale_temporaries(const fs::path& path) {
  const fs::path parent = path.parent_path().empty() ? fs::path(".") : path.parent_path();
  const std::string prefix = path.filename().string() + ".tmp.";
  int removed = 0;
  std::error_code ec;
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    // PID.HOST (or PID alone, as earlier versions wrote): only this machine's processes can be judged.
    const std::string rest = name.substr(prefix.size());
    const std::string digits = rest.substr(0, rest.find('.'));
    const std::string host = rest.find('.') == std::string::npos ? "" : rest.substr(rest.find('.') + 1);
    if (digits.empty() || digits.find_first_not_of("0123456789") != std::string::npos || digits.size() > 9) continue;
    if (!host.empty() && host != host_name()) continue;
    if (process_alive(std::stol(digits))) continue;
    std::error_code rm;
    if (it->is_regular_file(rm) && fs::remove(it->path(), rm)) ++removed;
  }
  return removed;
}

void check_output_path(const fs::path& path) {
  if (path.empty() || path.filename().empty()) fail(path, "not a file path");
  refuse_non_regular(path);
  const fs::path parent = path.parent_path();
  std::error_code ec;
  if (!parent.empty() && fs::exists(parent, ec) && !fs::is_directory(parent, ec))
    fail(path, "its folder " + parent.string() + " is not a folder");
  // The nearest existing ancestor must be writable.
  fs::path probe = parent.empty() ? fs::path(".") : parent;
  while (!fs::exists(probe, ec)) {
    const fs::path up = probe.parent_path();
    if (up == probe) break;
    probe = up.empty() ? fs::path(".") : up;
  }
  if (::access(probe.c_str(), W_OK | X_OK) != 0)
    fail(path, "cannot be written: " + probe.string() + " is not writable (" + errno_text(errno) + ")");
}

PendingFile::PendingFile(fs::path path, const std::function<void(const fs::path&)>& writer)
    : path_(std::move(path)), tmp_(temporary_path(path_)) {
  refuse_non_regular(path_);
  make_parent(path_);
  remove_stale_temporaries(path_);
  std::error_code ec;
  fs::remove(tmp_, ec);  // one left by an earlier process with this PID
  try {
    writer(tmp_);
  } catch (const IoError&) {
    fs::remove(tmp_, ec);
    throw;
  } catch (const std::exception& e) {
    fs::remove(tmp_, ec);
    fail(path_, std::string("cannot write (") + e.what() + ")");
  }
  if (!fs::is_regular_file(tmp_, ec)) fail(path_, "the writer did not produce " + tmp_.string());
  try {
    fsync_path(tmp_, path_, false);
  } catch (...) {
    fs::remove(tmp_, ec);
    throw;
  }
}

PendingFile::PendingFile(fs::path path, std::string_view content)
    : PendingFile(path, [&](const fs::path& tmp) { write_all(tmp, path, content); }) {}

PendingFile::~PendingFile() {
  if (committed_) return;
  std::error_code ec;
  fs::remove(tmp_, ec);
}

void PendingFile::commit() {
  if (committed_) return;
  std::error_code ec;
  refuse_non_regular(path_);
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) {
    const int err = errno;
    fs::remove(tmp_, ec);
    fail(path_, "cannot rename " + tmp_.string() + " into place (" + errno_text(err) + ")");
  }
  committed_ = true;
  // The file is in place; syncing the folder entry is best effort (a failure is not a lost write).
  try {
    fsync_path(path_.parent_path().empty() ? fs::path(".") : path_.parent_path(), path_, true);
  } catch (const IoError&) {}
}

FolderLock::FolderLock(const fs::path& folder) {
  const fs::path lock = folder / ".lock";
  // Never through a planted link, never blocking on a planted FIFO.
  fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0644);
  if (fd_ < 0) fail(folder, "cannot open its lock file " + lock.string() + " (" + errno_text(errno) + ")");
  struct stat st {};
  if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd_);
    fd_ = -1;
    fail(folder, "its lock file " + lock.string() + " is not a regular file");
  }
  // A probe (folder_lock_held) holds a shared lock for an instant: wait up to 2 s for it to go.
  int rc = -1;
  for (int attempt = 0; attempt < 20; ++attempt) {
    rc = ::flock(fd_, LOCK_EX | LOCK_NB);
    if (rc == 0 || errno != EWOULDBLOCK) break;
    ::usleep(100000);
  }
  if (rc != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err == EWOULDBLOCK) fail(folder, "another process is writing this folder (it holds " + lock.string() + ")");
    fail(folder, "cannot lock " + lock.string() + " (" + errno_text(err) + ")");
  }
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the lock
}

bool folder_lock_held(const fs::path& folder) {
  const fs::path lock = folder / ".lock";
  // Never through a link, never blocking (a FIFO planted as .lock would block an ordinary open).
  const int fd = ::open(lock.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) return false;  // never locked (or unreadable: nobody can be holding it through it)
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return false;  // not a lock file FolderLock made
  }
  // A shared lock: it conflicts only with a writer's exclusive one, needs no write access (NFS
  // emulates flock with fcntl locks, whose exclusive kind needs a file open for writing), and
  // two probes do not see each other.
  const bool held = ::flock(fd, LOCK_SH | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  ::close(fd);  // releases the probe's lock when it got one
  return held;
}

void write_file_atomically(const fs::path& path, std::string_view content) {
  PendingFile file(path, content);
  file.commit();
}

void write_file_atomically(const fs::path& path, const std::function<void(const fs::path&)>& writer) {
  PendingFile file(path, writer);
  file.commit();
}

}  // namespace stiefel::io
