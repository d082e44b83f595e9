// Noticing sqlite3_interrupt() (Ctrl-C in the shell, Connection.interrupt() in Python) inside
// the extension's own long loops: reading files, parsing lines, importing, folding. SQLite
// checks it only between the rows it steps through, never inside one call of ours.
//
//   InterruptCheck interrupted(db);
//   for (...) { interrupted.poll(); ... }   // throws pp::InterruptedError once interrupted
#pragma once
#include <cstdint>

#include "core/sqlite_api.hpp"

namespace pp {

class InterruptCheck {
 public:
  explicit InterruptCheck(sqlite3* db) : db_(db) {}
  ~InterruptCheck();
  InterruptCheck(const InterruptCheck&) = delete;
  InterruptCheck& operator=(const InterruptCheck&) = delete;

  // Throws InterruptedError when the connection was interrupted. SQLite before 3.41 has no
  // sqlite3_is_interrupted(): a prepared "SELECT 1" fails with SQLITE_INTERRUPT instead, for as
  // long as the interrupted statement runs. About a microsecond.
  void check();
  // check() once every `every` calls: for loops whose steps take well under a microsecond.
  void poll(uint32_t every = 4096) {
    if (++calls_ % every == 0) check();
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* probe_ = nullptr;
  uint32_t calls_ = 0;
};

}  // namespace pp
