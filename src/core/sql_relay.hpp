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
//
// Once a request has failed, the relay runs no other: each is refused with that failure (a piece
// that catches it and goes on gets no SQL run again). SQLite may answer a failed write
// (SQLITE_FULL, SQLITE_IOERR, SQLITE_NOMEM) by rolling back the whole transaction, and the
// pieces still running would then write outside it, each statement committing on its own: part
// of a refresh that failed would be stored.
//
// A piece that computes long without SQL notices an interrupt through stopping(): the calling
// thread calls `watch` (for_each_in_parallel's) while it waits, and once that throws,
// stopping() is true on every worker.
#pragma once
#include <atomic>
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
  // Whether this thread is the one that made the relay (a piece run there may call SQLite).
  bool on_owner() const { return std::this_thread::get_id() == owner_; }
  // Whether the calling thread's watch threw: the pieces should stop (InterruptedError).
  bool stopping() const { return stop_.load(std::memory_order_relaxed); }

 private:
  friend void for_each_in_parallel(size_t, const std::function<void(size_t, SqlRelay&)>&, size_t,
                                   const std::function<void()>&);
  struct Request {
    const std::function<void()>* f;
    std::exception_ptr failure;
    bool done = false;
  };
  // On the owner: runs requests until `workers` have finished (each calls worker_done()),
  // calling watch every kWatchEvery while none comes.
  void serve(size_t workers, const std::function<void()>& watch);
  // On the owner: runs f, or rethrows the failure of an earlier request instead.
  void execute(const std::function<void()>& f);
  void worker_done();

  std::thread::id owner_;
  std::mutex mutex_;
  std::condition_variable wake_owner_, wake_workers_;
  std::deque<Request*> requests_;
  size_t finished_ = 0;
  std::exception_ptr first_failure_;  // (the owner's alone)
  std::atomic<bool> stop_{false};
};

// Calls work(i, relay) for each i in [0, n) on up to `threads` threads (the calling thread only,
// where that is 1 or the machine has one core, or n is 1). Once a piece fails the pieces not
// started are skipped; the failure of the lowest index is rethrown here. watch (optional) is
// called on the calling thread while it waits for the workers, every few ms (an interrupt
// check): once it throws, relay.stopping() is true.
void for_each_in_parallel(size_t n, const std::function<void(size_t, SqlRelay&)>& work, size_t threads = 2,
                          const std::function<void()>& watch = {});

}  // namespace pp
