-- expect: timeout: deadline of
-- Calls into the host in a loop (ctx queries, file writes): their time counts.
return function(ctx)
  local work = function() end
  if ctx and ctx.count then
    work = function() ctx.count({}) ctx.instances("web") ctx.node("n1") end
  elseif ctx and ctx.emit_file then
    local text = string.rep("x", 1024 * 1024)
    work = function() ctx.emit_file("hostile.txt", text) end
  end
  while true do
    work()
    if ctx then ctx.now() end
  end
end
