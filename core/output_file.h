// Output files and folders that are all-or-nothing and never replace what they were not asked
// to (docs/cli.md, "Output files and folders").
//
// One file, write_output_file(path, content), by what the path names now:
//   "-"                          standard output
//   nothing, or a regular file   the content goes to a unique temporary file beside it, renamed
//                                over the target once complete: a reader sees the old file or the
//                                new one, never a part
//   a symbolic link              followed: the file it points to is replaced as above, the link stays
//   a character device, a FIFO   written through, never replaced ("/dev/null", a pipe)
//   anything else (a folder)     refused
//
// A folder of several files, OutputFolder: the files are written into a fresh staging folder beside
// the target (".NAME.tmp-PID-XXXXXX") that is renamed into place by commit(). The target must be
// absent or an empty folder; an existing folder with files is refused unless `force`, which swaps
// the new folder in and then deletes the old one, and only when every file it holds is one of
// `names` (a previous result: `--force` never deletes what clustersim did not write there). Two runs into one target: the first to commit
// wins, the second is refused and leaves nothing. A run that fails, or is stopped by SIGINT, SIGTERM
// or SIGHUP, removes its staging folder and temporary files; one killed by SIGKILL leaves only a
// hidden staging folder, never a partial target, and the next folder written beside it removes it.
//
// Errors are InputErrors naming `option` (the command-line option that named the path).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace cs {

void write_output_file(const std::string& path, std::string_view content, const std::string& option);

class OutputFolder {
 public:
  // Checks the target and creates the staging folder; fails now rather than after a long run.
  OutputFolder(std::string target, std::string option, bool force, std::vector<std::string> names);
  ~OutputFolder();  // removes the staging folder unless committed
  OutputFolder(const OutputFolder&) = delete;
  OutputFolder& operator=(const OutputFolder&) = delete;

  // Writes one file of the folder (a plain name, no '/').
  void write(const std::string& name, std::string_view content);
  // Puts the staging folder in place of the target.
  void commit();

  const std::string& target() const { return target_; }

 private:
  void discard() noexcept;
  void check_only_results() const;  // the target holds only files named in names_
  std::string target_, option_, staging_;
  bool force_ = false;
  std::vector<std::string> names_;
  bool committed_ = false;
  int folder_slot_ = -1;                           // the staging folder's cleanup slot
  std::vector<std::pair<int, std::string>> files_;  // each written file: cleanup slot, path
};

}  // namespace cs
