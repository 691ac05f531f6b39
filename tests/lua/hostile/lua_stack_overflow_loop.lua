-- expect: timeout: deadline of
-- Lua recursion overflows LuaJIT's Lua stack (a plain, catchable error) again and again.
local function deep(n) return 1 + deep(n + 1) end
return function()
  while true do pcall(deep, 1) end
end
