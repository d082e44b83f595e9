// Errors and the boundary between C++ and SQLite.
//
// Nothing thrown in C++ may cross into SQLite's C frames, so every callback body runs inside
// one of the guards below, which turn exceptions into SQLite error results. Messages always
// start with the SQL-visible name ("prom_range: ...") so users know which call failed.
#pragma once
#include <new>
#include <stdexcept>
#include <string>

#include "core/sqlite_api.hpp"

namespace pp {

// An error whose message is complete and safe to show a user (never contains secrets).
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An argument that is present but unusable: "FUNC: argument 'NAME' ...".
inline Error argument_error(const std::string& function, const std::string& argument,
                            const std::string& problem) {
  return Error(function + ": argument '" + argument + "' " + problem);
}

// Runs body for a scalar/aggregate callback; reports exceptions through ctx.
template <class Body>
void guard_function(sqlite3_context* ctx, const char* name, Body&& body) noexcept {
  try {
    body();
  } catch (const Error& e) {
    sqlite3_result_error(ctx, e.what(), -1);
  } catch (const std::bad_alloc&) {
    sqlite3_result_error_nomem(ctx);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, (std::string(name) + ": internal error: " + e.what()).c_str(), -1);
  } catch (...) {
    sqlite3_result_error(ctx, (std::string(name) + ": internal error").c_str(), -1);
  }
}

// Sets a virtual table's error message (freeing any previous one).
inline void set_vtab_error(sqlite3_vtab* vtab, const std::string& message) {
  sqlite3_free(vtab->zErrMsg);
  vtab->zErrMsg = sqlite3_mprintf("%s", message.c_str());
}

// Runs body (returning an SQLite result code) for a virtual-table callback.
template <class Body>
int guard_vtab(sqlite3_vtab* vtab, const char* name, Body&& body) noexcept {
  try {
    return body();
  } catch (const Error& e) {
    set_vtab_error(vtab, e.what());
  } catch (const std::bad_alloc&) {
    return SQLITE_NOMEM;
  } catch (const std::exception& e) {
    set_vtab_error(vtab, std::string(name) + ": internal error: " + e.what());
  } catch (...) {
    set_vtab_error(vtab, std::string(name) + ": internal error");
  }
  return SQLITE_ERROR;
}

}  // namespace pp
