// Test support: runs a program of the project (no shell) with arguments and extra environment
// variables, stdin from /dev/null, stdout and stderr captured. Used by the CLI tests of clustersim
// and clustersim-calibrate.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/temp_dir.h"

extern char** environ;

namespace cs::test {

struct RunResult {
  int exit_code = -1;  // 128 + signal when killed
  std::string out, err;
  std::vector<std::string> err_lines() const {
    std::vector<std::string> lines;
    std::istringstream in(err);
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    return lines;
  }
};

// Starts `binary` with `args` without waiting: stdin from /dev/null, stdout and stderr to the
// files (created or truncated); `env` as run_binary's. Returns the pid, or -errno of posix_spawn.
inline pid_t spawn_binary(const std::string& binary, const std::vector<std::string>& args, const std::string& out_path,
                          const std::string& err_path, const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> argv_storage{binary};
  argv_storage.insert(argv_storage.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  argv.push_back(nullptr);

  std::vector<std::string> env_storage;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    const std::string key = entry.substr(0, entry.find('='));
    if (env.count(key) == 0) env_storage.push_back(entry);
  }
  for (const auto& [k, v] : env) env_storage.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& e : env_storage) envp.push_back(e.data());
  envp.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  const int rc = ::posix_spawn(&pid, binary.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return rc != 0 ? -rc : pid;
}

// Runs `binary` with `args`; `env` entries replace (or add to) this process's environment for the
// child. A run past `timeout_s` is killed (exit_code 128 + 9, "[killed ...]" on stderr).
inline RunResult run_binary(const std::string& binary, const std::vector<std::string>& args,
                            const std::map<std::string, std::string>& env = {}, int timeout_s = 600) {
  TempDir capture("capture");
  const std::string out_path = capture.file("stdout");
  const std::string err_path = capture.file("stderr");
  const pid_t pid = spawn_binary(binary, args, out_path, err_path, env);
  const int rc = pid < 0 ? -pid : 0;
  RunResult r;
  if (rc != 0) {
    r.err = "posix_spawn failed: " + std::string(std::strerror(rc));
    return r;
  }
  int status = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  for (;;) {
    const pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0) {
      r.err = "waitpid failed";
      return r;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.out = read_text(out_path);
      r.err = read_text(err_path) + "[killed after " + std::to_string(timeout_s) + " s]";
      return r;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_text(out_path);
  r.err = read_text(err_path);
  return r;
}

inline std::string describe(const std::string& program, const std::vector<std::string>& args, const RunResult& r) {
  std::string cmd = program;
  for (const auto& a : args) cmd += " " + a;
  return cmd + "\n  exit " + std::to_string(r.exit_code) + "\n  stderr: " + r.err + "\n  stdout: " + r.out.substr(0, 600);
}

}  // namespace cs::test
