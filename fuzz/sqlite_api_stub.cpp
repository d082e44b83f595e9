// The fuzz targets link the parsers without the extension's entry point (src/extension.cpp),
// whose SQLITE_EXTENSION_INIT1 defines this pointer and registers every table and function, so
// would pull all of them into each target. No parser calls SQLite; one that did would crash on
// this null pointer at once, and the fuzz run would say so.
struct sqlite3_api_routines;
const sqlite3_api_routines* sqlite3_api = nullptr;
