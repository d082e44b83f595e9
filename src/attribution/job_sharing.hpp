// Which jobs the estimator solves together: jobs whose spans on a GPU overlap (the pairs of
// colocated_spans, 'cpu' aside), joined transitively, so that a job sharing GPU 1 with B and
// GPU 2 with C is one system with both. Read from pp_gpu_spans, a span's partners by a range of
// starts as colocated_spans finds them (sql/job_sharing.sql).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/sqlite_api.hpp"

namespace pp {

class JobSharing {
 public:
  // The name of the system a job belongs to: its own id when it shared no GPU, else the first
  // (smallest) job id of its group.
  const std::string& system(const std::string& job_id) const;
  // Whether the system holds more than one job.
  bool joint(const std::string& system) const { return members_.count(system) > 0; }
  // The jobs of a joint system, sorted; empty for a job alone.
  const std::vector<std::string>& members(const std::string& system) const;

  static JobSharing read(sqlite3* db);

 private:
  std::map<std::string, std::string> system_of_;                // jobs that shared a GPU only
  std::map<std::string, std::vector<std::string>> members_;     // joint systems only
};

}  // namespace pp
