// export/zip_archive.h — the zip container of .pt2 archives, over libzip: reading every
// entry of an archive (sizes capped, checksums verified) and writing stored (uncompressed)
// entries, as PyTorch's archive writer does. Every failure is an ember::Error naming the
// archive.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ember::exporting {

/// The entries of a zip file by name, read whole.
struct ZipContents {
  std::map<std::string, std::string> entries;
};

/// Reads every entry; raises for a file that is not a readable zip, an entry whose
/// checksum fails, or an archive larger than `max_total_bytes` once inflated.
ZipContents read_zip(const std::string& path, uint64_t max_total_bytes = uint64_t{1} << 36);

/// Writes the entries, in the order given, stored uncompressed; replaces `path`.
void write_zip(const std::string& path, const std::vector<std::pair<std::string, std::string>>& entries);

}  // namespace ember::exporting
