// ember/array_ref.h — IntArrayRef: a non-owning view of int64 values that also
// accepts braced lists (`x.view({2, -1})`) and a single integer (`x.sum(1)`).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <vector>

namespace ember {

template <typename T>
class ArrayRef {
 public:
  ArrayRef() = default;
  ArrayRef(const T& one) : data_(&one), size_(1) {}                                    // NOLINT
  ArrayRef(const T* data, size_t size) : data_(data), size_(size) {}
  ArrayRef(const std::vector<T>& v) : data_(v.data()), size_(v.size()) {}               // NOLINT
  // The list lives until the end of the full expression, as long as any call using it.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winit-list-lifetime"
  ArrayRef(std::initializer_list<T> l) : data_(l.begin()), size_(l.size()) {}           // NOLINT
#pragma GCC diagnostic pop
  template <size_t N>
  ArrayRef(const T (&a)[N]) : data_(a), size_(N) {}                                     // NOLINT

  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T* data() const { return data_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  const T& operator[](size_t i) const { return data_[i]; }
  const T& back() const { return data_[size_ - 1]; }
  std::vector<T> vec() const { return std::vector<T>(begin(), end()); }
  bool operator==(ArrayRef o) const {
    if (size_ != o.size_) return false;
    for (size_t i = 0; i < size_; ++i)
      if (!(data_[i] == o.data_[i])) return false;
    return true;
  }

 private:
  const T* data_ = nullptr;
  size_t size_ = 0;
};

using IntArrayRef = ArrayRef<int64_t>;

/// Prints "[2, 3]" as PyTorch prints sizes.
std::ostream& operator<<(std::ostream& os, IntArrayRef values);

}  // namespace ember
