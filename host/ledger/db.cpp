#include "host/ledger/db.h"

#include <soci/postgresql/soci-postgresql.h>
#include <soci/sqlite3/soci-sqlite3.h>

#include <cstdlib>
#include <string_view>

namespace tide::ledger {

bool Db::isInMemory(const std::string& url) { return url == "sqlite://:memory:"; }

bool Db::onRowChange(std::function<void(const char*, int64_t)> hook) {
  if (dialect_ != Dialect::kSqlite) return false;
  row_hook_ = std::move(hook);
  auto* backend = static_cast<soci::sqlite3_session_backend*>(session_.get_backend());
  sqlite_api::sqlite3_update_hook(
      backend->conn_,
      [](void* self, int, const char*, const char* table, sqlite_api::sqlite3_int64 id) {
        static_cast<Db*>(self)->row_hook_(table, static_cast<int64_t>(id));
      },
      this);
  return true;
}

Result<std::unique_ptr<Db>> Db::open(const std::string& url, Role role) {
  std::unique_ptr<Db> db(new Db());
  constexpr std::string_view kSqlite = "sqlite://";
  constexpr std::string_view kPostgres = "postgresql://";
  try {
    if (url.rfind(kSqlite, 0) == 0) {
      const std::string path = url.substr(kSqlite.size());
      if (path.empty()) return Status::invalidArgument("database: sqlite:// needs a path");
      db->dialect_ = Dialect::kSqlite;
      db->session_.open(soci::sqlite3, "db=" + path + " timeout=10");
      db->session_ << "PRAGMA foreign_keys = ON";
      db->session_ << "PRAGMA synchronous = FULL";
      if (path != ":memory:") {
        std::string mode;
        db->session_ << "PRAGMA journal_mode = WAL", soci::into(mode);
      }
      if (role == Role::kReader) db->session_ << "PRAGMA query_only = ON";
    } else if (url.rfind(kPostgres, 0) == 0) {
      db->dialect_ = Dialect::kPostgres;
      db->session_.open(soci::postgresql, url);
    } else {
      return Status::invalidArgument("database: '" + url + "' must start with sqlite:// or postgresql://");
    }
  } catch (const std::exception& e) {
    return Status::unavailable("database: cannot open '" + url + "': " + e.what());
  }
  return db;
}

Result<int> Db::migrate(const std::vector<embedded::File>& migrations, const std::string& now) {
  return guarded("migrate", [&]() -> Result<int> {
    session_ << "CREATE TABLE IF NOT EXISTS schema_version ("
                "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)";
    soci::indicator ind = soci::i_null;
    long long current = 0;
    session_ << "SELECT MAX(version) FROM schema_version", soci::into(current, ind);
    if (ind == soci::i_null) current = 0;

    soci::transaction tx(session_);
    int version = 0;
    for (const auto& file : migrations) {
      ++version;  // migrations are numbered by their position: 001_..., 002_...
      if (version <= current) continue;
      // SOCI's sqlite backend runs one statement per call; split on ';' at line ends.
      std::string text(file.text);
      size_t start = 0;
      while (start < text.size()) {
        size_t end = text.find(";\n", start);
        if (end == std::string::npos) end = text.size();
        std::string statement = text.substr(start, end - start);
        start = end + 2;
        // Drop comment-only lines so an all-comment chunk is skipped.
        std::string code;
        size_t line_start = 0;
        while (line_start < statement.size()) {
          size_t line_end = statement.find('\n', line_start);
          if (line_end == std::string::npos) line_end = statement.size();
          std::string line = statement.substr(line_start, line_end - line_start);
          const auto first = line.find_first_not_of(" \t\r");
          if (first != std::string::npos && line.compare(first, 2, "--") != 0) code += line + "\n";
          line_start = line_end + 1;
        }
        if (code.find_first_not_of(" \t\r\n") == std::string::npos) continue;
        session_ << code;
      }
      const std::string name(file.name);
      session_ << "INSERT INTO schema_version (version, name, applied_at) VALUES (:v, :n, :a)", soci::use(version),
          soci::use(name), soci::use(now);
    }
    tx.commit();
    return static_cast<int>(std::max<long long>(current, version));
  });
}

int64_t rowInt(const soci::row& r, std::size_t i) {
  if (r.get_indicator(i) == soci::i_null) return 0;
  switch (r.get_properties(i).get_data_type()) {
    case soci::dt_integer: return r.get<int>(i);
    case soci::dt_long_long: return r.get<long long>(i);
    case soci::dt_unsigned_long_long: return static_cast<int64_t>(r.get<unsigned long long>(i));
    case soci::dt_double: return static_cast<int64_t>(r.get<double>(i));
    case soci::dt_string: return std::strtoll(r.get<std::string>(i).c_str(), nullptr, 10);
    default: return 0;
  }
}

double rowDouble(const soci::row& r, std::size_t i) {
  if (r.get_indicator(i) == soci::i_null) return 0;
  switch (r.get_properties(i).get_data_type()) {
    case soci::dt_double: return r.get<double>(i);
    case soci::dt_integer: return r.get<int>(i);
    case soci::dt_long_long: return static_cast<double>(r.get<long long>(i));
    case soci::dt_unsigned_long_long: return static_cast<double>(r.get<unsigned long long>(i));
    case soci::dt_string: return std::strtod(r.get<std::string>(i).c_str(), nullptr);
    default: return 0;
  }
}

std::string rowString(const soci::row& r, std::size_t i) {
  if (r.get_indicator(i) == soci::i_null) return "";
  switch (r.get_properties(i).get_data_type()) {
    case soci::dt_string: return r.get<std::string>(i);
    case soci::dt_integer: return std::to_string(r.get<int>(i));
    case soci::dt_long_long: return std::to_string(r.get<long long>(i));
    case soci::dt_double: return std::to_string(r.get<double>(i));
    default: return "";
  }
}

Json rowJson(const soci::row& r, std::size_t i) {
  const std::string text = rowString(r, i);
  if (text.empty()) return nullptr;
  return Json::parse(text);
}

Status statusFromException(const char* what, const std::exception& e) {
  const std::string message = e.what();
  if (message.find("database is locked") != std::string::npos || message.find("busy") != std::string::npos) {
    return Status::unavailable(std::string(what) + ": database busy: " + message);
  }
  if (message.find("UNIQUE constraint") != std::string::npos || message.find("duplicate key") != std::string::npos) {
    return Status::alreadyExists(std::string(what) + ": " + message);
  }
  return Status::internal(std::string(what) + ": " + message);
}

}  // namespace tide::ledger
