// `tide audit verify`: proves the event hash chain from the newest retention checkpoint to the
// newest event (docs/architecture.md#retention-and-audit), by asking the host
// (GET /v1/audit/verify) or, with --data-dir or --database, by reading the SQLite ledger file
// itself. Exit 1 and the first broken link when the chain does not hold.

#include <memory>

#include "host/cli/commands.h"
#include "host/ledger/ledger.h"

namespace tide::cli {
namespace {

struct VerifyFlags {
  std::string data_dir;
  std::string database;
};

// What the report says is broken; "" when it does not say.
std::string problemOf(const Json& report) {
  const Json broken = report.value("broken", Json::object());
  return broken.is_object() ? broken.value("problem", "") : "";
}

void printAuditReport(std::ostream& out, const Json& report) {
  const bool ok = report.value("ok", false);
  out << "audit: " << (ok ? "OK" : "BROKEN") << "\n";
  if (!ok) out << "first broken link: " << problemOf(report) << "\n";
  const int64_t events = report.value("events", int64_t{0});
  out << (ok ? "checked:    " : "intact:     ");
  if (events == 0) {
    out << "no events\n";
  } else {
    out << "events seq " << report.value("first_seq", int64_t{0}) << ".." << report.value("last_seq", int64_t{0})
        << " (" << events << ")" << (ok ? "" : ", before the broken link") << "\n";
  }
  const Json checkpoint = report.value("checkpoint", Json());
  out << "checkpoint: ";
  if (checkpoint.is_object()) {
    out << "through seq " << checkpoint.value("through_seq", int64_t{0}) << " (pruned at " << checkpoint.value("at", "")
        << " by " << checkpoint.value("actor", "") << ", " << checkpoint.value("rule", "") << ")\n";
  } else {
    out << "none (nothing was pruned; checked from the first event)\n";
  }
  // The head is worth keeping elsewhere only when the chain up to it holds.
  if (ok && events > 0) {
    out << "head:       seq " << report.value("last_seq", int64_t{0}) << " " << report.value("head_hash", "") << "\n";
  }
}

Result<Json> offlineReport(const VerifyFlags& flags) {
  const std::string url = !flags.database.empty() ? flags.database : "sqlite://" + flags.data_dir + "/tide.db";
  TIDE_ASSIGN_OR_RETURN(model::AuditReport report, ledger::verifyLedgerAt(url));
  return Json(report);
}

}  // namespace

void addAuditCommands(CLI::App& app, Verbs& verbs) {
  CLI::App* audit = addNoun(app, "audit", "The ledger's audit trail: prove the event hash chain");
  auto flags = std::make_shared<VerifyFlags>();
  CLI::App* verify = verbs.add(
      *audit, "verify", "Verify the event hash chain; names the first broken link and exits 1 if there is one",
      [flags](Session& session) -> Status {
        const bool offline = !flags->data_dir.empty() || !flags->database.empty();
        TIDE_ASSIGN_OR_RETURN(Json report, offline ? offlineReport(*flags) : session.client.get("/v1/audit/verify"));
        session.print(report, printAuditReport);
        if (report.value("ok", false)) return Status::ok();
        return Status::internal("the event chain is broken: " + problemOf(report));
      });
  verify->add_option("--data-dir", flags->data_dir,
                     "read <DIR>/tide.db directly instead of asking the host (read-only; safe beside a running host)");
  verify
      ->add_option("--database", flags->database, "read this sqlite://PATH ledger directly instead of asking the host")
      ->excludes("--data-dir");
}

}  // namespace tide::cli
