// Operations, the approvals people give them and the decisions policies made of them
// (docs/architecture.md#operations).

#include "host/ledger/operation_records.h"

#include "host/ledger/ledger_internal.h"

namespace tide::ledger {

// --- policy decisions --------------------------------------------------------------------------

Status OperationRecords::recordDecisions(const std::vector<Decision>& decisions) {
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

Result<std::vector<Decision>> OperationRecords::listDecisions(int64_t operation_id) {
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

}  // namespace tide::ledger
