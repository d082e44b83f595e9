#include "core/sql_relay.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <system_error>
#include <vector>

namespace pp {

void SqlRelay::execute(const std::function<void()>& f) {
  if (first_failure_) std::rethrow_exception(first_failure_);  // refused: see the header
  try {
    f();
  } catch (...) {
    first_failure_ = std::current_exception();
    throw;
  }
}

void SqlRelay::run(const std::function<void()>& f) {
  if (std::this_thread::get_id() == owner_) {
    execute(f);
    return;
  }
  Request request{&f, nullptr, false};
  {
    std::unique_lock<std::mutex> lock(mutex_);
    requests_.push_back(&request);
    wake_owner_.notify_one();
    wake_workers_.wait(lock, [&] { return request.done; });
  }
  if (request.failure) std::rethrow_exception(request.failure);
}

void SqlRelay::serve(size_t workers, const std::function<void()>& watch) {
  // Often enough that a worker stops within some tens of ms; each call costs about a microsecond.
  constexpr std::chrono::milliseconds kWatchEvery{20};
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    const auto ready = [&] { return !requests_.empty() || finished_ == workers; };
    if (watch && !stop_) {
      if (!wake_owner_.wait_for(lock, kWatchEvery, ready)) {
        lock.unlock();
        try {
          watch();
        } catch (...) {
          stop_ = true;  // the workers throw at their next look (a piece's own failure says why)
        }
        lock.lock();
        continue;
      }
    } else {
      wake_owner_.wait(lock, ready);
    }
    if (requests_.empty()) return;  // every worker finished
    Request* request = requests_.front();
    requests_.pop_front();
    lock.unlock();
    try {
      execute(*request->f);
    } catch (...) {
      request->failure = std::current_exception();
    }
    lock.lock();
    request->done = true;
    wake_workers_.notify_all();
  }
}

void SqlRelay::worker_done() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++finished_;
  wake_owner_.notify_one();
}

void for_each_in_parallel(size_t n, const std::function<void(size_t, SqlRelay&)>& work, size_t threads,
                          const std::function<void()>& watch) {
  SqlRelay relay;
  threads = std::min({threads, n, static_cast<size_t>(std::max(1u, std::thread::hardware_concurrency()))});
  if (threads <= 1) {
    for (size_t i = 0; i < n; ++i) work(i, relay);
    return;
  }
  std::vector<std::exception_ptr> failures(n);
  std::atomic<size_t> next{0};
  std::atomic<bool> failed{false};
  auto worker = [&] {
    for (size_t i; !failed.load() && (i = next++) < n;) {
      try {
        work(i, relay);
      } catch (...) {
        failures[i] = std::current_exception();
        failed = true;
      }
    }
    relay.worker_done();
  };
  std::vector<std::thread> workers;
  try {
    for (size_t t = 0; t < threads; ++t) workers.emplace_back(worker);
  } catch (const std::system_error&) {  // no thread to be had: those that started do it all
  }
  if (workers.empty()) {
    for (size_t i = 0; i < n; ++i) work(i, relay);
    return;
  }
  relay.serve(workers.size(), watch);
  for (auto& w : workers) w.join();
  for (const auto& failure : failures)
    if (failure) std::rethrow_exception(failure);
}

}  // namespace pp
