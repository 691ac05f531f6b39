-- expect: memory: memory limit of
-- Strings too big to make: a plain error first, then the memory limit, which pcall cannot
-- catch. Were it caught, the doubling would end at the limit all the same.
return function()
  pcall(string.rep, "x", 2 ^ 31)
  pcall(string.rep, "x", 2 ^ 30)
  local s = "x"
  while true do s = s .. s end
end
