-- expect: (memory|timeout)
-- A table growing without end; pcall cannot catch the memory limit. Filling 16 MiB with
-- small tables takes about as long as the test's deadline on a busy machine, so either
-- limit may come first.
return function()
  while true do
    pcall(function()
      local t = {}
      for i = 1, 1e9 do t[i] = { i } end
    end)
  end
end
