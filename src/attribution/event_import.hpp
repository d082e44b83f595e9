// Refresh step 1: importing the hook client's event files into the attribution tables, from
// where the last import stopped.
#pragma once
#include <functional>
#include <string>

#include "core/sqlite_api.hpp"

namespace pp {

// Reads the files that `path` names (as layer_events does) and adds their new event lines to
// pp_events and job header lines to pp_jobs (INSERT OR IGNORE on source_file and line). Each
// file is read from where the last import left it (pp_event_files: the byte offset after its
// last complete line; a file none of whose rows are left is read from the start), so
// refreshing a running job reads only what was written since (for a compact file, with the
// decoder context recorded in pp_event_file_state at that position); a line still being written is
// read again next time, and is warned about as malformed only when `final` (the writer is
// done: a torn line stays torn). A file whose first line changed was replaced: the rows read
// from it before are renamed 'F (replaced N)' and it is read from the start. Events whose
// times cannot be a call (ending before they start, outside [0, kMaxEventNs]) are skipped as
// malformed. Other warnings (malformed lines, a file truncated or replaced since) go to `warn`
// too. Throws InterruptedError when the connection is interrupted. Returns the events added.
long long import_event_files(sqlite3* db, const std::string& path, bool final,
                             const std::function<void(const std::string&)>& warn);

}  // namespace pp
