// export/zip_archive.cpp — reading and writing zip files with libzip (see zip_archive.h).
#include "export/zip_archive.h"

#include <zip.h>

#include <memory>

#include "ember/error.h"

namespace ember::exporting {
namespace {

std::string zip_error_text(int code) {
  zip_error_t e;
  zip_error_init_with_code(&e, code);
  std::string s = zip_error_strerror(&e);
  zip_error_fini(&e);
  return s;
}

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct FileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};

}  // namespace

ZipContents read_zip(const std::string& path, uint64_t max_total_bytes) {
  int code = 0;
  std::unique_ptr<zip_t, ZipCloser> z(zip_open(path.c_str(), ZIP_RDONLY | ZIP_CHECKCONS, &code));
  EMBER_CHECK_VALUE(z != nullptr) << "cannot read '" << path << "' as a zip archive (.pt2): " << zip_error_text(code);
  ZipContents out;
  const zip_int64_t n = zip_get_num_entries(z.get(), 0);
  uint64_t total = 0;
  for (zip_int64_t i = 0; i < n; ++i) {
    zip_stat_t st;
    zip_stat_init(&st);
    EMBER_CHECK_VALUE(zip_stat_index(z.get(), static_cast<zip_uint64_t>(i), 0, &st) == 0 &&
                      (st.valid & ZIP_STAT_NAME) && (st.valid & ZIP_STAT_SIZE))
        << "'" << path << "': entry " << i << " of the zip directory is unreadable: " << zip_strerror(z.get());
    const std::string name = st.name;
    total += st.size;
    EMBER_CHECK_VALUE(st.size <= max_total_bytes && total <= max_total_bytes)
        << "'" << path << "': entry '" << name << "' makes the archive larger than " << max_total_bytes
        << " bytes when read";
    std::unique_ptr<zip_file_t, FileCloser> f(zip_fopen_index(z.get(), static_cast<zip_uint64_t>(i), 0));
    EMBER_CHECK_VALUE(f != nullptr) << "'" << path << "': cannot open entry '" << name << "': " << zip_strerror(z.get());
    std::string data(static_cast<size_t>(st.size), '\0');
    zip_int64_t got = data.empty() ? 0 : zip_fread(f.get(), data.data(), st.size);
    // One more read reaches the end of the entry, where libzip checks its CRC.
    char extra = 0;
    const zip_int64_t tail = got == static_cast<zip_int64_t>(st.size) ? zip_fread(f.get(), &extra, 1) : 0;
    EMBER_CHECK_VALUE(got == static_cast<zip_int64_t>(st.size) && tail == 0)
        << "'" << path << "': entry '" << name << "' is truncated or corrupt (read " << got << " of " << st.size
        << " bytes): " << zip_error_strerror(zip_file_get_error(f.get()));
    out.entries[name] = std::move(data);
  }
  return out;
}

void write_zip(const std::string& path, const std::vector<std::pair<std::string, std::string>>& entries) {
  int code = 0;
  std::unique_ptr<zip_t, ZipCloser> z(zip_open(path.c_str(), ZIP_CREATE | ZIP_TRUNCATE, &code));
  EMBER_CHECK_VALUE(z != nullptr) << "cannot create '" << path << "': " << zip_error_text(code);
  for (const auto& [name, data] : entries) {
    zip_source_t* src = zip_source_buffer(z.get(), data.data(), data.size(), 0);
    EMBER_CHECK(src != nullptr) << "'" << path << "': " << zip_strerror(z.get());
    const zip_int64_t idx = zip_file_add(z.get(), name.c_str(), src, ZIP_FL_ENC_UTF_8);
    if (idx < 0) zip_source_free(src);
    EMBER_CHECK(idx >= 0) << "'" << path << "': cannot add '" << name << "': " << zip_strerror(z.get());
    EMBER_CHECK(zip_set_file_compression(z.get(), static_cast<zip_uint64_t>(idx), ZIP_CM_STORE, 0) == 0)
        << "'" << path << "': " << zip_strerror(z.get());
  }
  // zip_close writes the file; the entries' buffers are read now, while they live.
  zip_t* raw = z.release();
  if (zip_close(raw) != 0) {
    const std::string why = zip_strerror(raw);
    zip_discard(raw);
    EMBER_FAIL() << "cannot write '" << path << "': " << why;
  }
}

}  // namespace ember::exporting
