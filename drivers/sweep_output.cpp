#include "drivers/sweep_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/errors.h"

namespace cs::drv {

namespace {

[[noreturn]] void fail(const std::string& option, const std::string& path, const std::string& why) {
  throw InputError("", option, "\"" + path + "\": " + why);
}

bool starts_row(const std::string& line, const std::string& key) {
  return line.size() > key.size() && line.compare(0, key.size(), key) == 0 && line[key.size()] == ',';
}

// The file's bytes, or "" when it does not exist.
std::string read_all(const std::string& path, const std::string& option) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return "";
    fail(option, path, "cannot be read");
  }
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) fail(option, path, "cannot be read");
  return text;
}

}  // namespace

results::RowFormat sweep_format_of(const std::string& path, const std::string& option) {
  const auto ends = [&](const char* ext) {
    const std::size_t n = std::strlen(ext);
    return path.size() > n && path.compare(path.size() - n, n, ext) == 0;
  };
  if (ends(".csv")) return results::RowFormat::kCsv;
  if (ends(".jsonl")) return results::RowFormat::kJsonLines;
  throw InputError("", option, "\"" + path + "\": expected a file name ending in .csv or .jsonl (the format of the rows)");
}

SweepResultsFile::SweepResultsFile(std::string path, results::RowFormat format, const std::string& header,
                                   std::size_t parameters, std::vector<std::string> keys, Mode mode, std::string option)
    : path_(std::move(path)), option_(std::move(option)), keys_(std::move(keys)) {
  if (path_.empty()) fail(option_, path_, "expected a file name");
  struct stat st {};
  const bool exists = ::stat(path_.c_str(), &st) == 0;
  if (exists && !S_ISREG(st.st_mode)) fail(option_, path_, "not a regular file; a sweep appends its rows to a file");
  std::string text = exists ? read_all(path_, option_) : std::string();
  std::size_t keep = 0;  // bytes of the file kept
  if (!text.empty() && mode == Mode::kFresh) {
    fail(option_, path_, "exists and holds rows; --resume continues it, --force starts it over");
  }
  if (mode == Mode::kResume && !text.empty()) {
    std::size_t pos = 0;
    std::size_t line_no = 0;
    const auto whole_line = [&](std::string& line) {  // false at the end or at a torn last line
      const std::size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) return false;
      line = text.substr(pos, nl - pos);
      pos = nl + 1;
      ++line_no;
      return true;
    };
    std::string line;
    if (!header.empty()) {
      if (whole_line(line)) {
        if (line + "\n" != header) fail(option_, path_, "its header is not this sweep's (another sweep, or another version of clustersim); --force starts it over");
        keep = pos;
      }
    }
    if (header.empty() || keep > 0) {
      while (whole_line(line)) {
        if (present_ >= keys_.size() || !starts_row(line, keys_[present_]) || !results::is_whole_sweep_row(format, line, parameters)) {
          fail(option_, path_, "line " + std::to_string(line_no) + " is not the row this sweep expects there (written by another sweep or edited?); --force starts it over");
        }
        ++present_;
        keep = pos;
      }
    }
  }
  if (mode == Mode::kResume && keep < text.size() && !text.empty()) {
    // A torn last line (a crash in the middle of a write): cut it, and redo its point.
    if (::truncate(path_.c_str(), static_cast<off_t>(keep)) != 0) fail(option_, path_, std::strerror(errno));
  }
  const int flags = O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | (mode == Mode::kForce ? O_TRUNC : 0);
  fd_ = ::open(path_.c_str(), flags, 0644);
  if (fd_ < 0) fail(option_, path_, std::strerror(errno));
  if (keep == 0 && !header.empty()) append(header);
  next_ = present_;
}

SweepResultsFile::~SweepResultsFile() {
  if (fd_ >= 0) ::close(fd_);
}

void SweepResultsFile::append(const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd_, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) fail(option_, path_, std::string("cannot write: ") + std::strerror(n < 0 ? errno : ENOSPC));
    done += static_cast<std::size_t>(n);
  }
}

void SweepResultsFile::put(std::size_t k, std::string row) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (k < next_ || k >= keys_.size()) throw InternalError("sweep row " + std::to_string(k) + " put twice or out of range");
  const std::size_t slot = k - next_;
  if (pending_.size() <= slot) {
    pending_.resize(slot + 1);
    pending_set_.resize(slot + 1, false);
  }
  pending_[slot] = std::move(row);
  pending_set_[slot] = true;
  std::size_t ready = 0;
  while (ready < pending_.size() && pending_set_[ready]) ++ready;
  if (ready == 0) return;
  std::string text;
  for (std::size_t i = 0; i < ready; ++i) text += pending_[i];
  append(text);  // the ready rows, whole, in one write
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(ready));
  pending_set_.erase(pending_set_.begin(), pending_set_.begin() + static_cast<std::ptrdiff_t>(ready));
  next_ += ready;
}

std::size_t SweepResultsFile::written() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_;
}

std::vector<std::string> read_sweep_rows(const std::string& path, results::RowFormat format, const std::string& header,
                                         std::size_t parameters) {
  const std::string text = read_all(path, "parts");
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) fail("parts", path, "no such file");
  std::vector<std::string> rows;
  std::size_t pos = 0;
  if (!header.empty()) {
    const std::size_t nl = text.find('\n');
    if (nl == std::string::npos || text.compare(0, nl + 1, header) != 0) {
      fail("parts", path, "its header is not this sweep's (a results file of another sweep?)");
    }
    pos = nl + 1;
  }
  while (true) {
    const std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) break;  // a torn last line is not a row
    std::string line = text.substr(pos, nl - pos);
    if (!results::is_whole_sweep_row(format, line, parameters)) {
      fail("parts", path, "a line is not a whole row of this sweep: \"" + escape_control(line.substr(0, 60)) + "\"");
    }
    rows.push_back(std::move(line));
    pos = nl + 1;
  }
  return rows;
}

}  // namespace cs::drv
