#include "host/ledger/db.h"

#include <cstdlib>
#include <set>
#include <string_view>

namespace tide::ledger {

// --- Bindings --------------------------------------------------------------------------------

void Bindings::put(const std::string& name, Value value) {
  for (auto& [existing, old] : values_) {
    if (existing == name) {
      old = std::move(value);
      return;
    }
  }
  values_.emplace_back(name, std::move(value));
}

void Bindings::exchangeInto(soci::statement& statement) const {
  for (const auto& binding : values_) {
    const std::string& name = binding.first;
    std::visit([&](const auto& v) { statement.exchange(soci::use(v, name)); }, binding.second);
  }
}

// --- StatementCache ---------------------------------------------------------------------------

StatementCache::Lease::Lease(StatementCache& cache, const std::string& query) : cache_(cache) {
  auto found = cache.index_.find(query);
  if (found == cache.index_.end()) {
    entry_ = cache.insert(query);
  } else if (!found->second->busy) {
    entry_ = found->second;
    cache.entries_.splice(cache.entries_.begin(), cache.entries_, entry_);
  } else {
    entry_ = cache.entries_.end();
    own_.emplace(cache.prepare(query));
    return;
  }
  entry_->busy = true;
}

StatementCache::Lease::~Lease() {
  bool reusable = std::uncaught_exceptions() == exceptions_;
  try {
    cache_.release(statement());
  } catch (...) {
    reusable = false;
  }
  if (own_) return;
  entry_->busy = false;
  if (!reusable) cache_.erase(entry_);
}

soci::statement StatementCache::prepare(const std::string& query) {
  soci::statement statement(session_);
  statement.alloc();
  statement.prepare(query);
  ++prepares_;
  return statement;
}

std::list<StatementCache::Entry>::iterator StatementCache::insert(const std::string& query) {
  for (auto it = entries_.end(); entries_.size() >= kCapacity && it != entries_.begin();) {
    --it;
    if (!it->busy) it = erase(it);
  }
  soci::statement statement = prepare(query);  // throws before anything is kept
  entries_.push_front(Entry{query, std::move(statement)});
  index_.emplace(entries_.front().query, entries_.begin());
  return entries_.begin();
}

void StatementCache::release(soci::statement& statement) {
  statement.bind_clean_up();
  dialect_.resetStatement(statement);
}

std::list<StatementCache::Entry>::iterator StatementCache::erase(std::list<Entry>::iterator entry) {
  index_.erase(entry->query);
  return entries_.erase(entry);
}

void StatementCache::clear() {
  index_.clear();
  entries_.clear();
}

// --- Db ----------------------------------------------------------------------------------------

bool Db::isInMemory(const std::string& url) {
  std::string target;
  const Result<const SqlDialect*> dialect = dialectFor(url, &target);
  return dialect.isOk() && (*dialect)->inMemory(target);
}

bool Db::onRowChange(std::function<void(const char*, int64_t)> hook) {
  row_hook_ = std::move(hook);
  return dialect_.watchRowChanges(session_, &row_hook_);
}

bool Db::autocommit() { return dialect_.autocommit(session_); }

Result<std::unique_ptr<Db>> Db::open(const std::string& url, Role role) {
  std::string target;
  TIDE_ASSIGN_OR_RETURN(const SqlDialect* dialect, dialectFor(url, &target));
  if (target.empty())
    return Status::invalidArgument("database: " + std::string(dialect->scheme()) + ":// needs a path");
  try {
    std::unique_ptr<Db> db(new Db(*dialect));
    dialect->open(db->session_, target, role);
    return db;
  } catch (const std::exception& e) {
    return Status::unavailable("database: cannot open '" + url + "': " + e.what());
  }
}

namespace {

// "008_audit_checkpoints.sql" → 8; 0 when the name does not start with a number.
int migrationVersion(std::string_view name) {
  int version = 0;
  size_t i = 0;
  for (; i < name.size() && i < 6 && name[i] >= '0' && name[i] <= '9'; ++i) version = version * 10 + (name[i] - '0');
  return i > 0 && i < name.size() && name[i] == '_' ? version : 0;
}

}  // namespace

Result<int> Db::migrate(const std::vector<embedded::File>& migrations, const std::string& now) {
  Result<int> applied = guarded("migrate", [&]() -> Result<int> {
    int previous = 0;
    for (const auto& file : migrations) {
      const int version = migrationVersion(file.name);
      if (version <= previous) {
        return Status::internal("migration " + std::string(file.name) +
                                ": names must start with increasing numbers (NNN_name.sql)");
      }
      previous = version;
    }
    session_ << "CREATE TABLE IF NOT EXISTS schema_version ("
                "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL)";
    std::set<int> recorded;
    {
      soci::rowset<int> versions = session_.prepare << "SELECT version FROM schema_version";
      recorded.insert(versions.begin(), versions.end());
    }

    soci::transaction tx(session_);
    for (const auto& file : migrations) {
      // A migration is applied when its number is not recorded, not only when it is above
      // the highest recorded one: branches merged out of order (008 before 007) still get both.
      const int version = migrationVersion(file.name);
      if (recorded.contains(version)) continue;
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
      recorded.insert(version);
    }
    tx.commit();
    return recorded.empty() ? 0 : *recorded.rbegin();
  });
  statements_.clear();  // a statement prepared before may describe columns that changed
  return applied;
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
