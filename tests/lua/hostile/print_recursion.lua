-- expect: runtime: C stack depth
-- print calls tostring, whose __tostring prints the same value.
local t = {}
setmetatable(t, { __tostring = function(self) print(self) return "t" end })
return function()
  print(t)
end
