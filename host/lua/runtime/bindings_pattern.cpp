#include "host/lua/runtime/bindings_pattern.h"

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "host/lua/runtime/bindings_base.h"
#include "host/lua/runtime/guard.h"
#include "host/lua/runtime/lua_state.h"

namespace tide::lua {
namespace {

constexpr int kMaxCaptures = 32;
constexpr ptrdiff_t kCaptureOpen = -1;      // "(" seen, ")" not yet
constexpr ptrdiff_t kCapturePosition = -2;  // "()": captures a position
constexpr uint32_t kStepsPerCheck = 4096;   // about 10 µs of matching between deadline checks
// A plain search over at least this many bytes checks the deadline after it, so a loop of
// them over a long subject cannot run on between two count hooks.
constexpr size_t kPlainBytesPerCheck = 64 * 1024;
constexpr char kSpecials[] = "^$*+?.([%-";

unsigned char byteAt(const char* p) { return static_cast<unsigned char>(*p); }

// One match attempt's state. Errors (a malformed pattern, a limit) are raised as Lua
// errors through `L`.
class Matcher {
 public:
  Matcher(lua_State* L, const char* subject, size_t subject_len, const char* pattern, size_t pattern_len)
      : L_(L), state_(LuaState::from(L)), src_(subject), src_end_(subject + subject_len), p_end_(pattern + pattern_len) {}

  const char* subjectBegin() const { return src_; }
  const char* subjectEnd() const { return src_end_; }

  // The end of a match of `p` starting at `s`, or null.
  const char* matchAt(const char* s, const char* p) {
    level_ = 0;
    depth_ = 0;
    return match(s, p);
  }

  // Counts one unit of work; every kStepsPerCheck units the deadline is checked.
  void step(uint32_t units = 1) {
    steps_ += units;
    if (steps_ >= kStepsPerCheck) {
      steps_ = 0;
      state_.checkLimits(L_);
    }
  }

  // Pushes capture `i` of the match [s, e) (the whole match for i == 0 without captures).
  void pushCapture(int i, const char* s, const char* e) {
    if (i >= level_) {
      if (i != 0) luaL_error(L_, "invalid capture index %%%d", i + 1);
      lua_pushlstring(L_, s, static_cast<size_t>(e - s));
      return;
    }
    const ptrdiff_t len = captures_[i].len;
    if (len == kCaptureOpen) luaL_error(L_, "unfinished capture");
    if (len == kCapturePosition) {
      lua_pushnumber(L_, static_cast<lua_Number>(captures_[i].init - src_ + 1));
    } else {
      lua_pushlstring(L_, captures_[i].init, static_cast<size_t>(len));
    }
  }

  // Pushes every capture (or the whole match [s, e) when there are none and s is set);
  // returns how many.
  int pushCaptures(const char* s, const char* e) {
    const int n = (level_ == 0 && s) ? 1 : level_;
    luaL_checkstack(L_, n, "too many captures");
    for (int i = 0; i < n; ++i) pushCapture(i, s, e);
    return n;
  }

 private:
  const char* match(const char* s, const char* p) {
    if (++depth_ > kMaxPatternDepth) {
      luaL_error(L_, "pattern too complex (nested deeper than %d)", kMaxPatternDepth);
    }
    const char* result = matchHere(s, p);
    --depth_;
    return result;
  }

  const char* matchHere(const char* s, const char* p) {
    for (;;) {
      step();
      if (p == p_end_) return s;
      if (*p == '(') {
        if (p + 1 < p_end_ && p[1] == ')') return startCapture(s, p + 2, kCapturePosition);
        return startCapture(s, p + 1, kCaptureOpen);
      }
      if (*p == ')') return endCapture(s, p + 1);
      if (*p == '$' && p + 1 == p_end_) return s == src_end_ ? s : nullptr;
      if (*p == '%' && p + 1 < p_end_) {
        if (p[1] == 'b') {
          s = matchBalance(s, p + 2);
          if (!s) return nullptr;
          p += 4;
          continue;
        }
        if (p[1] == 'f') {
          p += 2;
          if (p == p_end_ || *p != '[') luaL_error(L_, "missing '[' after '%%f' in pattern");
          const char* class_end = classEnd(p);
          const unsigned char before = s == src_ ? '\0' : byteAt(s - 1);
          const unsigned char at = s == src_end_ ? '\0' : byteAt(s);
          if (matchBracket(before, p, class_end - 1) || !matchBracket(at, p, class_end - 1)) return nullptr;
          p = class_end;
          continue;
        }
        if (std::isdigit(byteAt(p + 1))) {
          s = matchBackReference(s, p[1]);
          if (!s) return nullptr;
          p += 2;
          continue;
        }
      }
      const char* class_end = classEnd(p);
      const bool matched = singleMatch(s, p, class_end);
      if (class_end < p_end_) {
        switch (*class_end) {
          case '?':
            if (matched) {
              if (const char* r = match(s + 1, class_end + 1)) return r;
            }
            p = class_end + 1;
            continue;
          case '*': return maxExpand(s, p, class_end);
          case '+': return matched ? maxExpand(s + 1, p, class_end) : nullptr;
          case '-': return minExpand(s, p, class_end);
          default: break;
        }
      }
      if (!matched) return nullptr;
      ++s;
      p = class_end;
    }
  }

  // The end of the single-character class starting at p.
  const char* classEnd(const char* p) {
    if (*p == '%') {
      if (p + 1 == p_end_) luaL_error(L_, "malformed pattern (ends with '%%')");
      return p + 2;
    }
    if (*p == '[') {
      ++p;
      if (p < p_end_ && *p == '^') ++p;
      do {  // the first ']' of a set is a member, not its end
        if (p == p_end_) luaL_error(L_, "malformed pattern (missing ']')");
        const char c = *p++;
        if (c == '%') {
          if (p == p_end_) luaL_error(L_, "malformed pattern (missing ']')");
          ++p;
        }
      } while (p == p_end_ || *p != ']');
      return p + 1;
    }
    return p + 1;
  }

  static bool matchClass(unsigned char c, unsigned char cl) {
    bool result = false;
    switch (std::tolower(cl)) {
      case 'a': result = std::isalpha(c); break;
      case 'c': result = std::iscntrl(c); break;
      case 'd': result = std::isdigit(c); break;
      case 'l': result = std::islower(c); break;
      case 'p': result = std::ispunct(c); break;
      case 's': result = std::isspace(c); break;
      case 'u': result = std::isupper(c); break;
      case 'w': result = std::isalnum(c); break;
      case 'x': result = std::isxdigit(c); break;
      case 'z': result = c == 0; break;
      default: return cl == c;
    }
    return std::isupper(cl) ? !result : result;
  }

  // Whether c is in the set [p, set_end] (p at '[', set_end at its ']').
  static bool matchBracket(unsigned char c, const char* p, const char* set_end) {
    bool member = true;
    if (p[1] == '^') {
      member = false;
      ++p;
    }
    while (++p < set_end) {
      if (*p == '%') {
        ++p;
        if (matchClass(c, byteAt(p))) return member;
      } else if (p[1] == '-' && p + 2 < set_end) {
        if (byteAt(p) <= c && c <= byteAt(p + 2)) return member;
        p += 2;
      } else if (byteAt(p) == c) {
        return member;
      }
    }
    return !member;
  }

  bool singleMatch(const char* s, const char* p, const char* class_end) const {
    if (s >= src_end_) return false;
    const unsigned char c = byteAt(s);
    switch (*p) {
      case '.': return true;
      case '%': return matchClass(c, byteAt(p + 1));
      case '[': return matchBracket(c, p, class_end - 1);
      default: return byteAt(p) == c;
    }
  }

  const char* matchBalance(const char* s, const char* p) {
    if (p + 1 >= p_end_) luaL_error(L_, "missing arguments to '%%b'");
    if (s >= src_end_ || *s != *p) return nullptr;
    const char open = p[0];
    const char close = p[1];
    int depth = 1;
    while (++s < src_end_) {
      step();
      if (*s == close) {
        if (--depth == 0) return s + 1;
      } else if (*s == open) {
        ++depth;
      }
    }
    return nullptr;
  }

  const char* maxExpand(const char* s, const char* p, const char* class_end) {
    ptrdiff_t n = 0;
    while (singleMatch(s + n, p, class_end)) {
      ++n;
      step();
    }
    for (; n >= 0; --n) {  // the longest run first, then shorter ones
      if (const char* r = match(s + n, class_end + 1)) return r;
    }
    return nullptr;
  }

  const char* minExpand(const char* s, const char* p, const char* class_end) {
    for (;;) {
      if (const char* r = match(s, class_end + 1)) return r;
      if (!singleMatch(s, p, class_end)) return nullptr;
      ++s;
    }
  }

  const char* startCapture(const char* s, const char* p, ptrdiff_t what) {
    if (level_ >= kMaxCaptures) luaL_error(L_, "too many captures (at most %d)", kMaxCaptures);
    captures_[level_] = {s, what};
    ++level_;
    const char* r = match(s, p);
    if (!r) --level_;
    return r;
  }

  const char* endCapture(const char* s, const char* p) {
    int open = level_ - 1;
    while (open >= 0 && captures_[open].len != kCaptureOpen) --open;
    if (open < 0) luaL_error(L_, "invalid pattern capture");
    captures_[open].len = s - captures_[open].init;
    const char* r = match(s, p);
    if (!r) captures_[open].len = kCaptureOpen;
    return r;
  }

  const char* matchBackReference(const char* s, char digit) {
    const int i = digit - '1';
    if (i < 0 || i >= level_ || captures_[i].len == kCaptureOpen) {
      luaL_error(L_, "invalid capture index %%%d", i + 1);
    }
    const ptrdiff_t len = captures_[i].len;
    if (len < 0) return nullptr;  // a position capture matches no text
    step(static_cast<uint32_t>(len / 16));
    if (src_end_ - s >= len && std::memcmp(captures_[i].init, s, static_cast<size_t>(len)) == 0) return s + len;
    return nullptr;
  }

  struct Capture {
    const char* init;
    ptrdiff_t len;
  };

  lua_State* L_;
  LuaState& state_;
  const char* src_;
  const char* src_end_;
  const char* p_end_;
  int level_ = 0;
  int depth_ = 0;
  uint32_t steps_ = 0;
  Capture captures_[kMaxCaptures];
};

bool hasSpecials(const char* p, size_t len) {
  for (size_t i = 0; i < len; ++i) {
    if (std::strchr(kSpecials, p[i]) && p[i] != '\0') return true;
  }
  return false;
}

// Lua 5.1's start position: negative counts from the end; clamped to [0, len].
size_t startOffset(lua_State* L, int arg, size_t len) {
  lua_Integer init = luaL_optinteger(L, arg, 1);
  if (init < 0) init += static_cast<lua_Integer>(len) + 1;
  if (init < 1) init = 1;
  return init - 1 > static_cast<lua_Integer>(len) ? len : static_cast<size_t>(init - 1);
}

int findOrMatch(lua_State* L, bool find) {
  size_t len = 0;
  size_t pattern_len = 0;
  const char* s = luaL_checklstring(L, 1, &len);
  const char* p = luaL_checklstring(L, 2, &pattern_len);
  const size_t init = startOffset(L, 3, len);
  if (find && (lua_toboolean(L, 4) || !hasSpecials(p, pattern_len))) {
    const void* at = memmem(s + init, len - init, p, pattern_len);
    if (len - init >= kPlainBytesPerCheck) LuaState::from(L).checkLimits(L);
    if (!at) {
      lua_pushnil(L);
      return 1;
    }
    const size_t start = static_cast<size_t>(static_cast<const char*>(at) - s);
    lua_pushnumber(L, static_cast<lua_Number>(start + 1));
    lua_pushnumber(L, static_cast<lua_Number>(start + pattern_len));
    return 2;
  }
  const bool anchored = pattern_len > 0 && *p == '^';
  if (anchored) {
    ++p;
    --pattern_len;
  }
  Matcher matcher(L, s, len, p, pattern_len);
  const char* from = s + init;
  do {
    if (const char* e = matcher.matchAt(from, p)) {
      if (!find) return matcher.pushCaptures(from, e);
      lua_pushnumber(L, static_cast<lua_Number>(from - s + 1));
      lua_pushnumber(L, static_cast<lua_Number>(e - s));
      return matcher.pushCaptures(nullptr, nullptr) + 2;
    }
    matcher.step();
  } while (from++ < matcher.subjectEnd() && !anchored);
  lua_pushnil(L);
  return 1;
}

// gmatch's iterator. Upvalues: subject, pattern, the offset to go on from.
int gmatchStep(lua_State* L) {
  size_t len = 0;
  size_t pattern_len = 0;
  const char* s = lua_tolstring(L, lua_upvalueindex(1), &len);
  const char* p = lua_tolstring(L, lua_upvalueindex(2), &pattern_len);
  Matcher matcher(L, s, len, p, pattern_len);
  for (const char* from = s + static_cast<size_t>(lua_tointeger(L, lua_upvalueindex(3))); from <= s + len; ++from) {
    if (const char* e = matcher.matchAt(from, p)) {
      const lua_Integer next = (e - s) + (e == from ? 1 : 0);  // an empty match moves on by one
      lua_pushinteger(L, next);
      lua_replace(L, lua_upvalueindex(3));
      return matcher.pushCaptures(from, e);
    }
    matcher.step();
  }
  return 0;
}

// Appends the replacement of the match [s, e) to `buffer`.
void addReplacement(lua_State* L, Matcher& matcher, luaL_Buffer* buffer, const char* s, const char* e) {
  switch (lua_type(L, 3)) {
    case LUA_TFUNCTION: {
      lua_pushvalue(L, 3);
      const int n = matcher.pushCaptures(s, e);
      lua_call(L, n, 1);
      break;
    }
    case LUA_TTABLE:
      matcher.pushCapture(0, s, e);
      lua_gettable(L, 3);
      break;
    default: {  // a string (or a number): %0 is the match, %1-%9 the captures
      size_t len = 0;
      const char* replacement = lua_tolstring(L, 3, &len);
      for (size_t i = 0; i < len; ++i) {
        if (replacement[i] != '%' || i + 1 == len) {
          luaL_addchar(buffer, replacement[i]);
        } else if (!std::isdigit(byteAt(replacement + ++i))) {
          luaL_addchar(buffer, replacement[i]);
        } else if (replacement[i] == '0') {
          luaL_addlstring(buffer, s, static_cast<size_t>(e - s));
        } else {
          matcher.pushCapture(replacement[i] - '1', s, e);
          luaL_addvalue(buffer);
        }
      }
      return;
    }
  }
  if (!lua_toboolean(L, -1)) {  // nil or false: keep the match
    lua_pop(L, 1);
    lua_pushlstring(L, s, static_cast<size_t>(e - s));
  } else if (!lua_isstring(L, -1)) {
    luaL_error(L, "invalid replacement value (a %s)", luaL_typename(L, -1));
  }
  luaL_addvalue(buffer);
}

int gsub(lua_State* L) {
  size_t len = 0;
  size_t pattern_len = 0;
  const char* src = luaL_checklstring(L, 1, &len);
  const char* p = luaL_checklstring(L, 2, &pattern_len);
  const int replacement_type = lua_type(L, 3);
  luaL_argcheck(L,
                replacement_type == LUA_TNUMBER || replacement_type == LUA_TSTRING ||
                    replacement_type == LUA_TFUNCTION || replacement_type == LUA_TTABLE,
                3, "string/function/table expected");
  const lua_Integer max_replacements = luaL_optinteger(L, 4, static_cast<lua_Integer>(len) + 1);
  const bool anchored = pattern_len > 0 && *p == '^';
  if (anchored) {
    ++p;
    --pattern_len;
  }
  LuaState::CallDepth depth(L);  // a function or table replacement calls back into Lua
  Matcher matcher(L, src, len, p, pattern_len);
  luaL_Buffer buffer;
  luaL_buffinit(L, &buffer);
  lua_Integer n = 0;
  while (n < max_replacements) {
    const char* e = matcher.matchAt(src, p);
    if (e) {
      ++n;
      addReplacement(L, matcher, &buffer, src, e);
    }
    if (e && e > src) {
      src = e;
    } else if (src < matcher.subjectEnd()) {
      luaL_addchar(&buffer, *src++);
    } else {
      break;
    }
    if (anchored) break;
    matcher.step();
  }
  luaL_addlstring(&buffer, src, static_cast<size_t>(matcher.subjectEnd() - src));
  luaL_pushresult(&buffer);
  lua_pushinteger(L, n);
  return 2;
}

}  // namespace

int stringFind(lua_State* L) { return findOrMatch(L, true); }

int stringRep(lua_State* L) {
  size_t length = 0;
  size_t separator = 0;
  luaL_checklstring(L, 1, &length);
  const lua_Number count = luaL_checknumber(L, 2);
  if (!lua_isnoneornil(L, 3)) luaL_checklstring(L, 3, &separator);
  if (count >= 1) {
    LuaState::from(L).reserveResult(L, static_cast<double>(length) * count + static_cast<double>(separator) * (count - 1));
  }
  return callingBack(L);
}

int stringMatch(lua_State* L) { return findOrMatch(L, false); }

int stringGmatch(lua_State* L) {
  luaL_checkstring(L, 1);
  luaL_checkstring(L, 2);
  lua_settop(L, 2);
  lua_pushinteger(L, 0);
  lua_pushcclosure(L, guarded<gmatchStep>, 3);
  return 1;
}

int stringGsub(lua_State* L) { return gsub(L); }

}  // namespace tide::lua
