#include "process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace stiefel::runner::detail {

namespace {

// A run's log, opened for appending, never through a link (O_NOFOLLOW), never blocking on a FIFO
// (O_NONBLOCK), and only as a regular file: a link planted in a results folder must not make the run
// append to a file outside it, nor a FIFO hang it.
int open_run_log(const std::filesystem::path& log) {
  const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0644);
  if (fd < 0)
    throw std::runtime_error(log.string() + ": cannot be opened as the run's log (" +
                             (errno == ELOOP ? std::string("a symbolic link") : std::string(std::strerror(errno))) +
                             ")");
  struct stat st {};
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    throw std::runtime_error(log.string() + ": not a regular file (the run's log must be one)");
  }
  return fd;
}

}  // namespace

void append_to_log(const std::filesystem::path& log, const std::string& text) {
  const int fd = open_run_log(log);
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int e = errno;
      close(fd);
      throw std::runtime_error(log.string() + ": cannot be written (" + std::strerror(e) + ")");
    }
    done += std::size_t(n);
  }
  close(fd);
}

pid_t spawn_logged(const std::string& executable, const std::vector<std::string>& args,
                   const std::filesystem::path& log) {
  const int fd = open_run_log(log);
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close(fd);
    throw std::runtime_error(std::string("fork failed: ") + std::strerror(e));
  }
  if (pid == 0) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    dup2(fd, STDOUT_FILENO);  // dup2 clears close-on-exec on the copies
    dup2(fd, STDERR_FILENO);
    std::vector<char*> argv;
    static std::string self = "stiefel";
    argv.push_back(self.data());
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execv(executable.c_str(), argv.data());
    _exit(127);
  }
  close(fd);
  return pid;
}

Captured run_captured(const std::vector<std::string>& command) {
  int out[2] = {-1, -1}, err[2] = {-1, -1}, status_pipe[2] = {-1, -1};
  const auto close_all = [&] {
    for (int* p : {out, err, status_pipe})
      for (int i = 0; i < 2; ++i)
        if (p[i] >= 0) close(p[i]);
  };
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 || pipe2(status_pipe, O_CLOEXEC) != 0) {
    const int e = errno;
    close_all();
    throw std::runtime_error(std::string("pipe failed: ") + std::strerror(e));
  }
  const pid_t pid = fork();
  if (pid < 0) {
    const int e = errno;
    close_all();
    throw std::runtime_error(std::string("fork failed: ") + std::strerror(e));
  }
  if (pid == 0) {
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    std::vector<char*> argv;
    for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    execvp(argv[0], argv.data());
    const int e = errno;  // exec failed: tell the parent why through the close-on-exec pipe
    (void)!write(status_pipe[1], &e, sizeof e);
    _exit(127);
  }
  close(out[1]);
  close(err[1]);
  close(status_pipe[1]);
  Captured c;
  pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
  std::string* sinks[2] = {&c.out, &c.err};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      for (auto& f : fds)  // the child sees its output closed and ends; it is reaped below
        if (f.fd >= 0) close(f.fd);
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, std::size_t(n));
      } else if (n == 0 || errno != EINTR) {
        close(fds[i].fd);
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int exec_errno = 0;
  const bool exec_failed = read(status_pipe[0], &exec_errno, sizeof exec_errno) == sizeof exec_errno;
  close(status_pipe[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
  if (exec_failed) throw std::runtime_error(command[0] + ": cannot run it (" + std::strerror(exec_errno) + ")");
  c.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return c;
}

}  // namespace stiefel::runner::detail
