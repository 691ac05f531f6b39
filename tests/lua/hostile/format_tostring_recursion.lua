-- expect: runtime: C stack depth
-- string.format("%s") calls __tostring from C, which formats itself again.
local t = setmetatable({}, { __tostring = function(self) return string.format("%s", self) end })
return function()
  return string.format("%s", t)
end
