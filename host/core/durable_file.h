#pragma once
// Files that survive a crash whole or not at all: temp file + fsync + rename + fsync of the
// directory. The process driver's records and the agent hub's documents are written so.

#include <filesystem>
#include <functional>
#include <string_view>

#include "host/core/status.h"

namespace tide {

// Flushes one open descriptor to disk (fsync by default); tests inject failures.
using SyncFn = std::function<int(int fd)>;

// Makes a rename or removal in `dir` durable: fsync of the directory itself.
Status syncDir(const std::filesystem::path& dir, const SyncFn& sync);

// Replaces `path` with `text` so a reader sees the old or the new file, never half, and a
// file reported written survives a crash. On any error the temp file is removed and the old
// file (if any) stays; after a failed directory sync the new file is in place but may not
// survive a crash, and the error says so. An empty `sync` means fsync.
Status writeFileDurably(const std::filesystem::path& path, std::string_view text, const SyncFn& sync = nullptr);

}  // namespace tide
