// support/disk_cache.cpp — see disk_cache.h.
#include "support/disk_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "ember/error.h"

namespace ember::support {
namespace {

std::atomic<int64_t> g_temp_counter{0};

uint64_t fnv1a(std::string_view data, uint64_t basis) {
  uint64_t h = basis;
  for (unsigned char c : data) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

}  // namespace

std::string hash_text(std::string_view data) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(fnv1a(data, 14695981039346656037ull)),
                static_cast<unsigned long long>(fnv1a(data, 0x84222325cbf29ce4ull)));
  return buf;
}

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::filesystem::path temp_path_beside(const std::filesystem::path& target) {
  return target.string() + ".tmp." + std::to_string(getpid()) + "." + std::to_string(g_temp_counter++);
}

void write_atomically(const std::filesystem::path& target, const std::string& data, const char* what) {
  const std::filesystem::path tmp = temp_path_beside(target);
  {
    std::ofstream out(tmp, std::ios::binary);
    out << data;
    EMBER_CHECK(out.good()) << what << ": cannot write " << tmp.string();
  }
  std::filesystem::rename(tmp, target);
}

}  // namespace ember::support
