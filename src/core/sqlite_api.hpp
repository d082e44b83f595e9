// Every source file reaches SQLite through this header: the routine table that the loading
// application hands to sqlite3_precisionprobe_init (SQLITE_EXTENSION_INIT1 lives in extension.cpp).
#pragma once
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3
