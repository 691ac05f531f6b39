#pragma once
// One SQL statement run straight on a ledger's SQLite file, past the ledger's rules: for
// tests that plant what a crash, a bug or a person with sqlite3 would leave (an edited event,
// an operation left RUNNING). Every test that edits a ledger underneath goes through this, so
// a test batch of the unity build never sees <sqlite3.h> beside SOCI's own include of it.

#include <string>

#include <soci/soci.h>
#include <soci/sqlite3/soci-sqlite3.h>

namespace tide::testing {

inline void execRawSql(const std::string& db_file, const std::string& sql) {
  soci::session raw(soci::sqlite3, "db=" + db_file);
  raw << sql;
}

}  // namespace tide::testing
