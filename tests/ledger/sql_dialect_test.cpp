// The SQL seam of host/ledger/sql_dialect.h: which dialect a database URL gets, what SQLite's
// answers are, and that a ledger refuses a database whose dialect cannot carry one yet.

#include <doctest/doctest.h>

#include <string>

#include "host/core/clock.h"
#include "host/ledger/db.h"
#include "host/ledger/ledger.h"
#include "host/ledger/sql_dialect.h"

using namespace tide;
using namespace tide::ledger;

TEST_CASE("sql dialect: a database URL's scheme picks the dialect, and what follows it is the target") {
  std::string target;
  auto sqlite = dialectFor("sqlite:///var/lib/tide/tide.db", &target);
  REQUIRE(sqlite.isOk());
  CHECK((*sqlite)->scheme() == "sqlite");
  CHECK(target == "/var/lib/tide/tide.db");
  CHECK((*sqlite)->inMemory(":memory:"));
  CHECK_FALSE((*sqlite)->inMemory(target));

  auto postgres = dialectFor("postgresql://tide@db:5432/tide", &target);
  REQUIRE(postgres.isOk());
  CHECK((*postgres)->scheme() == "postgresql");
  CHECK(target == "tide@db:5432/tide");

  auto unknown = dialectFor("mysql://db/tide", &target);
  REQUIRE_FALSE(unknown.isOk());
  CHECK(unknown.status().code() == Code::kInvalidArgument);
  CHECK(unknown.status().message().find("sqlite:// or postgresql://") != std::string::npos);
}

TEST_CASE("sql dialect: a JSON field in a WHERE clause is each database's own spelling, and SQLite's reads it") {
  CHECK(sqliteDialect().jsonField("data", "to") == "json_extract(data, '$.to')");
  CHECK(postgresDialect().jsonField("data", "to") == "(data::jsonb ->> 'to')");

  auto db = Db::open("sqlite://:memory:");
  REQUIRE(db.isOk());
  std::string to;
  (*db)->session() << "SELECT " + (*db)->dialect().jsonField("'{\"to\": \"RUNNING\"}'", "to"), soci::into(to);
  CHECK(to == "RUNNING");
}

TEST_CASE("sql dialect: a ledger opens on SQLite, and on PostgreSQL it is refused as not supported yet") {
  FakeClock clock(*parseTimestamp("2026-01-01T00:00:00Z"));
  auto ledger = Ledger::open("sqlite://:memory:", clock);
  REQUIRE(ledger.isOk());
  CHECK((*ledger)->schemaVersion() > 0);
  CHECK((*ledger)->changesTracked());

  CHECK(postgresDialect().ledgerSupport().code() == Code::kUnavailable);
  CHECK(postgresDialect().ledgerSupport().message().find("not supported yet") != std::string::npos);
  CHECK(sqliteDialect().ledgerSupport().isOk());
}
