#include "core/registration.hpp"

#include "core/errors.hpp"

namespace pp {
namespace {

// A heap copy of the shared reference, handed to SQLite as user data and freed by its destructor.
void* share_connection(const ConnectionPtr& connection) { return new ConnectionPtr(connection); }
void release_connection(void* p) { delete static_cast<ConnectionPtr*>(p); }

int register_function(const Registration& r, const SqlFunction& f) {
  void* data = f.uses_connection ? share_connection(r.connection) : nullptr;
  void (*destroy)(void*) = f.uses_connection ? release_connection : nullptr;
  // On failure SQLite calls destroy itself, so the copy never leaks.
  if (f.inverse)
    return sqlite3_create_window_function(r.db, f.name, f.arguments, f.flags, data, f.step, f.final, f.value,
                                          f.inverse, destroy);
  return sqlite3_create_function_v2(r.db, f.name, f.arguments, f.flags, data, f.scalar, f.step, f.final, destroy);
}

}  // namespace

void register_objects(const Registration& r, const SqlObjects& objects) {
  for (const SqlFunction& f : objects.functions)
    if (register_function(r, f) != SQLITE_OK)
      throw Error(std::string("registering ") + f.name + ": " + sqlite3_errmsg(r.db));
  for (const SqlModule& m : objects.modules)
    if (sqlite3_create_module_v2(r.db, m.name, m.module, share_connection(r.connection), release_connection) !=
        SQLITE_OK)
      throw Error(std::string("registering ") + m.name + ": " + sqlite3_errmsg(r.db));
}

}  // namespace pp
