// LD_PRELOAD shim for the fault-injection tests; inert unless one of its variables is set.
//   STIEFEL_FAULT_ENOSPC=SUBSTR      write/writev/pwrite to a file whose path contains SUBSTR fail
//                                    with ENOSPC (a full disk), after STIEFEL_FAULT_ENOSPC_SKIP
//                                    such writes (default 0) have succeeded.
//   STIEFEL_FAULT_EIO_FSYNC=SUBSTR   fsync/fdatasync of a file whose path contains SUBSTR fail with
//                                    EIO (a disk that lost the data it had accepted).
//   STIEFEL_FAULT_EIO_CLOSE=SUBSTR   close of such a file fails with EIO after closing it (as Linux
//                                    does: the descriptor is gone, the error reports a lost write).
//   STIEFEL_FAULT_KILL_AT_RENAME=K   the process SIGKILLs itself just before its K-th rename()
//                                    (1-based), i.e. between rename K−1 and rename K.
//   STIEFEL_FAULT_NO_CONVERGENCE=LIST LAPACK's dgesdd_ (LIST contains "gesdd") and dsyevd_ ("syevd")
//                                    report no convergence (info = 1, outputs untouched) once
//                                    STIEFEL_FAULT_NO_CONVERGENCE_SKIP computing calls of those
//                                    named (together, default 0) have run; workspace queries run.
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include <atomic>

namespace {

std::atomic<long> g_renames{0};
std::atomic<long> g_matching_writes{0};
std::atomic<long> g_lapack_calls{0};

// Whether this computing call of ROUTINE is to report no convergence.
bool no_convergence(const char* routine) {
  const char* list = getenv("STIEFEL_FAULT_NO_CONVERGENCE");
  if (!list || !strstr(list, routine)) return false;
  const char* skip = getenv("STIEFEL_FAULT_NO_CONVERGENCE_SKIP");
  return ++g_lapack_calls > (skip ? atol(skip) : 0);
}

// Whether FD's path contains the value of the variable VAR (set and not empty).
bool fd_path_contains(int fd, const char* var) {
  const char* want = getenv(var);
  if (!want || !*want) return false;
  char link[64], target[4096];
  snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
  const ssize_t n = readlink(link, target, sizeof target - 1);
  if (n <= 0) return false;
  target[n] = '\0';
  return strstr(target, want) != nullptr;
}

bool path_matches(int fd) {
  if (!fd_path_contains(fd, "STIEFEL_FAULT_ENOSPC")) return false;
  const char* skip = getenv("STIEFEL_FAULT_ENOSPC_SKIP");
  return g_matching_writes++ >= (skip ? atol(skip) : 0);
}

template <class F>
F next(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

}  // namespace

extern "C" {

ssize_t write(int fd, const void* buf, size_t count) {
  static auto real = next<ssize_t (*)(int, const void*, size_t)>("write");
  if (path_matches(fd)) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd, buf, count);
}

ssize_t writev(int fd, const struct iovec* iov, int iovcnt) {
  static auto real = next<ssize_t (*)(int, const struct iovec*, int)>("writev");
  if (path_matches(fd)) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd, iov, iovcnt);
}

ssize_t pwrite(int fd, const void* buf, size_t count, off_t offset) {
  static auto real = next<ssize_t (*)(int, const void*, size_t, off_t)>("pwrite");
  if (path_matches(fd)) {
    errno = ENOSPC;
    return -1;
  }
  return real(fd, buf, count, offset);
}

int fsync(int fd) {
  static auto real = next<int (*)(int)>("fsync");
  if (fd_path_contains(fd, "STIEFEL_FAULT_EIO_FSYNC")) {
    errno = EIO;
    return -1;
  }
  return real(fd);
}

int fdatasync(int fd) {
  static auto real = next<int (*)(int)>("fdatasync");
  if (fd_path_contains(fd, "STIEFEL_FAULT_EIO_FSYNC")) {
    errno = EIO;
    return -1;
  }
  return real(fd);
}

int close(int fd) {
  static auto real = next<int (*)(int)>("close");
  const bool fail = fd_path_contains(fd, "STIEFEL_FAULT_EIO_CLOSE");
  const int rc = real(fd);
  if (fail && rc == 0) {
    errno = EIO;
    return -1;
  }
  return rc;
}

int rename(const char* from, const char* to) {
  static auto real = next<int (*)(const char*, const char*)>("rename");
  if (const char* k = getenv("STIEFEL_FAULT_KILL_AT_RENAME"))
    if (++g_renames == atol(k)) kill(getpid(), SIGKILL);
  return real(from, to);
}

// LAPACK (Fortran calling convention; the trailing hidden lengths of the character arguments are
// passed on as they came).
void dgesdd_(const char* jobz, const int* m, const int* n, double* a, const int* lda, double* s, double* u,
             const int* ldu, double* vt, const int* ldvt, double* work, const int* lwork, int* iwork, int* info,
             size_t jobz_len) {
  using Fn = void (*)(const char*, const int*, const int*, double*, const int*, double*, double*, const int*, double*,
                      const int*, double*, const int*, int*, int*, size_t);
  static auto real = next<Fn>("dgesdd_");
  if (*lwork != -1 && no_convergence("gesdd")) {
    *info = 1;
    return;
  }
  real(jobz, m, n, a, lda, s, u, ldu, vt, ldvt, work, lwork, iwork, info, jobz_len);
}

void dsyevd_(const char* jobz, const char* uplo, const int* n, double* a, const int* lda, double* w, double* work,
             const int* lwork, int* iwork, const int* liwork, int* info, size_t jobz_len, size_t uplo_len) {
  using Fn = void (*)(const char*, const char*, const int*, double*, const int*, double*, double*, const int*, int*,
                      const int*, int*, size_t, size_t);
  static auto real = next<Fn>("dsyevd_");
  if (*lwork != -1 && *liwork != -1 && no_convergence("syevd")) {
    *info = 1;
    return;
  }
  real(jobz, uplo, n, a, lda, w, work, lwork, iwork, liwork, info, jobz_len, uplo_len);
}

}  // extern "C"
