# Writes OUTPUT, a C++ file defining pp::embedded_sql(name) with the text of each sql/*.sql
# file, so the extension installs its views without reading files at run time.
file(GLOB sql_files "${SQL_DIR}/*.sql")
list(SORT sql_files)
set(body "// Generated from src/attribution/sql/*.sql by cmake/embed_sql.cmake. Do not edit.\n#include <cstring>\n\nnamespace pp {\n\nconst char* embedded_sql(const char* name) {\n")
foreach(file ${sql_files})
  get_filename_component(name ${file} NAME_WE)
  file(READ ${file} text)
  string(APPEND body "  if (std::strcmp(name, \"${name}\") == 0) return R\"__sql__(${text})__sql__\";\n")
endforeach()
string(APPEND body "  return nullptr;\n}\n\n}  // namespace pp\n")
file(WRITE ${OUTPUT}.tmp "${body}")
file(COPY_FILE ${OUTPUT}.tmp ${OUTPUT} ONLY_IF_DIFFERENT)
