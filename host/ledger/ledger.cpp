#include "host/ledger/ledger.h"

#include <algorithm>

#include "host/core/failpoint.h"
#include "host/core/names.h"
#include "host/ledger/ledger_internal.h"

namespace tide::ledger {

// --- Tx ----------------------------------------------------------------------------------

Ledger::Tx::Tx(Ledger& ledger, std::string actor)
    : ledger_(ledger), db_(*ledger.db_), actor_(std::move(actor)), now_(ledger.now()) {
  db_.run("SAVEPOINT tide_write");
}

Ledger::Tx::~Tx() {
  if (committed_) return;
  ledger_.chain_tail_.reset();
  try {
    db_.run("ROLLBACK TO tide_write");
    db_.run("RELEASE tide_write");
  } catch (...) {
    // The database already ended the whole transaction; the group's commit reports it.
  }
}

void Ledger::Tx::event(const std::string& kind, const std::string& subject, const Json& data) {
  if (!appended_) tail_ = ledger_.chain_tail_ ? *ledger_.chain_tail_ : readChainTail(db_);
  const long long seq = tail_.seq + 1;
  const std::string text = data.dump();
  std::string hash = eventHash(tail_.hash, seq, now_, actor_, kind, subject, text);
  db_.run(
      "INSERT INTO events (seq, at, actor, kind, subject, data, prev_hash, hash) "
      "VALUES (:seq, :at, :actor, :kind, :subject, :data, :prev, :hash)",
      soci::use(seq), soci::use(now_), soci::use(actor_), soci::use(kind), soci::use(subject), soci::use(text),
      soci::use(tail_.hash), soci::use(hash));
  tail_.seq = seq;
  tail_.hash = std::move(hash);
  appended_ = true;
}

void Ledger::Tx::commit() {
  db_.run("RELEASE tide_write");
  committed_ = true;
  if (appended_) ledger_.chain_tail_ = tail_;
}

// --- shared helpers --------------------------------------------------------------------------

std::string Where::bind(const std::string& value) {
  const std::string name = "w" + std::to_string(next_++);
  values_.set(name, value);
  return ":" + name;
}

void Where::add(const std::string& condition) {
  clause_ += clause_.find(" WHERE ") == std::string::npos && clause_.rfind("WHERE ", 0) != 0 ? " WHERE " : " AND ";
  clause_ += condition;
}

Where& Where::eq(const std::string& column, const std::string& value) {
  add(column + " = " + bind(value));
  return *this;
}

Where& Where::greater(const std::string& column, int64_t value) {
  const std::string name = "w" + std::to_string(next_++);
  values_.set(name, static_cast<long long>(value));
  add(column + " > :" + name);
  return *this;
}

Where& Where::filters(const ListOptions& options, const FilterColumns& columns,
                      std::initializer_list<std::string_view> lists) {
  for (const auto& [key, column] : columns) {
    auto it = options.filters.find(key);
    if (it == options.filters.end()) continue;
    if (key == "since" || key == "until") {
      const Result<TimePoint> at = parseTimestamp(it->second);
      if (at.isOk()) add(column + (key == "since" ? " >= " : " < ") + bind(formatTimestamp(*at)));
    } else if (std::find(lists.begin(), lists.end(), key) == lists.end()) {
      eq(column, it->second);
    } else {
      in(column, it->second);
    }
  }
  return *this;
}

Where& Where::in(const std::string& expression, std::string_view values) {
  std::string placeholders;
  while (true) {
    const size_t comma = values.find(',');
    placeholders += (placeholders.empty() ? "" : ", ") + bind(std::string(values.substr(0, comma)));
    if (comma == std::string_view::npos) break;
    values.remove_prefix(comma + 1);
  }
  add(expression + " IN (" + placeholders + ")");
  return *this;
}

Status checkFilters(const ListOptions& options, const FilterColumns& columns) {
  for (const auto& [key, value] : options.filters) {
    const std::string& name = key;  // clang's C++20 captures no structured binding
    const bool known_key = std::any_of(columns.begin(), columns.end(), [&](const auto& c) { return c.first == name; });
    if (!known_key) {
      std::string known;
      for (const auto& c : columns) known += (known.empty() ? "" : ", ") + c.first;
      return Status::invalidArgument("unknown filter '" + key + "'",
                                     {{key, "unknown filter; known: " + (known.empty() ? "none" : known), ""}});
    }
    if ((key == "since" || key == "until") && !parseTimestamp(value).isOk()) {
      const std::string problem = "must be a timestamp such as 2026-11-21T12:00:00Z, got '" + value + "'";
      return Status::invalidArgument("filter '" + key + "' " + problem, {{key, problem, ""}});
    }
  }
  return Status::ok();
}

int64_t pageLimit(const ListOptions& options) { return std::clamp<int64_t>(options.limit, 1, kMaxPageSize); }

int64_t liveIdByName(Db& db, const char* table, const std::string& name) {
  long long id = 0;
  soci::indicator ind = soci::i_null;
  const bool found = db.run("SELECT id FROM " + std::string(table) + " WHERE name = :name AND deleted_at IS NULL",
                            soci::use(name), soci::into(id, ind));
  return found && ind != soci::i_null ? id : 0;
}

Status updateGuarded(Ledger::Tx& tx, const char* table, int64_t id, Generation generation,
                     const std::string& assignments, Bindings& values) {
  values.set("guard_id", static_cast<long long>(id));
  values.set("guard_now", tx.now());
  std::string query = "UPDATE " + std::string(table) + " SET " + assignments + (assignments.empty() ? "" : ", ") +
                      "generation = generation + 1, updated_at = :guard_now WHERE id = :guard_id";
  if (generation) {
    values.set("guard_generation", static_cast<long long>(*generation));
    query += " AND generation = :guard_generation";
  }
  if (tx.db().update(query, values) == 1) return Status::ok();
  long long current = 0;
  soci::indicator ind = soci::i_null;
  if (!tx.db().run("SELECT generation FROM " + std::string(table) + " WHERE id = :id",
                   soci::use(static_cast<long long>(id)), soci::into(current, ind))) {
    return Status::notFound(std::string(table) + " row " + std::to_string(id) + " is gone");
  }
  return Status::conflict("stale generation: you read " + std::to_string(generation.value_or(0)) +
                          ", the record is now at " + std::to_string(current));
}

template <model::RecordState E>
Status changeState(Ledger::Tx& tx, const char* table, int64_t id, const std::string& subject, E from, E to,
                   Generation generation, const std::string& message, Json extra) {
  constexpr RecordKind kind = model::recordKindOf<E>();
  TIDE_RETURN_IF_ERROR(checkTransition(from, to).withPrefix(subject));
  Bindings values;
  values.set("state", model::toString(to));
  values.set("message", message);
  TIDE_RETURN_IF_ERROR(
      updateGuarded(tx, table, id, generation, "state = :state, message = :message", values).withPrefix(subject));
  extra["from"] = from;
  extra["to"] = to;
  if (!message.empty()) extra["message"] = message;
  tx.event(std::string(recordKindName(kind)) + ".state", subject, extra);
  return Status::ok();
}

#define TIDE_INSTANTIATE_CHANGE_STATE(E)                                                                  \
  template Status changeState<E>(Ledger::Tx&, const char*, int64_t, const std::string&, E, E, Generation, \
                                 const std::string&, Json);
TIDE_INSTANTIATE_CHANGE_STATE(ClusterState)
TIDE_INSTANTIATE_CHANGE_STATE(NodeState)
TIDE_INSTANTIATE_CHANGE_STATE(PlanState)
TIDE_INSTANTIATE_CHANGE_STATE(DeploymentState)
TIDE_INSTANTIATE_CHANGE_STATE(MetaState)
TIDE_INSTANTIATE_CHANGE_STATE(RuntimeState)
TIDE_INSTANTIATE_CHANGE_STATE(OperationState)
#undef TIDE_INSTANTIATE_CHANGE_STATE

std::string placeholderList(const std::string& name, std::size_t count) {
  std::string out = "(";
  for (std::size_t i = 0; i < count; ++i) out += (i == 0 ? ":" : ", :") + name + std::to_string(i);
  return out + ")";
}

const std::vector<model::OperationState>& unfinishedOperationStates() {
  static const std::vector<model::OperationState> kUnfinished = [] {
    std::vector<model::OperationState> out;
    for (model::OperationState state : model::valuesOf<model::OperationState>()) {
      if (model::isUnfinished(state)) out.push_back(state);
    }
    return out;
  }();
  return kUnfinished;
}

// --- Ledger ------------------------------------------------------------------------------------

Ledger::Ledger(std::unique_ptr<Db> db, const Clock& clock) : db_(std::move(db)), clock_(clock) {}

Ledger::~Ledger() {
  std::lock_guard<std::mutex> lock(mu_);
  // A destructor has nobody to tell: a caller that must know commits a Batch itself, and a
  // group lost here is rolled back as a crash would leave it.
  if (group_open_) (void)commitGroup();
}

std::string Ledger::now() const { return formatTimestamp(clock_.now()); }

namespace {

// Reader connections of a file ledger: API requests and the control loop read side by
// side; more would only contend for the same two cores' worth of page cache.
constexpr int kReaderConnections = 4;

}  // namespace

Result<std::unique_ptr<Ledger>> Ledger::open(const std::string& url, const Clock& clock) {
  TIDE_ASSIGN_OR_RETURN(auto db, Db::open(url));
  if (db->dialect() != Dialect::kSqlite) {
    return Status::unavailable("database: PostgreSQL ledgers are not supported yet (use sqlite://)");
  }
  TIDE_ASSIGN_OR_RETURN(int version, db->migrate(embedded::sqliteMigrations(), formatTimestamp(clock.now())));
  std::unique_ptr<Ledger> ledger(new Ledger(std::move(db), clock));
  ledger->schema_version_ = version;
  if (!Db::isInMemory(url)) {
    for (int i = 0; i < kReaderConnections; ++i) {
      TIDE_ASSIGN_OR_RETURN(auto reader, Db::open(url, Db::Role::kReader));
      ledger->free_readers_.push_back(reader.get());
      ledger->readers_.push_back(std::move(reader));
    }
  }
  Ledger* raw = ledger.get();
  ledger->changes_tracked_ =
      ledger->db_->onRowChange([raw](const char* table, int64_t id) { raw->recordChange(table, id); });
  auto seq = ledger->read("last event", [&](Db& db) -> Result<int64_t> { return readChainTail(db).seq; });
  TIDE_RETURN_IF_ERROR(seq.status());
  ledger->last_seq_ = *seq;
  return ledger;
}

// --- group commit ------------------------------------------------------------------------------

namespace {

// The Ledger whose Batch is open on this thread, if any.
thread_local Ledger* t_batch_ledger = nullptr;

}  // namespace

bool Ledger::inOpenBatch() const { return t_batch_ledger == this; }

uint64_t Ledger::joinGroup() {
  if (!group_open_) {
    db_->session().begin();
    group_open_ = true;
    ++group_;
    group_writes_ = 0;
    group_waiters_ = 0;
    group_seq_ = 0;
    group_opened_ = clock_.now();
  }
  ++group_writes_;
  return group_;
}

Status Ledger::finishWrite(std::unique_lock<std::mutex>& lock, uint64_t group) {
  auto statusOf = [this](uint64_t g) {
    auto it = failed_groups_.find(g);
    return it == failed_groups_.end() ? Status::ok() : it->second;
  };
  if (!group_open_ || group_ != group) return statusOf(group);
  const bool batch = inOpenBatch();
  const bool full =
      group_writes_ >= kMaxGroupWrites || clock_.now() - group_opened_ >= kMaxGroupAge;
  // Commit when nobody else is about to join, when the group is as big or old as it may
  // get, or when a batch holds writers of other threads waiting.
  if (full || (batch && group_waiters_ > 0) || (!batch && queued_writers_.load() == 0)) return commitGroup();
  if (batch) return Status::ok();
  ++group_waiters_;
  group_cv_.wait(lock, [&] { return committed_group_ >= group; });
  return statusOf(group);
}

Status Ledger::commitGroup() {
  // docs/architecture.md#failpoints: an error before the commit fails the group as a failed
  // fsync would; after it, only `kill` means anything (the group is durable by then).
  Status status = failpoint::check("ledger.commit.before");
  try {
    if (status.isOk()) {
      db_->session().commit();
      (void)failpoint::check("ledger.commit.after");  // only `kill` means anything: the group is durable
    } else {
      db_->session().rollback();
    }
  } catch (const std::exception& e) {
    status = statusFromException("commit", e);
    try {
      db_->session().rollback();
    } catch (...) {
      // Nothing left to roll back.
    }
  }
  group_open_ = false;
  committed_group_ = group_;
  {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.writes += group_writes_;
    stats_.largest_group = std::max<int64_t>(stats_.largest_group, group_writes_);
    if (status.isOk()) {
      ++stats_.commits;
    } else {
      ++stats_.failed_commits;
    }
  }
  if (status.isOk()) {
    if (!group_changes_.empty()) {
      for (const auto& [id, sink] : sinks_) sink(group_changes_);
    }
    if (group_seq_ > 0) {
      std::lock_guard<std::mutex> lock(events_mu_);
      last_seq_ = std::max(last_seq_, group_seq_);
    }
    events_cv_.notify_all();
  } else {
    chain_tail_.reset();
    failed_groups_[group_] = status;
    while (failed_groups_.size() > 64) failed_groups_.erase(failed_groups_.begin());
  }
  group_changes_.clear();
  group_cv_.notify_all();
  return status;
}

void Ledger::recordChange(const char* table, int64_t id) { group_changes_.push_back({table, id}); }

int Ledger::subscribe(ChangeSink sink) {
  std::lock_guard<std::mutex> lock(mu_);
  sinks_.emplace(next_sink_, std::move(sink));
  return next_sink_++;
}

void Ledger::unsubscribe(int id) {
  std::lock_guard<std::mutex> lock(mu_);
  sinks_.erase(id);
}

Ledger::WriteStats Ledger::writeStats() const {
  std::lock_guard<std::mutex> lock(stats_mu_);
  return stats_;
}

Ledger::Batch::Batch(Ledger& ledger) : ledger_(ledger) {
  if (t_batch_ledger != nullptr) return;
  outermost_ = true;
  t_batch_ledger = &ledger;
  std::lock_guard<std::mutex> lock(ledger.mu_);
  first_group_ = ledger.group_open_ ? ledger.group_ : ledger.group_ + 1;
}

Ledger::Batch::~Batch() {
  if (!outermost_) return;
  (void)commit();  // a caller that must know whether the batch reached the disk calls commit() itself
  t_batch_ledger = nullptr;
}

Status Ledger::Batch::commit() {
  if (!outermost_) return Status::ok();
  std::lock_guard<std::mutex> lock(ledger_.mu_);
  Status status = ledger_.group_open_ ? ledger_.commitGroup() : Status::ok();
  if (!status.isOk()) return status;
  auto failed = ledger_.failed_groups_.lower_bound(first_group_);
  if (failed != ledger_.failed_groups_.end()) return failed->second;
  first_group_ = ledger_.group_ + 1;
  return Status::ok();
}

namespace {
thread_local const Ledger* t_snapshot_ledger = nullptr;
thread_local Db* t_snapshot_reader = nullptr;
}  // namespace

Ledger::Snapshot::Snapshot(Ledger& ledger) : ledger_(ledger) {
  if (t_snapshot_reader != nullptr || ledger.readers_.empty() || ledger.inOpenBatch()) return;
  Db* reader = ledger.acquireReader();
  try {
    reader->session().begin();
  } catch (const std::exception&) {
    ledger.releaseReader(reader);  // its reads go one snapshot each, as without it
    return;
  }
  reader_ = reader;
  t_snapshot_ledger = &ledger;
  t_snapshot_reader = reader;
}

Ledger::Snapshot::~Snapshot() {
  if (reader_ == nullptr) return;
  t_snapshot_ledger = nullptr;
  t_snapshot_reader = nullptr;
  try {
    reader_->session().commit();  // a read transaction: ends the snapshot
  } catch (const std::exception&) {
    try {
      reader_->session().rollback();
    } catch (const std::exception&) {
    }
  }
  ledger_.releaseReader(reader_);
}

Db* Ledger::snapshotReader() const { return t_snapshot_ledger == this ? t_snapshot_reader : nullptr; }

// --- readers -----------------------------------------------------------------------------------

Db* Ledger::acquireReader() {
  std::unique_lock<std::mutex> lock(readers_mu_);
  readers_cv_.wait(lock, [this] { return !free_readers_.empty(); });
  Db* reader = free_readers_.back();
  free_readers_.pop_back();
  return reader;
}

void Ledger::releaseReader(Db* reader) {
  {
    std::lock_guard<std::mutex> lock(readers_mu_);
    free_readers_.push_back(reader);
  }
  readers_cv_.notify_one();
}

// --- events ------------------------------------------------------------------------------------

namespace {

// A query of the subjects events give plan `plan`'s records, `plan` bound in `where`: the
// plan itself, its deployments, meta instances, runtime instances and operations. The
// records of an earlier plan of the same name count too.
std::string planSubjects(Where& where, const std::string& plan) {
  // Each selects subjects and ends where the plan's name is compared.
  static const char* const kSubjectsOfPlan[] = {
      "SELECT 'plan/' || ",
      "SELECT 'deployment/' || p.name || '/' || d.deployment_id FROM deployments d "
      "JOIN plans p ON p.id = d.plan_id WHERE p.name = ",
      "SELECT 'instance/' || m.name FROM meta_instances m JOIN plans p ON p.id = m.plan_id WHERE p.name = ",
      "SELECT 'runtime/' || r.id FROM runtime_instances r JOIN meta_instances m ON m.id = r.meta_instance_id "
      "JOIN plans p ON p.id = m.plan_id WHERE p.name = ",
      "SELECT 'operation/' || o.id FROM operations o JOIN meta_instances m ON m.id = o.meta_instance_id "
      "JOIN plans p ON p.id = m.plan_id WHERE p.name = "};
  std::string query;
  for (const char* part : kSubjectsOfPlan) {
    query += (query.empty() ? "" : " UNION ALL ") + std::string(part) + where.bind(plan);
  }
  return query;
}

}  // namespace

Result<Page<Event>> Ledger::listEvents(const ListOptions& options) {
  // kind, plan and state are compared below, not as columns.
  static const FilterColumns kEventFilters = {{"kind", ""},  {"subject", "subject"}, {"actor", "actor"}, {"plan", ""},
                                              {"state", ""}, {"since", "at"},        {"until", "at"}};
  static const FilterColumns kColumnFilters = {
      {"subject", "subject"}, {"actor", "actor"}, {"since", "at"}, {"until", "at"}};
  TIDE_RETURN_IF_ERROR(checkFilters(options, kEventFilters));
  return read("list events", [&](Db& db) -> Result<Page<Event>> {
    Where where(kEventColumns);
    where.greater("seq", options.after).filters(options, kColumnFilters);
    if (auto it = options.filters.find("kind"); it != options.filters.end()) {
      const std::string& kind = it->second;
      if (kind.size() > 2 && kind.compare(kind.size() - 2, 2, ".*") == 0) {
        where.raw("kind LIKE " + where.bind(kind.substr(0, kind.size() - 1) + "%"));
      } else {
        where.eq("kind", kind);
      }
    }
    if (auto it = options.filters.find("plan"); it != options.filters.end()) {
      where.raw("subject IN (" + planSubjects(where, it->second) + ")");
    }
    if (auto it = options.filters.find("state"); it != options.filters.end()) {
      where.raw("kind LIKE '%.state'").in("json_extract(data, '$.to')", it->second);
    }
    const int64_t limit = pageLimit(options);
    where.values().set("page_limit", static_cast<long long>(limit + 1));
    Page<Event> page;
    db.forEachRow(
        where.clause() + " ORDER BY seq LIMIT :page_limit",
        [&](const soci::row& row) { page.items.push_back(eventFromRow(row)); }, where.values());
    if (static_cast<int64_t>(page.items.size()) > limit) {
      page.items.pop_back();
      page.next_after = page.items.back().seq;
    }
    return page;
  });
}

int64_t Ledger::lastEventSeq() {
  std::lock_guard<std::mutex> lock(events_mu_);
  return last_seq_;
}

bool Ledger::waitForEvents(int64_t after, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(events_mu_);
  return events_cv_.wait_for(lock, timeout, [&] { return last_seq_ > after; });
}

Status Ledger::appendEvent(const std::string& kind, const std::string& subject, const Json& data,
                           const std::string& actor) {
  return write("append event", actor, [&](Tx& tx) -> Status {
    tx.event(kind, subject, data);
    return Status::ok();
  });
}

// --- scripts and decisions ---------------------------------------------------------------------

Result<ScriptVersion> Ledger::recordScriptVersion(const ScriptVersion& version) {
  return write("record script version", "scripts", [&](Tx& tx) -> Result<ScriptVersion> {
    ScriptVersion v = version;
    if (v.loaded_at.empty()) v.loaded_at = tx.now();
    long long id = 0;
    tx.db().run(
        "INSERT INTO script_versions (path, kind, sha256, loaded_at, status, error) "
        "VALUES (:p, :k, :s, :l, :st, :e) RETURNING id",
        soci::use(v.path), soci::use(v.kind), soci::use(v.sha256), soci::use(v.loaded_at), soci::use(v.status),
        soci::use(v.error), soci::into(id));
    v.id = id;
    tx.event("script." + v.status, "script/" + v.path,
             Json{{"kind", v.kind}, {"sha256", v.sha256}, {"error", v.error}});
    return v;
  });
}

Result<std::vector<ScriptVersion>> Ledger::listScriptVersions(const std::string& path) {
  return read("list script versions", [&](Db& db) -> Result<std::vector<ScriptVersion>> {
    Where where("SELECT id, path, kind, sha256, loaded_at, status, error FROM script_versions");
    if (!path.empty()) where.eq("path", path);
    std::vector<ScriptVersion> out;
    db.forEachRow(
        where.clause() + " ORDER BY id",
        [&](const soci::row& r) {
          out.push_back({rowInt(r, 0), rowString(r, 1), rowString(r, 2), rowString(r, 3), rowString(r, 4),
                         rowString(r, 5), rowString(r, 6)});
        },
        where.values());
    return out;
  });
}

Status Ledger::keepScriptText(const std::string& sha256, const std::string& text) {
  return write("keep script text", "scripts", [&](Tx& tx) -> Status {
    tx.db().run("INSERT INTO script_texts (sha256, text) VALUES (:s, :t) ON CONFLICT (sha256) DO NOTHING",
                soci::use(sha256), soci::use(text));
    return Status::ok();
  });
}

Result<std::optional<std::string>> Ledger::scriptText(const std::string& sha256) {
  return read("read script text", [&](Db& db) -> Result<std::optional<std::string>> {
    std::string text;
    if (!db.run("SELECT text FROM script_texts WHERE sha256 = :s", soci::use(sha256), soci::into(text))) {
      return std::optional<std::string>();
    }
    return std::optional<std::string>(std::move(text));
  });
}

Status Ledger::recordDecisions(const std::vector<Decision>& decisions) {
  return write("record decisions", "policies", [&](Tx& tx) -> Status {
    for (const auto& d : decisions) {
      const std::string at = d.at.empty() ? tx.now() : d.at;
      const std::string reasons = d.reasons.dump();
      const long long op = d.operation_id, duration = d.duration_us;
      tx.db().run(
          "INSERT INTO decisions (operation_id, policy, script_sha256, verdict, reasons, duration_us, "
          "error_class, at) VALUES (:o, :p, :s, :v, :r, :d, :e, :a)",
          soci::use(op), soci::use(d.policy), soci::use(d.script_sha256), soci::use(d.verdict), soci::use(reasons),
          soci::use(duration), soci::use(d.error_class), soci::use(at));
    }
    return Status::ok();
  });
}

Result<std::vector<Decision>> Ledger::listDecisions(int64_t operation_id) {
  return read("list decisions", [&](Db& db) -> Result<std::vector<Decision>> {
    const long long op = operation_id;
    std::vector<Decision> out;
    db.forEachRow(
        "SELECT id, operation_id, policy, script_sha256, verdict, reasons, duration_us, error_class, at FROM decisions "
        "WHERE operation_id = :o ORDER BY id",
        [&](const soci::row& r) {
          out.push_back({rowInt(r, 0), rowInt(r, 1), rowString(r, 2), rowString(r, 3), rowString(r, 4), rowJson(r, 5),
                         rowInt(r, 6), rowString(r, 7), rowString(r, 8)});
        },
        soci::use(op));
    return out;
  });
}

// --- tokens ------------------------------------------------------------------------------------

namespace {

const char* kTokenSelect =
    "SELECT id, name, role, created_at, expires_at, revoked_at, revoked_by, node, created_by FROM tokens";

ApiToken tokenFromRow(const soci::row& r) {
  return ApiToken{rowInt(r, 0),    rowString(r, 1), rowString(r, 2), rowString(r, 3), rowString(r, 4),
                  rowString(r, 5), rowString(r, 6), rowString(r, 7), rowString(r, 8)};
}

}  // namespace

// Ledger::mintersOf over one connection: breadth first up the created_by column, each name
// once (a name reused after a revocation brings the minters of every token that held it).
std::vector<std::string> mintersOf(Db& db, const std::string& name) {
  std::vector<std::string> out;
  std::vector<std::string> next = {name};
  while (!next.empty() && out.size() < Ledger::kMaxMinters) {
    std::vector<std::string> found;
    for (const std::string& minted : next) {
      db.forEachRow(
          "SELECT DISTINCT created_by FROM tokens WHERE name = :n AND created_by IS NOT NULL ORDER BY created_by",
          [&](const soci::row& r) {
            std::string minter = rowString(r, 0);
            if (minter == name || std::find(out.begin(), out.end(), minter) != out.end()) return;
            out.push_back(minter);
            found.push_back(std::move(minter));
          },
          soci::use(minted));
    }
    next = std::move(found);
  }
  return out;
}

Result<ApiToken> Ledger::createToken(const std::string& name, const std::string& token_sha256, const std::string& role,
                                     const std::string& actor, const std::string& expires_at,
                                     const std::string& node) {
  static const std::vector<std::string> kRoles = {"viewer", "operator", "approver", "admin", "agent"};
  if (std::string problem = nameProblem(name); !problem.empty()) {
    return Status::invalidArgument("token name '" + name + "': " + problem, {{"name", problem, ""}});
  }
  if (std::find(kRoles.begin(), kRoles.end(), role) == kRoles.end()) {
    return Status::invalidArgument("role '" + role + "' is not one of viewer, operator, approver, admin, agent",
                                   {{"role", "unknown role", ""}});
  }
  if (role == "agent" && node.empty()) {
    return Status::invalidArgument("an agent token needs the node its agent serves",
                                   {{"node", "is required for role agent", ""}});
  }
  if (role != "agent" && !node.empty()) {
    return Status::invalidArgument("only agent tokens are bound to a node; '" + role + "' tokens are not",
                                   {{"node", "only for role agent", node}});
  }
  return write("create token", actor, [&](Tx& tx) -> Result<ApiToken> {
    if (!node.empty()) {
      long long nodes = 0;
      tx.db().run("SELECT COUNT(*) FROM nodes WHERE name = :n AND deleted_at IS NULL", soci::use(node),
                  soci::into(nodes));
      if (nodes == 0) return Status::notFound("node '" + node + "' not found");
    }
    long long live = 0;
    tx.db().run("SELECT COUNT(*) FROM tokens WHERE name = :n AND revoked_at IS NULL", soci::use(name), soci::into(live));
    if (live > 0) return Status::alreadyExists("a live token is already named '" + name + "'; revoke it first");
    long long id = 0;
    soci::indicator expiry = expires_at.empty() ? soci::i_null : soci::i_ok;
    soci::indicator bound = node.empty() ? soci::i_null : soci::i_ok;
    tx.db().run(
        "INSERT INTO tokens (name, token_sha256, role, created_at, expires_at, node, created_by) "
        "VALUES (:n, :s, :r, :c, :e, :nd, :by) RETURNING id",
        soci::use(name), soci::use(token_sha256), soci::use(role), soci::use(tx.now()), soci::use(expires_at, expiry),
        soci::use(node, bound), soci::use(actor), soci::into(id));
    Json data{{"role", role}};
    if (!expires_at.empty()) data["expires_at"] = expires_at;
    if (!node.empty()) data["node"] = node;
    tx.event("token.created", "token/" + name, data);
    return ApiToken{id, name, role, tx.now(), expires_at, "", "", node, actor};
  });
}

Result<ApiToken> Ledger::findToken(const std::string& token_sha256) {
  TIDE_ASSIGN_OR_RETURN(ApiToken token, read("find token", [&](Db& db) -> Result<ApiToken> {
    soci::row r;
    if (!db.run(std::string(kTokenSelect) + " WHERE token_sha256 = :s", soci::use(token_sha256), soci::into(r))) {
      return Status::notFound("unknown token");
    }
    return tokenFromRow(r);
  }));
  if (!token.revoked_at.empty()) return Status::notFound("token '" + token.name + "' was revoked");
  // Timestamps share one fixed-width UTC format, so they compare as text.
  if (!token.expires_at.empty() && token.expires_at <= now()) {
    return Status::notFound("token '" + token.name + "' expired at " + token.expires_at);
  }
  return token;
}

Result<Page<ApiToken>> Ledger::listTokens(const ListOptions& options) {
  TIDE_RETURN_IF_ERROR(checkFilters(options, {}));
  return read("list tokens", [&](Db& db) -> Result<Page<ApiToken>> {
    Where where(kTokenSelect);
    where.greater("id", options.after);
    return fetchPage<ApiToken>(db, where, "id", options, tokenFromRow);
  });
}

Result<ApiToken> Ledger::revokeToken(const std::string& name, const std::string& actor, bool keep_an_admin) {
  return write("revoke token", actor, [&](Tx& tx) -> Result<ApiToken> {
    soci::row r;
    if (!tx.db().run(std::string(kTokenSelect) + " WHERE name = :n AND revoked_at IS NULL", soci::use(name),
                     soci::into(r))) {
      return Status::notFound("no live token is named '" + name + "'");
    }
    ApiToken token = tokenFromRow(r);
    if (keep_an_admin && token.role == "admin") {
      long long admins = 0;
      const std::string now = tx.now();
      tx.db().run(
          "SELECT COUNT(*) FROM tokens WHERE role = 'admin' AND revoked_at IS NULL AND id <> :id AND "
          "(expires_at IS NULL OR expires_at > :now)",
          soci::use(token.id), soci::use(now), soci::into(admins));
      if (admins == 0) {
        return Status::conflict("'" + name + "' is the last admin token; create another admin token before revoking it");
      }
    }
    tx.db().run("UPDATE tokens SET revoked_at = :at, revoked_by = :by WHERE id = :id", soci::use(tx.now()),
                soci::use(actor), soci::use(token.id));
    tx.event("token.revoked", "token/" + name, Json{{"role", token.role}});
    token.revoked_at = tx.now();
    token.revoked_by = actor;
    return token;
  });
}

Result<std::vector<std::string>> Ledger::mintersOf(const std::string& name) {
  return read("find token minters",
              [&](Db& db) -> Result<std::vector<std::string>> { return ledger::mintersOf(db, name); });
}

int64_t Ledger::countTokens() {
  auto n = read("count tokens", [&](Db& db) -> Result<int64_t> {
    long long count = 0;
    db.run("SELECT COUNT(*) FROM tokens WHERE revoked_at IS NULL", soci::into(count));
    return count;
  });
  return n.isOk() ? *n : 0;
}

// --- invariants --------------------------------------------------------------------------------

Result<std::vector<Ledger::InvariantViolation>> Ledger::findInvariantViolations() {
  auto violations = read("check invariants", [&](Db& db) -> Result<std::vector<InvariantViolation>> {
    std::vector<InvariantViolation> out;
    // (meta instances holding more than one of something, what they hold, the rule)
    struct AtMostOne {
      std::string query;
      const char* held;
      const char* rule;
      Bindings values;
    };
    AtMostOne active_runtimes{"", "active runtime instances", "active_runtimes", {}};
    active_runtimes.query =
        "SELECT m.name, COUNT(*) FROM runtime_instances r JOIN meta_instances m ON m.id = r.meta_instance_id "
        "WHERE r.is_active = 1 AND r.state NOT IN " +
        boundStates(active_runtimes.values, "released", model::kReleasedRuntimeStates) +
        " GROUP BY m.name HAVING COUNT(*) > 1";
    AtMostOne unfinished_operations{"", "unfinished operations", "unfinished_operations", {}};
    unfinished_operations.query =
        "SELECT m.name, COUNT(*) FROM operations o JOIN meta_instances m ON m.id = o.meta_instance_id "
        "WHERE o.state IN " +
        boundStates(unfinished_operations.values, "unfinished", unfinishedOperationStates()) +
        " GROUP BY m.name HAVING COUNT(*) > 1";
    for (auto* check : {&active_runtimes, &unfinished_operations}) {
      db.forEachRow(
          check->query,
          [&](const soci::row& r) {
            out.push_back({check->rule, "meta instance " + rowString(r, 0) + " has " + std::to_string(rowInt(r, 1)) +
                                            " " + check->held + " (at most one allowed)"});
          },
          check->values);
    }
    {
      Bindings values;
      db.forEachRow(
          "SELECT n.name, n.total_cores - n.reserved_cores - COALESCE(SUM(r.reserved_cores), 0), "
          "n.total_memory_gib - n.reserved_memory_gib - COALESCE(SUM(r.reserved_memory_gib), 0) "
          "FROM nodes n LEFT JOIN runtime_instances r ON r.node_id = n.id AND r.state NOT "
          "IN " +
              boundStates(values, "released", model::kReleasedRuntimeStates) +
              " GROUP BY n.id, n.name, n.total_cores, n.reserved_cores, "
              "n.total_memory_gib, n.reserved_memory_gib",
          [&](const soci::row& r) {
            if (rowDouble(r, 1) < -1e-9 || rowDouble(r, 2) < -1e-9) {
              out.push_back({"over_committed", "node " + rowString(r, 0) + " is over-committed (remaining cores " +
                                                   std::to_string(rowDouble(r, 1)) + ", memory " +
                                                   std::to_string(rowDouble(r, 2)) + " GiB)"});
            }
          },
          values);
    }
    // A reservation is what a runtime instance that holds resources reserved on its node: it is
    // never negative, sits on a live node, and belongs to an instance that is meant to run or
    // to an operation still under way.
    Bindings reservation_values;
    db.forEachRow(
        "SELECT r.id, m.name, r.state, m.state, n.name, n.deleted_at IS NOT NULL, r.reserved_cores, "
        "r.reserved_memory_gib, EXISTS (SELECT 1 FROM operations o WHERE o.meta_instance_id = m.id AND o.state IN " +
            boundStates(reservation_values, "unfinished", unfinishedOperationStates()) +
            ") "
            "FROM runtime_instances r JOIN meta_instances m ON m.id = r.meta_instance_id "
            "JOIN nodes n ON n.id = r.node_id WHERE r.state NOT IN " +
            boundStates(reservation_values, "released", model::kReleasedRuntimeStates) + " ORDER BY r.id",
        [&](const soci::row& r) {
          const std::string runtime = "runtime instance " + rowString(r, 0) + " of " + rowString(r, 1) + " (" +
                                      rowString(r, 2) + " on node " + rowString(r, 4) + ")";
          const bool under_way = rowInt(r, 8) != 0;
          std::string wrong;
          if (rowDouble(r, 6) < 0 || rowDouble(r, 7) < 0) {
            wrong = "reserves a negative amount";
          } else if (rowInt(r, 5) != 0) {
            wrong = "holds a reservation on a deleted node";
          } else if (rowString(r, 3) != model::toString(model::MetaState::kActive) && !under_way) {
            wrong = "holds a reservation for a meta instance that is " + rowString(r, 3) + " with no operation under way";
          }
          if (!wrong.empty()) out.push_back({"reservation", runtime + " " + wrong});
        },
        reservation_values);
    for (RecordKind kind : {RecordKind::kCluster, RecordKind::kNode, RecordKind::kPlan, RecordKind::kDeployment,
                            RecordKind::kMetaInstance, RecordKind::kRuntimeInstance, RecordKind::kOperation}) {
      static const std::map<RecordKind, const char*> kTables = {{RecordKind::kCluster, "clusters"},
                                                                {RecordKind::kNode, "nodes"},
                                                                {RecordKind::kPlan, "plans"},
                                                                {RecordKind::kDeployment, "deployments"},
                                                                {RecordKind::kMetaInstance, "meta_instances"},
                                                                {RecordKind::kRuntimeInstance, "runtime_instances"},
                                                                {RecordKind::kOperation, "operations"}};
      db.forEachRow("SELECT DISTINCT state FROM " + std::string(kTables.at(kind)), [&](const soci::row& r) {
        if (!isKnownState(kind, rowString(r, 0))) {
          out.push_back({"unknown_state",
                         std::string(recordKindName(kind)) + " rows hold unknown state '" + rowString(r, 0) + "'"});
        }
      });
    }
    return out;
  });
  if (!violations.isOk()) return violations;
  if (Status chain = verifyEventChain(); !chain.isOk()) violations->push_back({"event_chain", chain.message()});
  return violations;
}

Result<std::vector<std::string>> Ledger::checkInvariants() {
  TIDE_ASSIGN_OR_RETURN(std::vector<InvariantViolation> violations, findInvariantViolations());
  std::vector<std::string> sentences;
  sentences.reserve(violations.size());
  for (InvariantViolation& v : violations) sentences.push_back(std::move(v.message));
  return sentences;
}

}  // namespace tide::ledger
