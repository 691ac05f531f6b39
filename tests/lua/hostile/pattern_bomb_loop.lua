-- expect: timeout: deadline of
-- Each find backtracks over 10,000 bytes at every start: about 0.3 s in LuaJIT's own matcher.
local s = string.rep("a", 10000)
return function()
  while true do s:find("a*b") end
end
