#pragma once
// Arrays on transparent huge pages (2 MiB), for the large arrays a CPU kernel streams.
#include <sys/mman.h>

#include <cstddef>
#include <memory>
#include <new>
#include <utility>
#include <vector>

namespace modsim::kernels::cpu {

// An allocator for the large arrays a step streams (the paged caches, the packed weights):
// 2 MiB aligned and marked for transparent huge pages, so the cache's scattered pages do not
// each cost a page walk. Small arrays use the ordinary heap. resize(n) leaves the values
// uninitialised (construct without arguments default-initialises), so an array filled later
// is not written twice.
template <class T>
struct huge_page_allocator {
  using value_type = T;
  static constexpr std::size_t huge = std::size_t{2} << 20;
  huge_page_allocator() = default;
  template <class U>
  explicit huge_page_allocator(const huge_page_allocator<U>&) {}
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
  static std::size_t rounded(std::size_t n) { return (n * sizeof(T) + huge - 1) / huge * huge; }
  T* allocate(std::size_t n) {
    if (n * sizeof(T) < huge) return std::allocator<T>{}.allocate(n);
    void* p = ::operator new (rounded(n), std::align_val_t{huge});
    ::madvise(p, rounded(n), MADV_HUGEPAGE);  // a hint; where refused the pages stay 4 KiB
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) {
    if (n * sizeof(T) < huge) return std::allocator<T>{}.deallocate(p, n);
    ::operator delete (p, std::align_val_t{huge});
  }
  friend bool operator==(const huge_page_allocator&, const huge_page_allocator&) { return true; }
};
template <class T>
using huge_vector = std::vector<T, huge_page_allocator<T>>;

}  // namespace modsim::kernels::cpu
