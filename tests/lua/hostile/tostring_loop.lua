-- expect: timeout: deadline of
-- tostring tail-calls __tostring, so this recursion is an endless loop rather than a deep one.
local t = setmetatable({}, { __tostring = function(self) return tostring(self) end })
return function()
  return tostring(t)
end
