#include "host/ledger/ledger_core.h"

#include <algorithm>

#include "host/core/failpoint.h"
#include "host/ledger/ledger_internal.h"

namespace tide::ledger {

// --- Tx ----------------------------------------------------------------------------------

Tx::Tx(LedgerCore& core, std::string actor) : core_(core), db_(*core.db_), actor_(std::move(actor)), now_(core.now()) {
  db_.run("SAVEPOINT tide_write");
}

Tx::~Tx() {
  if (committed_) return;
  core_.chain_tail_.reset();
  try {
    db_.run("ROLLBACK TO tide_write");
    db_.run("RELEASE tide_write");
  } catch (...) {
    // The database already ended the whole transaction; the group's commit reports it.
  }
}

void Tx::event(const std::string& kind, const std::string& subject, const Json& data) {
  if (!appended_) tail_ = core_.chain_tail_ ? *core_.chain_tail_ : readChainTail(db_);
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

void Tx::commit() {
  db_.run("RELEASE tide_write");
  committed_ = true;
  if (appended_) core_.chain_tail_ = tail_;
}

// --- LedgerCore --------------------------------------------------------------------------------

LedgerCore::LedgerCore(std::unique_ptr<Db> db, const Clock& clock) : db_(std::move(db)), clock_(clock) {}

LedgerCore::~LedgerCore() {
  std::lock_guard<std::mutex> lock(mu_);
  // A destructor has nobody to tell: a caller that must know commits a Batch itself, and a
  // group lost here is rolled back as a crash would leave it.
  if (group_open_) (void)commitGroup();
}

std::string LedgerCore::now() const { return formatTimestamp(clock_.now()); }

std::string Repository::now() const { return core_.now(); }

// --- group commit ------------------------------------------------------------------------------

namespace {

// The ledger whose Batch is open on this thread, if any.
thread_local LedgerCore* t_batch_ledger = nullptr;

}  // namespace

bool LedgerCore::inOpenBatch() const { return t_batch_ledger == this; }

uint64_t LedgerCore::joinGroup() {
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

Status LedgerCore::finishWrite(std::unique_lock<std::mutex>& lock, uint64_t group) {
  auto statusOf = [this](uint64_t g) {
    auto it = failed_groups_.find(g);
    return it == failed_groups_.end() ? Status::ok() : it->second;
  };
  if (!group_open_ || group_ != group) return statusOf(group);
  const bool batch = inOpenBatch();
  const bool full = group_writes_ >= Ledger::kMaxGroupWrites || clock_.now() - group_opened_ >= Ledger::kMaxGroupAge;
  // Commit when nobody else is about to join, when the group is as big or old as it may
  // get, or when a batch holds writers of other threads waiting.
  if (full || (batch && group_waiters_ > 0) || (!batch && queued_writers_.load() == 0)) return commitGroup();
  if (batch) return Status::ok();
  ++group_waiters_;
  group_cv_.wait(lock, [&] { return committed_group_ >= group; });
  return statusOf(group);
}

Status LedgerCore::commitGroup() {
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

void LedgerCore::recordChange(const char* table, int64_t id) { group_changes_.push_back({table, id}); }

namespace {
thread_local const LedgerCore* t_rehearsal_ledger = nullptr;
}  // namespace

bool LedgerCore::rehearsing() const { return t_rehearsal_ledger == this; }

Ledger::Rehearsal::Rehearsal(Ledger& ledger) {
  if (t_rehearsal_ledger != nullptr) return;
  outermost_ = true;
  t_rehearsal_ledger = ledger.core_.get();
}

Ledger::Rehearsal::~Rehearsal() {
  if (outermost_) t_rehearsal_ledger = nullptr;
}

Ledger::Batch::Batch(Ledger& ledger) : core_(*ledger.core_) {
  if (t_batch_ledger != nullptr) return;
  outermost_ = true;
  t_batch_ledger = &core_;
  std::lock_guard<std::mutex> lock(core_.mu_);
  first_group_ = core_.group_open_ ? core_.group_ : core_.group_ + 1;
}

Ledger::Batch::~Batch() {
  if (!outermost_) return;
  (void)commit();  // a caller that must know whether the batch reached the disk calls commit() itself
  t_batch_ledger = nullptr;
}

Status Ledger::Batch::commit() {
  if (!outermost_) return Status::ok();
  std::lock_guard<std::mutex> lock(core_.mu_);
  Status status = core_.group_open_ ? core_.commitGroup() : Status::ok();
  if (!status.isOk()) return status;
  auto failed = core_.failed_groups_.lower_bound(first_group_);
  if (failed != core_.failed_groups_.end()) return failed->second;
  first_group_ = core_.group_ + 1;
  return Status::ok();
}

namespace {
thread_local const LedgerCore* t_snapshot_ledger = nullptr;
thread_local Db* t_snapshot_reader = nullptr;
}  // namespace

Ledger::Snapshot::Snapshot(Ledger& ledger) : core_(*ledger.core_) {
  if (t_snapshot_reader != nullptr || core_.readers_.empty() || core_.inOpenBatch()) return;
  Db* reader = core_.acquireReader();
  try {
    reader->session().begin();
  } catch (const std::exception&) {
    core_.releaseReader(reader);  // its reads go one snapshot each, as without it
    return;
  }
  reader_ = reader;
  t_snapshot_ledger = &core_;
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
    } catch (const std::exception&) {}
  }
  core_.releaseReader(reader_);
}

Db* LedgerCore::snapshotReader() const { return t_snapshot_ledger == this ? t_snapshot_reader : nullptr; }

// --- readers -----------------------------------------------------------------------------------

Db* LedgerCore::acquireReader() {
  std::unique_lock<std::mutex> lock(readers_mu_);
  readers_cv_.wait(lock, [this] { return !free_readers_.empty(); });
  Db* reader = free_readers_.back();
  free_readers_.pop_back();
  return reader;
}

void LedgerCore::releaseReader(Db* reader) {
  {
    std::lock_guard<std::mutex> lock(readers_mu_);
    free_readers_.push_back(reader);
  }
  readers_cv_.notify_one();
}

}  // namespace tide::ledger
