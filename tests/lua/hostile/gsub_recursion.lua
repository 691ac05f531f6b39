-- expect: runtime: C stack depth
-- gsub calling back into a function that calls gsub: unbounded C recursion in stock LuaJIT
-- (a SIGSEGV), a typed error here, even when the first one is caught.
local function r() return (string.gsub("a", "a", r)) end
return function()
  pcall(r)
  r()
end
