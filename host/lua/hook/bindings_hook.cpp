#include "host/lua/hook/bindings_hook.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <string>
#include <system_error>

#include "host/lua/runtime/bindings_base.h"
#include "host/lua/runtime/bindings_readonly.h"
#include "host/lua/runtime/bindings_tide.h"
#include "host/lua/runtime/guard.h"
#include "host/lua/runtime/lua_state.h"

namespace tide::lua {
namespace {

char kOutputDirKey;  // LuaState context: the std::filesystem::path emit_file writes under

std::atomic<uint64_t> temp_counter{0};

int ctxNow(lua_State* L) {
  pushTimeTable(L, LuaState::from(L).clock().now());
  lua_getfield(L, -1, "epoch");
  lua_setfield(L, -2, "unix");
  return 1;
}

// Writes `text` to `path` through a temporary sibling and a rename, so readers see the
// old content or the new one, never a partial file. "" or the error.
std::string writeAtomically(const std::filesystem::path& dir, const std::string& name, std::string_view text) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return "cannot create " + dir.string() + ": " + ec.message();
  const std::filesystem::path target = dir / name;
  const std::filesystem::path temp =
      dir / ("." + name + ".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(temp_counter.fetch_add(1)));
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return "cannot write " + temp.string() + ": " + std::strerror(errno);
  std::string error;
  size_t written = 0;
  while (written < text.size() && error.empty()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0)
      error = "cannot write " + temp.string() + ": " + std::strerror(errno);
    else
      written += static_cast<size_t>(n);
  }
  if (error.empty() && ::fsync(fd) != 0) error = "cannot sync " + temp.string() + ": " + std::strerror(errno);
  ::close(fd);
  if (error.empty() && ::rename(temp.c_str(), target.c_str()) != 0) {
    error = "cannot rename to " + target.string() + ": " + std::strerror(errno);
  }
  if (!error.empty()) ::unlink(temp.c_str());
  return error;
}

int ctxEmitFile(lua_State* L) {
  size_t name_len = 0;
  const char* name = luaL_checklstring(L, 1, &name_len);
  if (!validEmitFileName(std::string_view(name, name_len))) {
    return luaL_error(L, "ctx.emit_file: the name must be 1 to 100 of A-Z a-z 0-9 . _ - (not '.' or '..')");
  }
  size_t text_len = 0;
  const char* text = luaL_checklstring(L, 2, &text_len);
  if (text_len > kMaxEmitFileBytes) {
    return luaL_error(L, "ctx.emit_file: text is %d bytes, more than the limit of %d", static_cast<int>(text_len),
                      static_cast<int>(kMaxEmitFileBytes));
  }
  LuaState& state = LuaState::from(L);
  const auto* dir = static_cast<const std::filesystem::path*>(state.context(&kOutputDirKey));
  if (!dir || dir->empty()) return luaL_error(L, "ctx.emit_file: no hooks output directory is configured");
  const std::string error = state.hostWork(
      L, [&] { return writeAtomically(*dir, std::string(name, name_len), std::string_view(text, text_len)); });
  if (!error.empty()) return luaL_error(L, "ctx.emit_file: %s", error.c_str());
  return 0;
}

void setFunction(lua_State* L, const char* name, lua_CFunction fn) {
  lua_pushcfunction(L, fn);
  lua_setfield(L, -2, name);
}

}  // namespace

bool validEmitFileName(std::string_view name) {
  if (name.empty() || name.size() > 100 || name == "." || name == "..") return false;
  for (char c : name) {
    const bool ok =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

void pushHookContext(lua_State* L) {
  lua_createtable(L, 0, 3);
  setFunction(L, "now", guarded<ctxNow>);
  setFunction(L, "emit_file", guarded<ctxEmitFile>);
  pushLogTable(L);
  lua_setfield(L, -2, "log");
  pushReadOnly(L, -1);
  lua_replace(L, -2);
}

void setHookOutputDir(LuaState& state, const std::filesystem::path* dir) {
  state.setContext(&kOutputDirKey, const_cast<std::filesystem::path*>(dir));
}

}  // namespace tide::lua
