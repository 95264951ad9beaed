// core/serialize.cpp — Tensor-level safetensors I/O on top of support/safetensors (the
// byte codec). Gathers strided tensors into contiguous bytes itself, so core does not
// depend on the op library.
#include "ember/serialize.h"

#include <cstring>

#include "core/shape.h"
#include "support/safetensors.h"

namespace ember {
namespace {

struct DtypeName {
  ScalarType type;
  const char* name;
};
constexpr DtypeName kNames[] = {
    {kFloat, "F32"}, {kDouble, "F64"}, {kHalf, "F16"}, {kBFloat16, "BF16"}, {kInt64, "I64"},
    {kInt32, "I32"}, {kInt16, "I16"},  {kInt8, "I8"},  {kUInt8, "U8"},     {kBool, "BOOL"},
    {kComplexFloat, "C64"}, {kComplexDouble, "C128"},
};

const char* safetensors_name(ScalarType t) {
  for (const auto& d : kNames)
    if (d.type == t) return d.name;
  EMBER_FAIL() << "save_safetensors: dtype " << t << " has no safetensors name";
}

ScalarType scalar_type_from(const std::string& name) {
  for (const auto& d : kNames)
    if (name == d.name) return d.type;
  EMBER_INTERNAL_ASSERT(false) << "safetensors dtype " << name << " passed validation but has no ScalarType";
}

/// The elements of `t` in row-major order, as bytes.
std::vector<uint8_t> contiguous_bytes(const Tensor& t) {
  const size_t elem = t.element_size();
  std::vector<uint8_t> out(static_cast<size_t>(t.numel()) * elem);
  if (t.numel() == 0) return out;
  const auto* base = static_cast<const uint8_t*>(t.raw_data_ptr());
  if (t.is_contiguous()) {
    std::memcpy(out.data(), base, out.size());
    return out;
  }
  const int64_t nd = t.dim();
  std::vector<int64_t> index(static_cast<size_t>(nd), 0);
  for (size_t k = 0; k < static_cast<size_t>(t.numel()); ++k) {
    int64_t offset = 0;
    for (int64_t d = 0; d < nd; ++d) offset += index[d] * t.stride(d);
    std::memcpy(out.data() + k * elem, base + offset * static_cast<int64_t>(elem), elem);
    for (int64_t d = nd - 1; d >= 0; --d) {
      if (++index[d] < t.size(d)) break;
      index[d] = 0;
    }
  }
  return out;
}

}  // namespace

void save_safetensors(const std::map<std::string, Tensor>& tensors, const std::string& path,
                      const std::map<std::string, std::string>& metadata) {
  std::map<std::string, std::vector<uint8_t>> bytes;
  std::map<std::string, support::SafetensorsView> views;
  for (const auto& [name, t] : tensors) {
    EMBER_CHECK(t.defined()) << "save_safetensors: tensor '" << name << "' is undefined";
    EMBER_CHECK(t.is_cpu()) << "save_safetensors: tensor '" << name << "' is on " << t.device()
                            << "; only CPU tensors have data to save";
    auto& b = bytes[name] = contiguous_bytes(t);
    views[name] = {safetensors_name(t.dtype()), t.sizes().vec(), b};
  }
  support::write_safetensors_file(path, views, metadata);
}

std::map<std::string, Tensor> load_safetensors(const std::string& path) {
  const support::SafetensorsFile file = support::read_safetensors_file(path);
  std::map<std::string, Tensor> out;
  for (const auto& [name, e] : file.entries) {
    auto impl = std::make_shared<TensorImpl>();
    impl->sizes = e.shape;
    impl->strides = core::contiguous_strides(e.shape);
    impl->dtype = scalar_type_from(e.dtype);
    impl->device = kCPU;
    impl->refresh();
    const auto data = file.data(e);
    impl->storage = std::make_shared<Storage>(data.size(), kCPU);
    if (!data.empty()) std::memcpy(impl->storage->data(), data.data(), data.size());
    if (impl->dtype == kBool) {
      // Any nonzero byte is true; normalize so kernels only ever see 0 or 1.
      auto* p = static_cast<uint8_t*>(impl->storage->data());
      for (size_t i = 0; i < data.size(); ++i) p[i] = p[i] != 0;
    }
    out.emplace(name, Tensor(std::move(impl)));
  }
  return out;
}

std::map<std::string, std::string> load_safetensors_metadata(const std::string& path) {
  return support::read_safetensors_file(path).metadata;
}

}  // namespace ember
