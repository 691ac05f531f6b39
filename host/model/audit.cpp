#include "host/model/audit.h"

namespace tide::model {

void to_json(Json& j, const AuditCheckpoint& v) {
  j = Json{{"id", v.id},
           {"through_seq", v.through_seq},
           {"through_hash", v.through_hash},
           {"at", v.at},
           {"actor", v.actor},
           {"rule", v.rule},
           {"events_pruned", v.events_pruned}};
}

void to_json(Json& j, const AuditReport& v) {
  j = Json{{"ok", v.ok},
           {"first_seq", v.first_seq},
           {"last_seq", v.last_seq},
           {"events", v.events},
           {"head_hash", v.head_hash},
           {"checkpoint", v.checkpoint ? Json(*v.checkpoint) : Json(nullptr)}};
  if (!v.ok) j["broken"] = Json{{"seq", v.broken_seq}, {"problem", v.problem}};
}

}  // namespace tide::model
