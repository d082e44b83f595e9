// The extension's own SQL, built into it from the .sql files of the areas (src/*/sql/*.sql,
// cmake/embed_sql.cmake), so it never reads files at run time.
//
// A file is either one script, or several named parts, each starting at a line
//   -- name: part_name
// and ending where the next begins, read with named_sql(file, part).
#pragma once
#include <string_view>

namespace pp {

// The text of FILE.sql; throws pp::Error for a name that was not built in.
std::string_view embedded_sql(const char* file);
// The part of FILE.sql named PART (without its "-- name:" line); throws pp::Error if absent.
std::string_view named_sql(const char* file, const char* part);

}  // namespace pp
