-- expect: memory: memory limit of
-- A count LuaJIT takes as a 32-bit integer wraps to a negative one, and string.rep would
-- return "" as if nothing were wrong: the script must learn it asked for 2 GiB.
return function()
  local s = string.rep("x", 2 ^ 31)
  return #s
end
