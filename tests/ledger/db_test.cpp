// The statement cache of host/ledger/db.h: a statement prepared once per connection and
// reused must behave as if it were prepared afresh for every call. The cases that need no
// file run on SQLite and, when TIDE_TEST_POSTGRES_URL names a database, on PostgreSQL too.

#include <doctest/doctest.h>

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "host/ledger/db.h"

using namespace tide;
using namespace tide::ledger;

namespace {

std::unique_ptr<Db> openDb(const std::string& url, Db::Role role = Db::Role::kWriter) {
  auto opened = Db::open(url, role);
  REQUIRE_MESSAGE(opened.isOk(), opened.status().toString());
  return std::move(opened).value();
}

std::unique_ptr<Db> openTable(const std::string& url) {
  auto db = openDb(url);
  db->session() << "DROP TABLE IF EXISTS kv";
  db->session() << "CREATE TABLE kv (k BIGINT PRIMARY KEY, v TEXT NOT NULL UNIQUE)";
  return db;
}

std::vector<std::string> backends() {
  std::vector<std::string> urls = {"sqlite://:memory:"};
  if (const char* postgres = std::getenv("TIDE_TEST_POSTGRES_URL")) urls.emplace_back(postgres);
  return urls;
}

void put(Db& db, long long k, const std::string& v) {
  db.run("INSERT INTO kv (k, v) VALUES (:k, :v)", soci::use(k), soci::use(v));
}

std::string valueOf(Db& db, long long k) {
  std::string v;
  if (!db.run("SELECT v FROM kv WHERE k = :k", soci::use(k), soci::into(v))) return "<none>";
  return v;
}

int64_t count(Db& db) {
  long long n = 0;
  db.run("SELECT COUNT(*) FROM kv", soci::into(n));
  return n;
}

struct ScratchDir {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("tide-db-test-" + std::to_string(::getpid()));
  ScratchDir() {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  std::string url() const { return "sqlite://" + (dir / "tide.db").string(); }
};

}  // namespace

TEST_CASE("db: a statement reused with new values each call returns that call's rows") {
  for (const std::string& url : backends()) {
    CAPTURE(url);
    auto db = openTable(url);
    for (long long k = 1; k <= 200; ++k) put(*db, k, "value-" + std::to_string(k));
    const int64_t prepared = db->statements().prepares();
    for (long long k = 200; k >= 1; --k) CHECK(valueOf(*db, k) == "value-" + std::to_string(k));
    CHECK(valueOf(*db, 999) == "<none>");
    CHECK(db->statements().prepares() == prepared + 1);

    Bindings first, second;
    first.set("low", 10);
    first.set("high", 12);
    second.set("low", 150);
    second.set("high", 151);
    auto rows = [&](Bindings& range) {
      std::vector<int64_t> out;
      db->forEachRow(
          "SELECT k FROM kv WHERE k BETWEEN :low AND :high ORDER BY k",
          [&](const soci::row& r) { out.push_back(rowInt(r, 0)); }, range);
      return out;
    };
    CHECK(rows(first) == std::vector<int64_t>{10, 11, 12});
    CHECK(rows(second) == std::vector<int64_t>{150, 151});
    CHECK(rows(first) == std::vector<int64_t>{10, 11, 12});
  }
}

TEST_CASE("db: a statement whose write failed and rolled back works on the next call") {
  for (const std::string& url : backends()) {
    CAPTURE(url);
    auto db = openTable(url);
    put(*db, 1, "one");
    db->session().begin();
    db->run("SAVEPOINT t");
    CHECK_THROWS(put(*db, 2, "one"));  // v is UNIQUE
    db->run("ROLLBACK TO t");
    db->run("RELEASE t");
    db->session().commit();
    put(*db, 2, "two");
    put(*db, 3, "three");
    CHECK(valueOf(*db, 2) == "two");
    CHECK(valueOf(*db, 3) == "three");
    CHECK(count(*db) == 3);
    CHECK(db->update("UPDATE kv SET v = v || '!' WHERE k >= :k", soci::use(2LL)) == 2);
    CHECK(db->update("UPDATE kv SET v = v || '!' WHERE k >= :k", soci::use(9LL)) == 0);
  }
}

TEST_CASE("db: a query of the same text nested in another's rows gets a statement of its own") {
  for (const std::string& url : backends()) {
    CAPTURE(url);
    auto db = openTable(url);
    for (long long k = 1; k <= 5; ++k) put(*db, k, std::to_string(k));
    const std::string query = "SELECT k FROM kv WHERE k > :k ORDER BY k";
    std::vector<std::pair<int64_t, int64_t>> pairs;
    db->forEachRow(
        query,
        [&](const soci::row& outer) {
          const long long k = rowInt(outer, 0);
          db->forEachRow(
              query, [&](const soci::row& inner) { pairs.emplace_back(k, rowInt(inner, 0)); }, soci::use(k));
        },
        soci::use(2LL));
    CHECK(pairs == std::vector<std::pair<int64_t, int64_t>>{{3, 4}, {3, 5}, {4, 5}});
    CHECK(db->statements().size() == 2);  // the insert and the outer query; the inner one was not kept
  }
}

TEST_CASE("db: a SELECT left unread and an INSERT ... RETURNING hold no snapshot or lock between calls") {
  ScratchDir scratch;
  auto writer = openTable(scratch.url());
  put(*writer, 1, "one");
  put(*writer, 2, "two");
  auto reader = openDb(scratch.url(), Db::Role::kReader);
  long long first = 0;
  REQUIRE(reader->run("SELECT k FROM kv ORDER BY k", soci::into(first)));  // one of two rows read
  CHECK(first == 1);

  writer->session().begin();
  long long id = 0;
  writer->run("INSERT INTO kv (k, v) VALUES (:k, :v) RETURNING k", soci::use(3LL), soci::use(std::string("three")),
              soci::into(id));
  CHECK(id == 3);
  CHECK_NOTHROW(writer->session().commit());  // fails with "SQL statements in progress" if not reset
  CHECK(count(*reader) == 3);                 // would still see 2 from the first query's snapshot
}

TEST_CASE("db: the cache is bounded, emptied by migrations, and closed with its connection") {
  ScratchDir scratch;
  {
    auto db = openTable(scratch.url());
    for (std::size_t i = 0; i < StatementCache::kCapacity + 20; ++i) {
      long long n = 0;
      db->run("SELECT " + std::to_string(i), soci::into(n));
      CHECK(n == static_cast<long long>(i));
    }
    CHECK(db->statements().size() == StatementCache::kCapacity);
    REQUIRE(db->migrate({}, "2026-01-01T00:00:00Z").isOk());
    CHECK(db->statements().size() == 0);
    put(*db, 1, "one");
    CHECK(valueOf(*db, 1) == "one");
  }
  // The last connection to a WAL database removes the WAL file when it closes, which it
  // cannot do while a statement of its is still unfinalized.
  CHECK_FALSE(std::filesystem::exists(scratch.dir / "tide.db-wal"));
}

TEST_CASE("db: migrations are numbered by their file names, and one merged out of order still applies") {
  auto db = openDb("sqlite://:memory:");
  const std::string now = "2026-01-01T00:00:00.000Z";
  const embedded::File first{"001_a.sql", "CREATE TABLE a (x INTEGER);\n"};
  const embedded::File second{"002_b.sql", "CREATE TABLE b (x INTEGER);\n"};
  const embedded::File third{"008_c.sql", "CREATE TABLE c (x INTEGER);\n"};
  auto applied = db->migrate({first, third}, now);
  REQUIRE_MESSAGE(applied.isOk(), applied.status().toString());
  CHECK(*applied == 8);
  applied = db->migrate({first, second, third}, now);  // 002 arrived after 008 was applied
  REQUIRE_MESSAGE(applied.isOk(), applied.status().toString());
  CHECK(*applied == 8);
  long long tables = 0;
  db->session() << "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name IN ('a', 'b', 'c')",
      soci::into(tables);
  CHECK(tables == 3);

  auto unordered = db->migrate({third, second}, now);
  CHECK(unordered.status().code() == Code::kInternal);
  CHECK(unordered.status().message().find("002_b.sql") != std::string::npos);
  CHECK(db->migrate({{"b.sql", ""}}, now).status().code() == Code::kInternal);
}
