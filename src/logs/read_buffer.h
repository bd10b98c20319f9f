#pragma once

#include <cstddef>
#include <cstdlib>
#include <memory>
#include <new>

namespace bigmac::logs {

/// Memory to read a log file into, aligned to the page. The kernel copies file data into a
/// page-aligned buffer measurably faster than into malloc's (16-byte aligned) memory: about 6%
/// of JSONL ingestion from a file (bench/logs, BM_File).
class ReadBuffer {
 public:
  static constexpr std::size_t kAlignment = 4096;

  explicit ReadBuffer(std::size_t size)
      : size_(size),
        data_(static_cast<char*>(std::aligned_alloc(kAlignment, round_up(size)))) {
    if (!data_) throw std::bad_alloc();
  }

  char* data() { return data_.get(); }
  std::size_t size() const { return size_; }

 private:
  static std::size_t round_up(std::size_t n) { return (n + kAlignment - 1) / kAlignment * kAlignment; }
  struct Free {
    void operator()(char* p) const { std::free(p); }
  };
  std::size_t size_;
  std::unique_ptr<char, Free> data_;
};

}  // namespace bigmac::logs
