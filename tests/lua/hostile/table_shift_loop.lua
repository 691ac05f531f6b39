-- expect: timeout: deadline of
-- Each insert and remove at the front shifts half a million slots in C: a few VM
-- instructions per call, milliseconds of work.
return function()
  local t = {}
  for i = 1, 500000 do t[i] = i end
  while true do
    table.insert(t, 1, 0)
    table.remove(t, 1)
  end
end
