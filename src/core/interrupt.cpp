#include "core/interrupt.hpp"

#include "core/errors.hpp"

namespace pp {

InterruptCheck::~InterruptCheck() { sqlite3_finalize(probe_); }

void InterruptCheck::check() {
  if (!db_) return;
  int rc = SQLITE_OK;
  if (!probe_) rc = sqlite3_prepare_v2(db_, "SELECT 1", -1, &probe_, nullptr);
  if (rc == SQLITE_OK) {
    rc = sqlite3_step(probe_);
    sqlite3_reset(probe_);
  }
  if (rc == SQLITE_INTERRUPT) throw InterruptedError();
}

}  // namespace pp
