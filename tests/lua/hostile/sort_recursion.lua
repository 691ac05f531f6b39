-- expect: runtime: C stack depth
-- table.sort's comparator sorting again, from inside C each time.
local function again(a, b)
  table.sort({ 3, 2, 1 }, again)
  return a < b
end
return function()
  table.sort({ 3, 2, 1 }, again)
end
