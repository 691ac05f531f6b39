-- expect: (timeout|memory)
-- Quadratic copying: every step copies the whole string, in C.
return function()
  local s = ""
  for i = 1, 1e9 do s = s .. string.rep("x", 1000) end
end
