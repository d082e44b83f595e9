// The errors the extension throws. Code below the SQL boundary throws plain messages ("argument
// 'step' is NULL"); the guard of the SQL callback (core/guard.hpp) puts the SQL-visible name in
// front ("prom_range: argument 'step' is NULL"), so no parser needs to know who called it.
#pragma once
#include <stdexcept>
#include <string>

namespace pp {

// An error whose message is complete and safe to show a user (never contains secrets), without
// the name of the SQL function: the guard adds it.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(without_nul(message)) {}
  explicit Error(const char* message) : std::runtime_error(message) {}

 private:
  // what() is a C string: a NUL quoted from a server's answer or a file would end the message
  // there, losing what follows (the reason, the HTTP status). It shows as U+FFFD instead.
  static std::string without_nul(const std::string& message) {
    if (message.find('\0') == std::string::npos) return message;
    std::string shown;
    for (const char c : message) shown += c == '\0' ? std::string("\xEF\xBF\xBD") : std::string(1, c);
    return shown;
  }
};

// Another connection holds the write lock: the virtual-table guard returns SQLITE_BUSY, so
// callers that retry on SQLITE_BUSY retry this call too.
class BusyError : public Error {
 public:
  explicit BusyError(const std::string& message, bool stale_snapshot = false)
      : Error(message), stale_snapshot(stale_snapshot) {}
  // SQLITE_BUSY_SNAPSHOT: the connection's read transaction began before another connection's
  // last commit, so no wait can let it write: it has to end first.
  bool stale_snapshot;
};

// The statement was interrupted (sqlite3_interrupt(), Ctrl-C in the shell): the guards return
// SQLITE_INTERRUPT.
class InterruptedError : public Error {
 public:
  explicit InterruptedError(const std::string& message = "interrupted") : Error(message) {}
};

// An argument that is present but unusable: "argument 'NAME' PROBLEM".
inline Error argument_error(const std::string& argument, const std::string& problem) {
  return Error("argument '" + argument + "' " + problem);
}

}  // namespace pp
