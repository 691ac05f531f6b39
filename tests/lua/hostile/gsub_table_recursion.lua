-- expect: runtime: C stack depth
-- gsub with a table whose __index calls gsub with the same table.
local t = {}
setmetatable(t, { __index = function(_, k) return (string.gsub(k, ".", t)) end })
return function()
  return string.gsub("a", ".", t)
end
