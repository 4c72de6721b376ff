// The project's small exception hierarchy. main() maps them to exit codes:
//   InputError (and its kinds) -> 2: the user's input is wrong; the message is one line that
//                                    names the file and the JSON path.
//   InternalError              -> 1: a bug or an impossible state inside clustersim.
// Library code never calls exit().
#pragma once

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>

namespace cs {

// Bad input. `file` may be empty for command-line input; `json_path` is an RFC 6901 pointer.
class InputError : public std::runtime_error {
 public:
  InputError(std::string file, std::string json_path, std::string message);
  const std::string& file() const { return file_; }
  const std::string& json_path() const { return json_path_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_, json_path_, message_;
};

// A configuration value has the wrong type, is missing, is unknown, or is out of range.
class ConfigError : public InputError {
 public:
  using InputError::InputError;
};

// A plan whose memory per GPU exceeds what the GPU has: a ConfigError, told apart so that a sweep
// reports the point as "out_of_memory" rather than "invalid".
class MemoryFitError : public ConfigError {
 public:
  using ConfigError::ConfigError;
};

// A cluster that cannot work as described (a GPU with no path, a dangling link endpoint).
class TopologyError : public InputError {
 public:
  using InputError::InputError;
};

// A value computed from valid input that leaves the range clustersim can represent: a simulated
// time beyond the clock's 106 days, a count beyond 64 bits, a size beyond a documented limit
// (docs/cli.md, "Limits"). The message says what overflowed and, where known, which input.
class RangeError : public InputError {
 public:
  explicit RangeError(std::string message) : InputError("", "", std::move(message)) {}
};

// A string with a unit could not be read ("400", "12 parsecs"). Thrown without a location by
// the unit parser; the config reader rethrows it as a ConfigError with file and path.
class UnitParseError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A broken invariant inside clustersim.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

// `text` made safe for one line on a terminal: newlines, tabs, ESC, BEL and every other control
// byte are written as C escapes ("\n", "\x1b"), and a backslash as "\\". Every front end prints
// errors and warnings through it, so a value from a file cannot break the one-line rule or reach
// the terminal as a control sequence.
std::string escape_control(std::string_view text);

}  // namespace cs
