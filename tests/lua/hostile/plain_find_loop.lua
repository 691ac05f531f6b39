-- expect: timeout: deadline of
-- A plain search through 4 MiB that never matches, in a loop: one VM instruction, a
-- millisecond of memchr.
local s = string.rep("a", 4 * 1024 * 1024)
return function()
  while true do s:find("b", 1, true) end
end
