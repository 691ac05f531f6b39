// The event chain's audit and retention (docs/architecture.md#retention-and-audit): hashing
// an event, walking the chain from the newest checkpoint, and pruning old history without
// losing the proof.

#include <filesystem>
#include <set>

#include "host/core/sha256.h"
#include "host/ledger/ledger.h"
#include "host/ledger/ledger_internal.h"

namespace tide::ledger {

using model::AuditCheckpoint;
using model::AuditReport;
using model::PruneReport;
using model::RetentionPolicy;

std::string eventHash(const std::string& prev_hash, int64_t seq, const std::string& at, const std::string& actor,
                      const std::string& kind, const std::string& subject, const std::string& data) {
  std::string material = prev_hash;
  for (const std::string* part : {&at, &actor, &kind, &subject, &data}) {
    material += '\x1f';
    material += *part;
  }
  material += '\x1f' + std::to_string(seq);
  return sha256Hex(material);
}

const char* const kEventColumns = "SELECT seq, at, actor, kind, subject, data, prev_hash, hash FROM events";

Event eventFromRow(const soci::row& r) {
  Event e;
  e.seq = rowInt(r, 0);
  e.at = rowString(r, 1);
  e.actor = rowString(r, 2);
  e.kind = rowString(r, 3);
  e.subject = rowString(r, 4);
  e.data = rowJson(r, 5);
  e.prev_hash = rowString(r, 6);
  e.hash = rowString(r, 7);
  return e;
}

namespace {

const char* const kCheckpointColumns =
    "SELECT id, through_seq, through_hash, at, actor, rule, events_pruned FROM audit_checkpoints";
// Superseded checkpoints kept as history; only the newest one anchors the chain.
constexpr int64_t kCheckpointHistory = 100;

// The newest checkpoint; nullopt when nothing was ever pruned, or for a ledger whose schema
// predates checkpoints (read offline by an older file).
std::optional<AuditCheckpoint> newestCheckpoint(Db& db) {
  long long tables = 0;
  db.run("SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'audit_checkpoints'", soci::into(tables));
  if (tables == 0) return std::nullopt;
  soci::row r;
  if (!db.run(std::string(kCheckpointColumns) + " ORDER BY id DESC LIMIT 1", soci::into(r))) return std::nullopt;
  return AuditCheckpoint{rowInt(r, 0),    rowInt(r, 1),    rowString(r, 2), rowString(r, 3),
                         rowString(r, 4), rowString(r, 5), rowInt(r, 6)};
}

// An event row as it was hashed: data is the stored text, not re-serialized JSON.
struct Link {
  int64_t seq = 0;
  std::string at, actor, kind, subject, data, prev_hash, hash;

  static Link fromRow(const soci::row& r) {
    return Link{rowInt(r, 0),    rowString(r, 1), rowString(r, 2), rowString(r, 3),
                rowString(r, 4), rowString(r, 5), rowString(r, 6), rowString(r, 7)};
  }
};

// Follows events in seq order from a checkpoint (or the genesis) and names the first link
// that does not hold. Rows after a broken one are ignored.
class ChainWalker {
 public:
  explicit ChainWalker(const std::optional<AuditCheckpoint>& from)
      : start_seq_(from ? from->through_seq : 0),
        prev_hash_(from ? from->through_hash : ""),
        origin_(from ? "checked from the checkpoint at seq " + std::to_string(from->through_seq)
                     : "checked from the first event") {}

  // False once the chain is broken (at this row or before).
  bool add(const Link& e) {
    if (broken()) return false;
    const int64_t expected = last_seq_ == 0 ? start_seq_ + 1 : last_seq_ + 1;
    if (last_seq_ == 0 && e.seq <= start_seq_) {
      return breakAt(e.seq, "still present, though the checkpoint says every event through seq " +
                                std::to_string(start_seq_) + " was pruned");
    }
    if (e.seq != expected) return breakAt(expected, "missing (the next event is seq " + std::to_string(e.seq) + ")");
    if (eventHash(e.prev_hash, e.seq, e.at, e.actor, e.kind, e.subject, e.data) != e.hash) {
      return breakAt(e.seq, "hash mismatch: the event is not what was hashed");
    }
    if (e.prev_hash != prev_hash_) {
      if (last_seq_ != 0) return breakAt(e.seq, "prev_hash is not the hash of event seq " + std::to_string(last_seq_));
      return breakAt(e.seq, start_seq_ > 0 ? "does not join the checkpoint: its prev_hash is not the checkpoint's hash"
                                           : "prev_hash of the first event must be empty");
    }
    if (first_seq_ == 0) first_seq_ = e.seq;
    last_seq_ = e.seq;
    prev_hash_ = e.hash;
    ++events_;
    if (e.kind == "audit.pruned") {
      newest_prune_seq_ = e.seq;
      newest_prune_data_ = e.data;
    }
    return true;
  }

  // After the last row: checks what only the whole chain can tell. `appended_through` is
  // the newest seq the running host appended (0 offline); `checkpoint` the one walked from.
  void finish(int64_t appended_through, const std::optional<AuditCheckpoint>& checkpoint) {
    if (broken()) return;
    const int64_t head = last_seq_ == 0 ? start_seq_ : last_seq_;
    if (appended_through > head) {
      breakAt(head + 1, "missing: this host appended events through seq " + std::to_string(appended_through));
      return;
    }
    // The newest audit.pruned event names the newest checkpoint, so a checkpoint forged or
    // removed after the fact (with the events it claims to cover) shows.
    const int64_t want_seq = checkpoint ? checkpoint->through_seq : 0;
    const std::string want_hash = checkpoint ? checkpoint->through_hash : "";
    if (newest_prune_seq_ == 0) {
      if (checkpoint) {
        breakAt(head == start_seq_ ? start_seq_ + 1 : first_seq_,
                "no kept audit.pruned event records the checkpoint at seq " + std::to_string(want_seq));
      }
      return;
    }
    // The data was hashed with the event, so it is what the host wrote, unless the chain was rewritten.
    const Json recorded = Json::parse(newest_prune_data_, nullptr, false);
    const Json said_seq = recorded.is_object() ? recorded.value("through_seq", Json()) : Json();
    const Json said_hash = recorded.is_object() ? recorded.value("through_hash", Json()) : Json();
    if (said_seq == Json(want_seq) && said_hash == Json(want_hash)) return;
    std::string newest = "missing";
    if (checkpoint)
      newest = "at seq " + std::to_string(want_seq) + (said_seq == Json(want_seq) ? ", with another hash" : "");
    breakAt(newest_prune_seq_, "audit.pruned records the checkpoint at seq " + said_seq.dump() +
                                   ", but the newest checkpoint is " + newest);
  }

  bool broken() const { return broken_seq_ != 0; }

  AuditReport report(const std::optional<AuditCheckpoint>& checkpoint) const {
    AuditReport r;
    r.ok = !broken();
    r.first_seq = first_seq_;
    r.last_seq = last_seq_;
    r.events = events_;
    r.head_hash = last_seq_ == 0 ? "" : prev_hash_;
    r.checkpoint = checkpoint;
    r.broken_seq = broken_seq_;
    r.problem = problem_;
    return r;
  }
  const std::string& problem() const { return problem_; }

 private:
  bool breakAt(int64_t seq, const std::string& what) {
    broken_seq_ = seq;
    problem_ = "event seq " + std::to_string(seq) + ": " + what + " (" + origin_ + ")";
    return false;
  }

  const int64_t start_seq_;
  std::string prev_hash_;
  const std::string origin_;
  int64_t first_seq_ = 0, last_seq_ = 0, events_ = 0;
  int64_t newest_prune_seq_ = 0;
  std::string newest_prune_data_;
  int64_t broken_seq_ = 0;
  std::string problem_;
};

// The whole chain, in one read snapshot so a prune committing meanwhile cannot make the
// checkpoint and the events disagree.
AuditReport walkChain(Db& db, int64_t appended_through) {
  std::optional<soci::transaction> snapshot;
  if (db.autocommit()) snapshot.emplace(db.session());
  const std::optional<AuditCheckpoint> checkpoint = newestCheckpoint(db);
  ChainWalker walker(checkpoint);
  db.forEachRow(std::string(kEventColumns) + " ORDER BY seq", [&](const soci::row& row) {
    if (!walker.broken()) walker.add(Link::fromRow(row));
  });
  walker.finish(appended_through, checkpoint);
  return walker.report(checkpoint);
}

std::string joinRules(const std::set<std::string>& rules) {
  std::string out;
  for (const std::string& rule : rules) out += (out.empty() ? "" : ",") + rule;
  return out;
}

// Deletes the oldest events the policy no longer keeps (at most policy.batch), after checking
// that they, and the first event kept, link up from the newest checkpoint, and records the
// new checkpoint; nullopt when no event was old enough.
Result<std::optional<AuditCheckpoint>> pruneEvents(Tx& tx, const RetentionPolicy& policy, TimePoint now) {
  Db& db = tx.db();
  const std::optional<AuditCheckpoint> from = newestCheckpoint(db);
  const int64_t newest = readChainTail(db).seq;
  long long oldest = 0;
  soci::indicator none = soci::i_null;
  db.run("SELECT MIN(seq) FROM events", soci::into(oldest, none));
  const bool over_count =
      policy.events_max_count > 0 && none != soci::i_null && newest - oldest + 1 > policy.events_max_count;
  // Over the limit, leave room for the audit.pruned event this prune appends, so the count
  // ends at the limit and the next round has nothing to do.
  const int64_t count_bound = over_count ? newest - (policy.events_max_count - 1) : 0;
  const std::string cutoff =
      policy.events_max_age_days > 0 ? formatTimestamp(now - std::chrono::hours(24) * policy.events_max_age_days) : "";

  ChainWalker walker(from);
  std::set<std::string> rules;
  std::optional<Link> last_pruned;
  int64_t taken = 0;
  bool in_prefix = true;
  const long long limit = policy.batch + 1;  // one more: the first kept event must join too
  db.forEachRow(
      std::string(kEventColumns) + " ORDER BY seq LIMIT :limit",
      [&](const soci::row& row) {
        Link e = Link::fromRow(row);
        if (!walker.add(e) || !in_prefix) return;
        const bool by_count = e.seq <= count_bound;
        const bool by_age = !cutoff.empty() && e.at < cutoff;
        if ((!by_count && !by_age) || taken == policy.batch) {
          in_prefix = false;  // later rows are only checked
          return;
        }
        if (by_count) rules.insert("events_max_count");
        if (by_age) rules.insert("events_max_age_days");
        last_pruned = std::move(e);
        ++taken;
      },
      soci::use(limit));
  if (walker.broken()) {
    return Status::internal("prune refused, nothing deleted: " + walker.problem() + "; run `tide audit verify`");
  }
  if (!last_pruned) return std::optional<AuditCheckpoint>();
  const long long through = last_pruned->seq;
  AuditCheckpoint checkpoint{0,
                             last_pruned->seq,
                             last_pruned->hash,
                             tx.now(),
                             tx.actor(),
                             joinRules(rules),
                             db.update("DELETE FROM events WHERE seq <= :through", soci::use(through))};
  long long id = 0;
  const long long pruned = checkpoint.events_pruned;
  db.run(
      "INSERT INTO audit_checkpoints (through_seq, through_hash, at, actor, rule, events_pruned) "
      "VALUES (:seq, :hash, :at, :actor, :rule, :n) RETURNING id",
      soci::use(through), soci::use(checkpoint.through_hash), soci::use(checkpoint.at), soci::use(checkpoint.actor),
      soci::use(checkpoint.rule), soci::use(pruned), soci::into(id));
  checkpoint.id = id;
  const long long history = kCheckpointHistory;
  db.update(
      "DELETE FROM audit_checkpoints WHERE id < (SELECT id FROM audit_checkpoints ORDER BY id DESC "
      "LIMIT 1 OFFSET :history)",
      soci::use(history));
  return std::optional<AuditCheckpoint>(std::move(checkpoint));
}

// Deletes at most policy.batch rows of `table` by `select_ids` (a SELECT of their ids, in id
// order, bound to :cutoff, decisions_max_age_days ago, and :batch, and to whatever else
// `values` binds); 0 when the rule is off.
int64_t pruneByDecisionsAge(Db& db, const RetentionPolicy& policy, TimePoint now, const std::string& table,
                            const std::string& select_ids, Bindings values) {
  if (policy.decisions_max_age_days <= 0) return 0;
  values.set("cutoff", formatTimestamp(now - std::chrono::hours(24) * policy.decisions_max_age_days));
  values.set("batch", static_cast<long long>(policy.batch));
  return db.update("DELETE FROM " + table + " WHERE id IN (" + select_ids + " LIMIT :batch)", values);
}

int64_t pruneDecisions(Db& db, const RetentionPolicy& policy, TimePoint now) {
  Bindings values;
  const std::string unfinished = boundStates(values, "unfinished", unfinishedOperationStates());
  return pruneByDecisionsAge(
      db, policy, now, "decisions",
      "SELECT d.id FROM decisions d WHERE d.at < :cutoff AND NOT EXISTS (SELECT 1 FROM operations o WHERE o.id = "
      "d.operation_id AND o.state IN " +
          unfinished + ") ORDER BY d.id",
      values);
}

// The approvals people gave an operation go together, once the operation has been finished
// for decisions_max_age_days (by then every decision of it is older than that and pruned
// too), or when it is gone: none outlives its operation's record, none of an operation that
// is unfinished or finished recently goes.
int64_t pruneApprovals(Db& db, const RetentionPolicy& policy, TimePoint now) {
  Bindings values;
  const std::string unfinished = boundStates(values, "unfinished", unfinishedOperationStates());
  return pruneByDecisionsAge(
      db, policy, now, "operation_approvals",
      "SELECT a.id FROM operation_approvals a LEFT JOIN operations o ON o.id = a.operation_id WHERE o.id IS NULL OR "
      "(o.updated_at < :cutoff AND o.state NOT IN " +
          unfinished + ") ORDER BY a.id",
      values);
}

int64_t pruneScriptVersions(Db& db, const RetentionPolicy& policy) {
  if (policy.script_versions_keep <= 0) return 0;
  const long long keep = policy.script_versions_keep, batch = policy.batch;
  // A file's newest row is what runs (or failed) now; its newest `active` row is the last
  // good version a restart falls back to: keeping the newest row of every status keeps both.
  const int64_t pruned = db.update(
      "DELETE FROM script_versions WHERE id IN (SELECT id FROM (SELECT id, "
      "ROW_NUMBER() OVER (PARTITION BY path ORDER BY id DESC) AS newest, "
      "ROW_NUMBER() OVER (PARTITION BY path, status ORDER BY id DESC) AS newest_of_status "
      "FROM script_versions) WHERE newest > :keep AND newest_of_status > 1 ORDER BY id LIMIT :batch)",
      soci::use(keep), soci::use(batch));
  // The texts kept for a restart's fallback go with the last row that names them.
  if (pruned > 0) {
    db.update("DELETE FROM script_texts WHERE sha256 NOT IN (SELECT sha256 FROM script_versions)");
  }
  return pruned;
}

}  // namespace

ChainTail readChainTail(Db& db) {
  long long seq = 0;
  std::string hash;
  if (db.run("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1", soci::into(seq), soci::into(hash))) {
    return {seq, hash};
  }
  if (auto checkpoint = newestCheckpoint(db)) return {checkpoint->through_seq, checkpoint->through_hash};
  return {};
}

Result<AuditReport> AuditRecords::verifyAudit() {
  // Read before the snapshot begins, so every event counted here is in it.
  const int64_t appended = lastEventSeq();
  return read("verify events", [&](Db& db) -> Result<AuditReport> { return walkChain(db, appended); });
}

Status AuditRecords::verifyEventChain() {
  TIDE_ASSIGN_OR_RETURN(AuditReport report, verifyAudit());
  if (report.ok) return Status::ok();
  return Status::internal("event chain: " + report.problem);
}

Result<PruneReport> AuditRecords::prune(const RetentionPolicy& policy, const std::string& actor) {
  if (!policy.enabled()) return PruneReport{};
  if (policy.batch < 1) return Status::invalidArgument("retention: batch must be at least 1");
  const TimePoint now = core_.clock_.now();
  return write("prune", actor, [&](Tx& tx) -> Result<PruneReport> {
    PruneReport report;
    if (policy.events_max_count > 0 || policy.events_max_age_days > 0) {
      TIDE_ASSIGN_OR_RETURN(report.checkpoint, pruneEvents(tx, policy, now));
      report.events = report.checkpoint ? report.checkpoint->events_pruned : 0;
    }
    report.decisions = pruneDecisions(tx.db(), policy, now);
    report.approvals = pruneApprovals(tx.db(), policy, now);
    report.script_versions = pruneScriptVersions(tx.db(), policy);
    if (report.total() == 0) return report;
    const std::optional<AuditCheckpoint> anchor = report.checkpoint ? report.checkpoint : newestCheckpoint(tx.db());
    tx.event("audit.pruned", "ledger",
             Json{{"events", report.events},
                  {"decisions", report.decisions},
                  {"script_versions", report.script_versions},
                  {"approvals", report.approvals},
                  {"rule", report.checkpoint ? report.checkpoint->rule : ""},
                  {"through_seq", anchor ? anchor->through_seq : 0},
                  {"through_hash", anchor ? anchor->through_hash : ""}});
    return report;
  });
}

Result<AuditReport> verifyLedgerAt(const std::string& url) {
  constexpr std::string_view kSqlite = "sqlite://";
  if (!url.starts_with(kSqlite) || Db::isInMemory(url)) {
    return Status::invalidArgument("database: offline verification reads a sqlite://PATH ledger, not '" + url + "'");
  }
  const std::string path = url.substr(kSqlite.size());
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return Status::notFound("no ledger at " + path);
  TIDE_ASSIGN_OR_RETURN(auto db, Db::open(url, Db::Role::kReader));
  return guarded("verify events", [&]() -> Result<AuditReport> { return walkChain(*db, 0); });
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

Result<Page<Event>> AuditRecords::listEvents(const ListOptions& options) {
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
      where.raw("kind LIKE '%.state'").in(db.dialect().jsonField("data", "to"), it->second);
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

int64_t AuditRecords::lastEventSeq() {
  std::lock_guard<std::mutex> lock(core_.events_mu_);
  return core_.last_seq_;
}

bool AuditRecords::waitForEvents(int64_t after, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(core_.events_mu_);
  return core_.events_cv_.wait_for(lock, timeout, [&] { return core_.last_seq_ > after; });
}

Status AuditRecords::appendEvent(const std::string& kind, const std::string& subject, const Json& data,
                                 const std::string& actor) {
  return write("append event", actor, [&](Tx& tx) -> Status {
    tx.event(kind, subject, data);
    return Status::ok();
  });
}

// --- scripts and decisions ---------------------------------------------------------------------

Result<ScriptVersion> AuditRecords::recordScriptVersion(const ScriptVersion& version) {
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

Result<std::vector<ScriptVersion>> AuditRecords::listScriptVersions(const std::string& path) {
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

Status AuditRecords::keepScriptText(const std::string& sha256, const std::string& text) {
  return write("keep script text", "scripts", [&](Tx& tx) -> Status {
    tx.db().run("INSERT INTO script_texts (sha256, text) VALUES (:s, :t) ON CONFLICT (sha256) DO NOTHING",
                soci::use(sha256), soci::use(text));
    return Status::ok();
  });
}

Result<std::optional<std::string>> AuditRecords::scriptText(const std::string& sha256) {
  return read("read script text", [&](Db& db) -> Result<std::optional<std::string>> {
    std::string text;
    if (!db.run("SELECT text FROM script_texts WHERE sha256 = :s", soci::use(sha256), soci::into(text))) {
      return std::optional<std::string>();
    }
    return std::optional<std::string>(std::move(text));
  });
}

// --- the control loop's halt (docs/architecture.md#observer): one row of control_halt while it
// is in force, so a restarted host stays halted until an admin resumes it.

namespace {

const char* const kHaltSelect = "SELECT kind, reason, details, since, actor FROM control_halt WHERE id = 1";

std::optional<ControlHalt> loadHalt(Db& db) {
  soci::row row;
  if (!db.run(kHaltSelect, soci::into(row))) return std::nullopt;
  return ControlHalt{rowString(row, 0), rowString(row, 1), rowJson(row, 2), rowString(row, 3), rowString(row, 4)};
}

}  // namespace

Result<std::optional<ControlHalt>> AuditRecords::controlHalt() {
  return read("read control halt", [](Db& db) -> Result<std::optional<ControlHalt>> { return loadHalt(db); });
}

Result<ControlHalt> AuditRecords::haltControlLoop(const std::string& alarm_kind, const std::string& reason,
                                                  const Json& details, const std::string& actor) {
  return write("halt control loop", actor, [&](Tx& tx) -> Result<ControlHalt> {
    if (auto in_force = loadHalt(tx.db())) return *in_force;
    ControlHalt halt{alarm_kind, reason, details.is_object() ? details : Json::object(), tx.now(), actor};
    const std::string details_text = halt.details.dump();
    tx.db().update(
        "INSERT INTO control_halt (id, kind, reason, details, since, actor) "
        "VALUES (1, :kind, :reason, :details, :since, :actor)",
        soci::use(halt.kind), soci::use(halt.reason), soci::use(details_text), soci::use(halt.since),
        soci::use(halt.by));
    Json data = halt.details;
    data["message"] = reason;
    tx.event(alarm_kind, "engine", data);
    return halt;
  });
}

Result<ControlHalt> AuditRecords::resumeControlLoop(const std::string& actor) {
  return write("resume control loop", actor, [&](Tx& tx) -> Result<ControlHalt> {
    auto in_force = loadHalt(tx.db());
    if (!in_force) return Status::conflict("the control loop is not halted");
    tx.db().update("DELETE FROM control_halt WHERE id = 1");
    tx.event("control.resumed", "engine", Json{{"ended", *in_force}});
    return *in_force;
  });
}

}  // namespace tide::ledger
