// Writing output files so that a failed run leaves nothing behind: the content goes to a
// temporary file beside the target, which is renamed over it only when complete.
#pragma once

#include <string>
#include <string_view>

namespace cs {

// Throws InputError (naming the path) when the file cannot be written.
void write_file_atomically(const std::string& path, std::string_view content);

}  // namespace cs
