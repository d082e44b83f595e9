#include "core/connection.hpp"

namespace pp {

namespace {
// Responses larger than this are streamed, not kept: the cache is for repeated small requests.
constexpr size_t kMaxCacheBytes = 64u << 20;
}  // namespace

void Connection::add_warning(const std::string& warning) {
  std::lock_guard<std::mutex> lock(mutex_);
  for (const auto& w : warnings_)
    if (w == warning) return;  // a chunked fetch repeats the same server warning per chunk
  if (warnings_.size() < 100) warnings_.push_back(warning);
}

std::vector<std::string> Connection::warnings() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return warnings_;
}

void Connection::cursor_opened() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (open_cursors_++ == 0) warnings_.clear();  // a new statement begins
}

void Connection::cursor_closed() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (open_cursors_ > 0 && --open_cursors_ == 0) {
    cache_.clear();
    cache_bytes_ = 0;
  }
}

std::shared_ptr<const void> Connection::cached(
    const std::string& key, size_t& bytes_hint,
    const std::function<std::shared_ptr<const void>(size_t&)>& compute) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = cache_.find(key);
    if (it != cache_.end()) return it->second;
  }
  std::shared_ptr<const void> value = compute(bytes_hint);
  std::lock_guard<std::mutex> lock(mutex_);
  if (open_cursors_ > 0 && cache_bytes_ + bytes_hint <= kMaxCacheBytes) {
    cache_.emplace(key, value);
    cache_bytes_ += bytes_hint;
  }
  return value;
}

}  // namespace pp
