// The boundary between C++ and SQLite: nothing thrown in C++ may cross into SQLite's C frames,
// so every callback body runs inside one of these guards, which turn exceptions into SQLite
// error results named after the SQL function or table ("prom_range: ...").
#pragma once
#include <new>
#include <string>

#include "core/errors.hpp"
#include "core/sqlite_api.hpp"
#include "core/text.hpp"

namespace pp {

// "NAME: what", as error_message_text shows it.
inline std::string error_text(const char* name, const char* what) {
  return error_message_text(std::string(name) + ": " + what);
}

// Runs body for a scalar/aggregate callback; reports exceptions through ctx as "NAME: ...".
template <class Body>
void guard_function(sqlite3_context* ctx, const char* name, Body&& body) noexcept {
  try {
    body();
    return;
  } catch (const InterruptedError&) {
    sqlite3_result_error_code(ctx, SQLITE_INTERRUPT);
  } catch (const Error& e) {
    sqlite3_result_error(ctx, error_text(name, e.what()).c_str(), -1);
  } catch (const std::bad_alloc&) {
    sqlite3_result_error_nomem(ctx);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, error_text(name, (std::string("internal error: ") + e.what()).c_str()).c_str(), -1);
  } catch (...) {
    sqlite3_result_error(ctx, (std::string(name) + ": internal error").c_str(), -1);
  }
}

// Sets a virtual table's error message (freeing any previous one).
inline void set_vtab_error(sqlite3_vtab* vtab, const std::string& message) {
  sqlite3_free(vtab->zErrMsg);
  vtab->zErrMsg = sqlite3_mprintf("%s", error_message_text(message).c_str());
}

// Runs body (returning an SQLite result code) for a virtual-table callback; an exception sets
// the table's message "NAME: ..." and returns SQLITE_ERROR (SQLITE_BUSY for a BusyError,
// SQLITE_INTERRUPT for an InterruptedError).
template <class Body>
int guard_vtab(sqlite3_vtab* vtab, const char* name, Body&& body) noexcept {
  try {
    return body();
  } catch (const BusyError& e) {
    set_vtab_error(vtab, std::string(name) + ": " + e.what());
    return SQLITE_BUSY;
  } catch (const InterruptedError& e) {
    set_vtab_error(vtab, std::string(name) + ": " + e.what());
    return SQLITE_INTERRUPT;
  } catch (const Error& e) {
    set_vtab_error(vtab, std::string(name) + ": " + e.what());
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
