// Reading an input file whole, with the size cap every input is held to (docs/cli.md, "Limits").
// The configuration reader (core/config.h) parses what it returns; readers of other text inputs
// (CSV tables, results files) use it directly.
#pragma once

#include <string>

namespace cs {

// The whole text of `path`, read with the cap limits().file_bytes (a FIFO or /dev/zero is cut off,
// not read forever). A folder, a file that cannot be opened or read and a file over the cap are
// ConfigErrors naming the file.
std::string read_input_file(const std::string& path);

}  // namespace cs
