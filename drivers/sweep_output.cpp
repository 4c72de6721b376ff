#include "drivers/sweep_output.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "core/errors.h"
#include "drivers/sweep.h"

namespace cs::drv {

namespace {

[[noreturn]] void fail(const std::string& option, const std::string& path, const std::string& why) {
  throw InputError("", option, "\"" + path + "\": " + why);
}

bool starts_row(const std::string& line, const std::string& key) {
  return line.size() > key.size() && line.compare(0, key.size(), key) == 0 && line[key.size()] == ',';
}

// The file's bytes.
std::string read_all(const std::string& path, const std::string& option) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(option, path, errno == ENOENT ? "no such file" : "cannot be read");
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

std::string merge_sweep_parts(const Sweep& s, results::RowFormat format, const std::vector<std::string>& parts) {
  const std::string header = results::sweep_header(format, s.columns());
  std::vector<std::string> rows(s.points.size());
  std::vector<bool> have(s.points.size(), false);
  for (const std::string& part : parts) {
    if (sweep_format_of(part, "parts") != format) fail("parts", part, "not in the format of the merged file");
    const std::string text = read_all(part, "parts");
    std::size_t pos = 0;
    if (!header.empty()) {
      const std::size_t nl = text.find('\n');
      if (nl == std::string::npos || text.compare(0, nl + 1, header) != 0) {
        fail("parts", part, "its header is not this sweep's (a results file of another sweep?)");
      }
      pos = nl + 1;
    }
    // Whole lines only: a torn last line is not a row.
    for (std::size_t nl = text.find('\n', pos); nl != std::string::npos; pos = nl + 1, nl = text.find('\n', pos)) {
      std::string line = text.substr(pos, nl - pos);
      // The point number leads the row: "12,..." or {"point":12,...
      const std::size_t start = format == results::RowFormat::kCsv ? 0 : std::string("{\"point\":").size();
      std::size_t i = 0, digit = start;
      while (digit < line.size() && line[digit] >= '0' && line[digit] <= '9' && i <= s.points.size()) i = i * 10 + static_cast<std::size_t>(line[digit++] - '0');
      if (digit == start || i >= s.points.size() || !starts_row(line, sweep_point_key(s, i, format)) ||
          !results::is_whole_sweep_row(format, line, s.parameters.size())) {
        fail("parts", part, "holds a line that is not the row of one of this sweep's points: \"" + escape_control(line.substr(0, 60)) + "\"");
      }
      if (have[i] && rows[i] != line) fail("parts", part, "gives point " + std::to_string(i) + " another row than an earlier part");
      rows[i] = std::move(line);
      have[i] = true;
    }
  }
  std::vector<std::size_t> missing;
  for (std::size_t i = 0; i < have.size(); ++i) {
    if (!have[i]) missing.push_back(i);
  }
  if (!missing.empty()) {
    std::string list;
    for (std::size_t k = 0; k < missing.size() && k < 5; ++k) list += (k ? ", " : "") + std::to_string(missing[k]);
    if (missing.size() > 5) list += " and " + std::to_string(missing.size() - 5) + " more";
    throw InputError("", "parts", std::to_string(missing.size()) + " of the sweep's " + std::to_string(s.points.size()) +
                                      " points are in no part (points " + list + "); run their shards (--resume finishes a torn one)");
  }
  std::string merged = header;
  for (const std::string& row : rows) merged += row + "\n";
  return merged;
}

}  // namespace cs::drv
