// Per-GPU work on more than one thread, when each piece also reads or writes the database.
// SQLite holds a connection's mutex for the whole statement that called the extension, so a
// second thread that calls SQLite on the connection would wait for it forever. Workers hand
// their SQL to the calling thread instead, which runs it between waits.
//
//   for_each_in_parallel(gpus.size(), [&](size_t i, SqlRelay& relay) {
//     Data d;
//     relay.run([&] { d = read(db, gpus[i]); });   // on the calling thread
//     const Result r = compute(d);                 // on this worker, beside the others
//     relay.run([&] { write(db, gpus[i], r); });
//   });
//
// Only what runs inside relay.run() may call SQLite. The pieces must be independent of each
// other's writes, since they run in any order; and since rows inserted into a rowid table read
// back in the order they went in, such rows are best inserted after the pieces, in order.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>

namespace pp {

class SqlRelay {
 public:
  SqlRelay() : owner_(std::this_thread::get_id()) {}
  SqlRelay(const SqlRelay&) = delete;
  SqlRelay& operator=(const SqlRelay&) = delete;

  // Runs f on the thread that made the relay and returns once it has, rethrowing what f threw.
  // On that thread itself, f runs at once.
  void run(const std::function<void()>& f);

 private:
  friend void for_each_in_parallel(size_t, const std::function<void(size_t, SqlRelay&)>&, size_t);
  struct Request {
    const std::function<void()>* f;
    std::exception_ptr failure;
    bool done = false;
  };
  // On the owner: runs requests until `workers` have finished (each calls worker_done()).
  void serve(size_t workers);
  void worker_done();

  std::thread::id owner_;
  std::mutex mutex_;
  std::condition_variable wake_owner_, wake_workers_;
  std::deque<Request*> requests_;
  size_t finished_ = 0;
};

// Calls work(i, relay) for each i in [0, n) on up to `threads` threads (the calling thread only,
// where that is 1 or the machine has one core, or n is 1). Once a piece fails the pieces not
// started are skipped; the failure of the lowest index is rethrown here.
void for_each_in_parallel(size_t n, const std::function<void(size_t, SqlRelay&)>& work, size_t threads = 2);

}  // namespace pp
