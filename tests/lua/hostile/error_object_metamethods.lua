-- expect: runtime: error object is a table
-- An error object whose metamethods loop: the host must not call them to report it.
local spin = function() while true do end end
return function()
  error(setmetatable({}, {
    __tostring = spin, __index = spin, __newindex = spin, __concat = spin, __eq = spin,
    __lt = spin, __le = spin, __call = spin, __len = spin, __unm = spin, __gc = spin,
  }))
end
