#include "core/input_file.h"

#include <array>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "core/errors.h"
#include "core/limits.h"
#include "core/units.h"

namespace cs {

std::string read_input_file(const std::string& path) {
  // Read at most the limit and one byte more, so that /dev/zero or a FIFO cannot run away.
  const std::int64_t cap = limits().file_bytes.value();
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw ConfigError(path, "", "is a folder, not a file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path, "", "cannot open the file");
  std::string text;
  std::array<char, 65536> buf{};
  while (in) {
    in.read(buf.data(), buf.size());
    text.append(buf.data(), static_cast<std::size_t>(in.gcount()));
    if (static_cast<std::int64_t>(text.size()) > cap) {
      throw ConfigError(path, "", "the file is larger than " + format_bytes(limits().file_bytes) +
                                      ", the largest input clustersim reads (docs/cli.md, \"Limits\": CLUSTERSIM_LIMITS=file=...)");
    }
  }
  if (in.bad()) throw ConfigError(path, "", "cannot read the file");
  return text;
}

}  // namespace cs
