// The control loop's halt (docs/architecture.md#observer): one row of control_halt while it
// is in force, so a restarted host stays halted until an admin resumes it.

#include "host/ledger/ledger.h"
#include "host/ledger/ledger_internal.h"

namespace tide::ledger {
namespace {

const char* const kHaltSelect = "SELECT kind, reason, details, since, actor FROM control_halt WHERE id = 1";

std::optional<ControlHalt> loadHalt(Db& db) {
  soci::row row;
  if (!db.run(kHaltSelect, soci::into(row))) return std::nullopt;
  return ControlHalt{rowString(row, 0), rowString(row, 1), rowJson(row, 2), rowString(row, 3), rowString(row, 4)};
}

}  // namespace

Result<std::optional<ControlHalt>> Ledger::controlHalt() {
  return read("read control halt", [](Db& db) -> Result<std::optional<ControlHalt>> { return loadHalt(db); });
}

Result<ControlHalt> Ledger::haltControlLoop(const std::string& alarm_kind, const std::string& reason,
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

Result<ControlHalt> Ledger::resumeControlLoop(const std::string& actor) {
  return write("resume control loop", actor, [&](Tx& tx) -> Result<ControlHalt> {
    auto in_force = loadHalt(tx.db());
    if (!in_force) return Status::conflict("the control loop is not halted");
    tx.db().update("DELETE FROM control_halt WHERE id = 1");
    tx.event("control.resumed", "engine", Json{{"ended", *in_force}});
    return *in_force;
  });
}

}  // namespace tide::ledger
