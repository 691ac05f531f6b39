#pragma once
// Every route handler, by area. Each area lives in routes_<area>.cpp; the route table
// (routes.cpp) is the only caller. See handler.h for the calling convention.

#include <type_traits>

#include "host/api/handler.h"

namespace tide::api {

// The function type every handler has: Result<ApiResponse>(ApiContext&, const ApiRequest&).
using HandlerFunction = std::remove_pointer_t<Handler>;

namespace system {
HandlerFunction healthz, readyz, metrics, openapi;
}
namespace manifests {
HandlerFunction apply;
}
namespace capabilities {
HandlerFunction create, list, get, remove;
}
namespace clusters {
HandlerFunction create, list, get, remove, activate, deactivate;
}
namespace nodes {
HandlerFunction create, list, get, remove, cordon, uncordon, drain;
}
namespace plans {
HandlerFunction create, list, show, update, remove, scaleToZero;
}
namespace deployments {
HandlerFunction create, list, get, cancel, promote, abort, pause, resume, rollback, retry;
}
namespace instances {
HandlerFunction list, get, operate, logs;
}
namespace operations {
HandlerFunction list, get, approve, reject, cancel;
}
namespace events {
HandlerFunction list, stream;
}
namespace audit {
HandlerFunction verify, doctor;
}
namespace control {
HandlerFunction show, resume;
}
namespace scripts {
HandlerFunction list, reload, evaluate;
}
namespace status {
HandlerFunction show;
}
namespace tokens {
HandlerFunction create, list, revoke;
}
namespace agents {
HandlerFunction desired, report, logs;
}
namespace whoami {
HandlerFunction show;
}
namespace console {
HandlerFunction index, asset;
}

}  // namespace tide::api
