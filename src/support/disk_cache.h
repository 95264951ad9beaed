// support/disk_cache.h — the pieces every on-disk compile cache shares (the inductor's
// C++ libraries, the CUDA device's cubins): a 128-bit content hash for file names, reading
// a file whole, and writing one atomically (a unique temp name in the same folder, then
// rename), so a reader never sees half a file and two processes may write the same entry.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

namespace ember::support {

/// 32 hex digits: two FNV-1a passes with different bases over `data`.
std::string hash_text(std::string_view data);

/// The whole file as bytes ("" when it cannot be read).
std::string read_file(const std::filesystem::path& path);

/// A unique temp name beside `target` (same folder, so a rename onto it is atomic).
std::filesystem::path temp_path_beside(const std::filesystem::path& target);

/// Writes `data` to `target` through a temp file and a rename; raises an ember::Error
/// naming `what` ("inductor", "cuda") and the file when it cannot write.
void write_atomically(const std::filesystem::path& target, const std::string& data, const char* what);

}  // namespace ember::support
