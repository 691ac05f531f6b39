-- expect: timeout: deadline of
-- One call with cubic backtracking over 100,000 bytes: minutes in an uninterruptible matcher.
local s = string.rep("a", 100000)
return function()
  return s:match(".-.-.-b"), s:gsub("a-a-a-b", "x"), s:gmatch(".*.*b")()
end
