-- expect: runtime: pattern too complex
-- A pattern of 100,000 optional items would recurse 100,000 C frames deep.
local p = string.rep("a?", 50000)
return function()
  return string.match(string.rep("a", 50000), p)
end
