-- expect: runtime: table.concat joins at most 1000000 items
-- One join runs in C, where the deadline cannot stop it: its size is bounded instead.
return function()
  local t = {}
  for i = 1, 1000001 do t[i] = 1 end
  return table.concat(t)
end
