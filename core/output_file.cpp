#include "core/output_file.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <mutex>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/errors.h"

namespace cs {
namespace {

namespace fs = std::filesystem;

// ---- temporary paths removed on SIGINT, SIGTERM and SIGHUP --------------------------------------
// A fixed table the signal handler can walk without allocating: unlink() and rmdir() are
// async-signal-safe. A slot is published (state 1 file, 2 folder) only after its path is copied.
constexpr std::size_t kSlots = 64;
constexpr std::size_t kPathMax = 4096;
struct CleanupSlot {
  std::atomic<int> state{0};  // 0 free, 1 a file, 2 a folder, 3 being filled
  char path[kPathMax];
};
CleanupSlot g_slots[kSlots];

extern "C" void remove_temporaries_and_reraise(int sig) {
  for (auto& s : g_slots) {
    if (s.state.load(std::memory_order_acquire) == 1) ::unlink(s.path);
  }
  for (auto& s : g_slots) {
    if (s.state.load(std::memory_order_acquire) == 2) ::rmdir(s.path);
  }
  ::signal(sig, SIG_DFL);
  ::raise(sig);
}

void install_signal_handlers() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0) continue;
      if (old.sa_handler == SIG_IGN) continue;  // nohup and friends: stay ignored
      struct sigaction sa {};
      sa.sa_handler = remove_temporaries_and_reraise;
      ::sigemptyset(&sa.sa_mask);
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

// Returns the slot, or -1 when the table is full or the path too long (the path is then only
// removed on a normal exit).
int register_temporary(const std::string& path, int kind) {
  if (path.size() + 1 > kPathMax) return -1;
  install_signal_handlers();
  for (std::size_t i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (g_slots[i].state.compare_exchange_strong(expected, 3)) {
      std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
      g_slots[i].state.store(kind, std::memory_order_release);
      return static_cast<int>(i);
    }
  }
  return -1;
}

void unregister_temporary(int slot) {
  if (slot >= 0) g_slots[static_cast<std::size_t>(slot)].state.store(0, std::memory_order_release);
}

// Holds SIGINT, SIGTERM and SIGHUP back while a temporary path is created and registered: one
// that came in between would find the path not yet in the table and leave it behind (a staging
// folder, or a file that keeps the folder from being removed). A signal held back is delivered
// when the guard ends, with the path registered.
class SignalsHeld {
 public:
  SignalsHeld() {
    install_signal_handlers();
    sigset_t set;
    ::sigemptyset(&set);
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) ::sigaddset(&set, sig);
    ::pthread_sigmask(SIG_BLOCK, &set, &old_);
  }
  ~SignalsHeld() { ::pthread_sigmask(SIG_SETMASK, &old_, nullptr); }
  SignalsHeld(const SignalsHeld&) = delete;
  SignalsHeld& operator=(const SignalsHeld&) = delete;

 private:
  sigset_t old_;
};

// ---- writing ------------------------------------------------------------------------------------

[[noreturn]] void fail(const std::string& option, const std::string& path, const std::string& why) {
  throw InputError("", option, "\"" + path + "\": " + why);
}

std::string errno_text(int err) { return std::strerror(err); }

// Writes everything or reports the errno.
int write_all(int fd, std::string_view content) {
  const char* p = content.data();
  std::size_t left = content.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += n;
    left -= static_cast<std::size_t>(n);
  }
  return 0;
}

mode_t current_umask() {
  const mode_t mask = ::umask(0);
  ::umask(mask);
  return mask;
}

mode_t default_file_mode() { return static_cast<mode_t>(0666 & ~current_umask()); }

std::string parent_of(const fs::path& p) {
  const fs::path parent = p.parent_path();
  return parent.empty() ? std::string(".") : parent.string();
}

// A unique temporary file beside `target`, filled and renamed over it.
void replace_file(const std::string& target, std::string_view content, mode_t mode, const std::string& option,
                  const std::string& shown) {
  const fs::path t(target);
  std::string tmpl = (fs::path(parent_of(t)) / ("." + t.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-XXXXXX")).string();
  int fd = -1, slot = -1, err = 0;
  {
    const SignalsHeld held;
    fd = ::mkstemp(tmpl.data());
    err = errno;
    if (fd >= 0) slot = register_temporary(tmpl, 1);
  }
  if (fd < 0) fail(option, shown, "cannot create a file beside it: " + errno_text(err));
  err = write_all(fd, content);
  if (err == 0 && ::fchmod(fd, mode) != 0) err = errno;
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err == 0 && std::rename(tmpl.c_str(), target.c_str()) != 0) err = errno;
  if (err != 0) {
    ::unlink(tmpl.c_str());
    unregister_temporary(slot);
    fail(option, shown, "cannot write: " + errno_text(err));
  }
  unregister_temporary(slot);
}

// A device or a FIFO: opened for writing as it is (never created, truncated or replaced).
void write_through(const std::string& target, std::string_view content, const std::string& option, const std::string& shown) {
  const int fd = ::open(target.c_str(), O_WRONLY | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) fail(option, shown, "cannot open for writing: " + errno_text(errno));
  int err = write_all(fd, content);
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) fail(option, shown, "cannot write: " + errno_text(err));
}

bool folder_is_empty(const std::string& path) {
  std::error_code ec;
  return fs::is_empty(path, ec) && !ec;
}

// Staging folders of this target left by runs that no longer exist (killed by SIGKILL).
void remove_stale_staging(const std::string& parent, const std::string& name) {
  const std::string prefix = "." + name + ".tmp-";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(parent, ec)) {
    const std::string n = entry.path().filename().string();
    if (n.rfind(prefix, 0) != 0) continue;
    const std::string rest = n.substr(prefix.size());
    const std::size_t dash = rest.find('-');
    if (dash == std::string::npos || dash == 0) continue;
    char* end = nullptr;
    const long pid = std::strtol(rest.c_str(), &end, 10);
    if (end != rest.c_str() + dash || pid <= 0) continue;
    if (::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    std::error_code rm;
    fs::remove_all(entry.path(), rm);
  }
}

}  // namespace

void write_output_file(const std::string& path, std::string_view content, const std::string& option) {
  if (path.empty()) throw InputError("", option, "expected a file name; got an empty string");
  if (path == "-") {
    std::cout.write(content.data(), static_cast<std::streamsize>(content.size()));
    std::cout.flush();
    if (!std::cout) fail(option, path, "cannot write to standard output");
    return;
  }
  struct stat st {};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno != ENOENT) fail(option, path, errno_text(errno));
    replace_file(path, content, default_file_mode(), option, path);
    return;
  }
  std::string target = path;
  if (S_ISLNK(st.st_mode)) {
    if (::stat(path.c_str(), &st) != 0) fail(option, path, "a symbolic link to nothing; refusing to replace it");
    char* real = ::realpath(path.c_str(), nullptr);
    if (real == nullptr) fail(option, path, errno_text(errno));
    target = real;
    std::free(real);
  }
  if (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode)) {
    write_through(target, content, option, path);
  } else if (S_ISREG(st.st_mode)) {
    replace_file(target, content, st.st_mode & 07777, option, path);
  } else if (S_ISDIR(st.st_mode)) {
    fail(option, path, "is a folder; expected a file name");
  } else {
    fail(option, path, "is not a regular file; refusing to replace it");
  }
}

// ---- OutputFolder -------------------------------------------------------------------------------

OutputFolder::OutputFolder(std::string target, std::string option, bool force, std::vector<std::string> names)
    : target_(std::move(target)), option_(std::move(option)), force_(force), names_(std::move(names)) {
  if (target_.empty()) throw InputError("", option_, "expected a folder name; got an empty string");
  if (target_ == "-") fail(option_, target_, "a folder cannot be standard output");
  while (target_.size() > 1 && target_.back() == '/') target_.pop_back();
  struct stat st {};
  if (::lstat(target_.c_str(), &st) == 0) {
    if (S_ISLNK(st.st_mode)) {
      if (::stat(target_.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) fail(option_, target_, "a symbolic link to something other than a folder; refusing to replace it");
      char* real = ::realpath(target_.c_str(), nullptr);
      if (real == nullptr) fail(option_, target_, errno_text(errno));
      target_ = real;
      std::free(real);
    }
    if (!S_ISDIR(st.st_mode)) fail(option_, target_, "is not a folder");
    if (!force_ && !folder_is_empty(target_)) fail(option_, target_, "exists and holds files; give --force to replace it");
    check_only_results();
  } else if (errno != ENOENT) {
    fail(option_, target_, errno_text(errno));
  }
  const fs::path t(target_);
  const std::string parent = parent_of(t);
  std::error_code ec;
  if (!fs::is_directory(parent, ec)) fail(option_, target_, "the folder \"" + parent + "\" it goes in does not exist");
  remove_stale_staging(parent, t.filename().string());
  std::string tmpl = (fs::path(parent) / ("." + t.filename().string() + ".tmp-" + std::to_string(::getpid()) + "-XXXXXX")).string();
  {
    const SignalsHeld held;
    if (::mkdtemp(tmpl.data()) == nullptr) {
      const int err = errno;
      fail(option_, target_, "cannot create a folder beside it: " + errno_text(err));
    }
    folder_slot_ = register_temporary(tmpl, 2);
  }
  staging_ = tmpl;
  ::chmod(staging_.c_str(), static_cast<mode_t>(0777 & ~current_umask()));  // mkdtemp makes it private
}

OutputFolder::~OutputFolder() { discard(); }

void OutputFolder::check_only_results() const {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(target_, ec)) {
    const std::string n = entry.path().filename().string();
    std::error_code kind;
    if (!entry.is_regular_file(kind) || std::find(names_.begin(), names_.end(), n) == names_.end()) {
      fail(option_, target_, "holds \"" + n + "\", which clustersim does not write there; refusing to delete it, even with --force");
    }
  }
}

void OutputFolder::write(const std::string& name, std::string_view content) {
  const std::string path = (fs::path(staging_) / name).string();
  const std::string shown = (fs::path(target_) / name).string();
  int fd = -1, open_err = 0;
  {
    const SignalsHeld held;
    fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    open_err = errno;
    if (fd >= 0) files_.emplace_back(register_temporary(path, 1), path);
  }
  if (fd < 0) fail(option_, shown, "cannot create: " + errno_text(open_err));
  int err = write_all(fd, content);
  if (::close(fd) != 0 && err == 0) err = errno;
  if (err != 0) fail(option_, shown, "cannot write: " + errno_text(err));
}

void OutputFolder::commit() {
  if (std::rename(staging_.c_str(), target_.c_str()) != 0) {
    const int err = errno;
    if (err != ENOTEMPTY && err != EEXIST) fail(option_, target_, "cannot put the results in place: " + errno_text(err));
    if (!force_) fail(option_, target_, "another run wrote this folder while this one ran; nothing was written");
    check_only_results();  // again: something may have been put there while this run ran
    // Swap the new folder in atomically, then delete the old one (now under the staging name).
    // Where the file system cannot exchange, the old folder is moved aside first: the target is
    // then briefly absent, never partial.
    std::string old = staging_;
    if (::renameat2(AT_FDCWD, staging_.c_str(), AT_FDCWD, target_.c_str(), RENAME_EXCHANGE) != 0) {
      old = staging_ + ".old";
      if (std::rename(target_.c_str(), old.c_str()) != 0) fail(option_, target_, "cannot move the old folder aside: " + errno_text(errno));
      if (std::rename(staging_.c_str(), target_.c_str()) != 0) {
        const int e2 = errno;
        std::rename(old.c_str(), target_.c_str());
        fail(option_, target_, "cannot put the results in place: " + errno_text(e2));
      }
    }
    std::error_code ec;
    fs::remove_all(old, ec);
  }
  committed_ = true;
  for (const auto& f : files_) unregister_temporary(f.first);
  unregister_temporary(folder_slot_);
  files_.clear();
}

void OutputFolder::discard() noexcept {
  if (committed_ || staging_.empty()) return;
  std::error_code ec;
  fs::remove_all(staging_, ec);
  for (const auto& f : files_) unregister_temporary(f.first);
  unregister_temporary(folder_slot_);
  files_.clear();
  staging_.clear();
}

}  // namespace cs
