#pragma once
// Private to host/ledger/: the one connection and transaction machinery every repository
// (InventoryRecords, PlanRecords, ...) writes and reads through — the writer connection and
// its group commit, the reader connections, the event chain's tail — and the transaction
// type they share. Nothing outside host/ledger/ (and its tests) includes this.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "host/core/clock.h"
#include "host/core/status.h"
#include "host/ledger/db.h"
#include "host/ledger/ledger.h"

namespace tide::ledger {

// The newest event's seq and hash: where the next event chains on.
struct ChainTail {
  int64_t seq = 0;
  std::string hash;
};

class LedgerCore {
 public:
  LedgerCore(std::unique_ptr<Db> db, const Clock& clock);
  ~LedgerCore();
  LedgerCore(const LedgerCore&) = delete;
  LedgerCore& operator=(const LedgerCore&) = delete;

  // Runs `fn(Tx&)` as one write: a savepoint in the open group transaction, committed with
  // the group (Ledger's thread-safety note). Returns once the group is durable, unless this
  // thread is in a Batch.
  template <class Fn>
  auto write(const char* what, const std::string& actor, Fn&& fn) -> decltype(fn(std::declval<Tx&>()));
  // Runs `fn(Db&)` on a reader connection in one read transaction (or on the writer, under
  // the lock, for an in-memory ledger or inside a Batch; on the open Snapshot's reader).
  template <class Fn>
  auto read(const char* what, Fn&& fn) -> decltype(fn(std::declval<Db&>()));

  std::string now() const;

  // Group commit steps of write(). REQUIRES: mu_ is held (through `lock`).
  uint64_t joinGroup();
  // Commits the group now or leaves it for a later writer (and waits for that, unless
  // this thread is in a Batch); the status of the group's commit.
  Status finishWrite(std::unique_lock<std::mutex>& lock, uint64_t group);
  Status commitGroup();
  void recordChange(const char* table, int64_t id);  // the writer connection's update hook
  // Whether this thread holds an open Ledger::Rehearsal of this ledger: write() then rolls
  // every write back.
  bool rehearsing() const;

  // Reader connections (empty for ":memory:": reads then share the writer under mu_).
  Db* acquireReader();
  void releaseReader(Db* reader);
  bool inOpenBatch() const;
  Db* snapshotReader() const;  // the reader of this thread's open Snapshot, or null

  std::unique_ptr<Db> db_;
  const Clock& clock_;
  int schema_version_ = 0;
  std::mutex mu_;  // serializes every use of db_
  std::vector<std::unique_ptr<Db>> readers_;
  std::mutex readers_mu_;
  std::condition_variable readers_cv_;
  std::vector<Db*> free_readers_;  // REQUIRES: readers_mu_ is held

  // The open group. REQUIRES: mu_ is held.
  bool group_open_ = false;
  uint64_t group_ = 0;            // number of the newest group
  uint64_t committed_group_ = 0;  // every group up to this one has ended
  int group_writes_ = 0;
  int group_waiters_ = 0;
  int64_t group_seq_ = 0;
  // On the ledger's Clock, so a test's FakeClock decides when a group is old (kMaxGroupAge).
  TimePoint group_opened_;
  std::vector<RowChange> group_changes_;
  std::map<uint64_t, Status> failed_groups_;  // the newest few
  std::condition_variable group_cv_;
  std::atomic<int> queued_writers_{0};
  WriteStats stats_;  // REQUIRES: stats_mu_ is held
  mutable std::mutex stats_mu_;
  std::map<int, ChangeSink> sinks_;  // REQUIRES: mu_ is held
  int next_sink_ = 1;
  bool changes_tracked_ = false;

  // The newest event's (seq, hash) as the committed writes left it, so that a write need
  // not read it back: set by each write that appends events, dropped whenever a write or
  // a group rolls back (the next write reads it from the database). This Ledger is the
  // database's only writer; were another to append, the next insert would fail on seq's
  // key and roll back, dropping it. REQUIRES: mu_ is held.
  std::optional<ChainTail> chain_tail_;

  std::mutex events_mu_;
  std::condition_variable events_cv_;
  int64_t last_seq_ = 0;  // REQUIRES: events_mu_ is held
};

// One write: a savepoint inside the open group transaction (LedgerCore::write). Rolled back
// to its start on destruction unless commit() ran.
// REQUIRES: LedgerCore::mu_ is held for its whole life.
class Tx {
 public:
  Tx(LedgerCore& core, std::string actor);
  ~Tx();
  Tx(const Tx&) = delete;
  Tx& operator=(const Tx&) = delete;

  Db& db() { return db_; }
  const std::string& now() const { return now_; }
  const std::string& actor() const { return actor_; }

  // Appends a hash-chained event inside this transaction.
  void event(const std::string& kind, const std::string& subject, const Json& data);
  void commit();
  int64_t lastSeq() const { return appended_ ? tail_.seq : 0; }  // of the last event appended here

 private:
  LedgerCore& core_;
  Db& db_;
  std::string actor_;
  std::string now_;
  bool committed_ = false;
  bool appended_ = false;  // tail_ is this write's newest event
  ChainTail tail_;
};

template <class Fn>
auto LedgerCore::write(const char* what, const std::string& actor, Fn&& fn) -> decltype(fn(std::declval<Tx&>())) {
  using R = decltype(fn(std::declval<Tx&>()));
  queued_writers_.fetch_add(1);
  std::unique_lock<std::mutex> lock(mu_);
  queued_writers_.fetch_sub(1);
  uint64_t group = 0;
  R result = guarded(what, [&]() -> R {
    group = joinGroup();
    Tx tx(*this, actor);
    R r = fn(tx);
    if (r.isOk() && !rehearsing()) {
      tx.commit();
      group_seq_ = std::max(group_seq_, tx.lastSeq());
    }
    return r;
  });
  if (group == 0) return result;  // could not even begin
  Status durable = finishWrite(lock, group);
  if (!durable.isOk() && result.isOk()) return durable;
  return result;
}

template <class Fn>
auto LedgerCore::read(const char* what, Fn&& fn) -> decltype(fn(std::declval<Db&>())) {
  if (readers_.empty() || inOpenBatch()) {
    std::lock_guard<std::mutex> lock(mu_);
    return guarded(what, [&] { return fn(*db_); });
  }
  if (Db* pinned = snapshotReader()) return guarded(what, [&] { return fn(*pinned); });
  Db* reader = acquireReader();
  // One read transaction, so that a read of several statements (a slice of instances with
  // their runtime instances and operations) sees one moment, not one per statement.
  auto result = guarded(what, [&] {
    soci::transaction snapshot(reader->session());
    auto r = fn(*reader);
    snapshot.commit();
    return r;
  });
  releaseReader(reader);
  return result;
}

template <class Fn>
auto Repository::write(const char* what, const std::string& actor, Fn&& fn) -> decltype(fn(std::declval<Tx&>())) {
  return core_.write(what, actor, std::forward<Fn>(fn));
}

template <class Fn>
auto Repository::read(const char* what, Fn&& fn) -> decltype(fn(std::declval<Db&>())) {
  return core_.read(what, std::forward<Fn>(fn));
}

}  // namespace tide::ledger
