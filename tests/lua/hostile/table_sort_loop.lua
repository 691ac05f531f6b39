-- expect: timeout: deadline of
-- Sorts half a million numbers again and again: LuaJIT's own comparison runs in C, where
-- no count hook reaches it.
return function()
  local t = {}
  for i = 1, 500000 do t[i] = (i * 7919) % 500009 end
  while true do table.sort(t) end
end
