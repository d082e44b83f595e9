#include "attribution/job_sharing.hpp"

#include <algorithm>

#include "core/embedded_sql.hpp"
#include "core/statement.hpp"

namespace pp {

const std::string& JobSharing::system(const std::string& job_id) const {
  const auto it = system_of_.find(job_id);
  return it == system_of_.end() ? job_id : it->second;
}

const std::vector<std::string>& JobSharing::members(const std::string& system) const {
  static const std::vector<std::string> none;
  const auto it = members_.find(system);
  return it == members_.end() ? none : it->second;
}

JobSharing JobSharing::read(sqlite3* db) {
  // Union-find over job ids; the smallest id of a group names it.
  std::map<std::string, std::string> parent;
  auto find = [&](std::string job) {
    while (parent[job] != job) job = parent[job];
    return job;
  };
  Statement pairs(db, named_sql("job_sharing", "overlapping_pairs"));
  while (pairs.step()) {
    const std::string a = pairs.column_text(0), b = pairs.column_text(1);
    parent.try_emplace(a, a);
    parent.try_emplace(b, b);
    const std::string ra = find(a), rb = find(b);
    if (ra != rb) parent[std::max(ra, rb)] = std::min(ra, rb);
  }
  JobSharing sharing;
  for (const auto& entry : parent) {
    const std::string root = find(entry.first);
    sharing.system_of_[entry.first] = root;
    sharing.members_[root].push_back(entry.first);  // parent is a sorted map: members come sorted
  }
  return sharing;
}

}  // namespace pp
