// Atomic, checked file output. Every file the project writes (certificate, run record, checkpoint,
// report, figure) goes through here:
//   PATH.tmp.PID is created (O_EXCL) in PATH's folder, every write is checked, the file is fsynced,
//   then renamed over PATH and the folder fsynced. A reader sees the old file or the new one,
//   never half of one; a failed write (disk full, no permission) leaves PATH as it was.
// PATH must be a regular file or absent: a symbolic link, folder, FIFO or device node is refused,
// never replaced. Temporaries left by processes that no longer exist are removed.
#pragma once

#include <filesystem>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>

namespace stiefel::io {

// A file that could not be read or written; the message names the path and the reason.
struct IoError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Throws IoError unless PATH can be an output file: absent or a regular file (not a symbolic
// link), with a parent that is a folder or can be created. Cheap: call it before a long job.
void check_output_path(const std::filesystem::path& path);

// Writes CONTENT to PATH atomically (creating PATH's folder if needed).
void write_file_atomically(const std::filesystem::path& path, std::string_view content);

// A temporary written by WRITER (which gets the temporary's path, e.g. for torch::save), fsynced,
// and renamed over PATH by commit(). Destroyed uncommitted, it removes the temporary. This is the
// two-phase form: the checkpoint is written and hashed, the record naming its hash is written,
// then the checkpoint is committed.
class PendingFile {
 public:
  PendingFile(std::filesystem::path path, const std::function<void(const std::filesystem::path&)>& writer);
  PendingFile(std::filesystem::path path, std::string_view content);
  PendingFile(const PendingFile&) = delete;
  PendingFile& operator=(const PendingFile&) = delete;
  ~PendingFile();

  const std::filesystem::path& temporary() const { return tmp_; }
  void commit();

 private:
  std::filesystem::path path_, tmp_;
  bool committed_ = false;
};

// One-phase form of PendingFile.
void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(const std::filesystem::path&)>& writer);

// The temporary name this process uses for PATH: PATH.tmp.PID.HOST.
std::filesystem::path temporary_path(const std::filesystem::path& path);

// Removes PATH.tmp.PID.HOST (and PATH.tmp.PID) files of this machine whose process PID no longer
// exists; another machine's temporaries in a shared folder are left alone. Returns how many.
int remove_stale_temporaries(const std::filesystem::path& path);

// An exclusive advisory lock (flock) on FOLDER/.lock, held for the object's lifetime: one process at
// a time writes a run folder. Throws IoError naming the folder when another process holds it (after
// waiting up to 2 s, so that a momentary probe by folder_lock_held does not refuse a writer).
class FolderLock {
 public:
  explicit FolderLock(const std::filesystem::path& folder);
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  ~FolderLock();

 private:
  int fd_ = -1;
};

// Whether a process holds FOLDER's lock now (a FolderLock on it): probed with a shared lock, without
// creating the lock file and without waiting. Across machines it is as reliable as flock on the shared file system.
bool folder_lock_held(const std::filesystem::path& folder);

}  // namespace stiefel::io
