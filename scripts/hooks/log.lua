-- Every event the host tells hooks about, one line each in the host log: what happened,
-- to what, in a compact table. A starting point for hooks of your own, and a way to watch
-- a rollout from the log. It never holds anything back: it fails open, so an error while it
-- logs lets the operation run.

local function summary(event, arg)
  if event == "operation.before" or event == "operation.after" then
    return { id = arg.id, type = arg.type, state = arg.state, instance = arg.meta_instance,
             plan = arg.plan, attempt = arg.attempt, message = arg.message }
  elseif event == "instance.state" then
    return { id = arg.id, instance = arg.meta_instance, node = arg.node, from = arg.from, to = arg.state }
  elseif event == "deployment.state" then
    return { plan = arg.plan, deployment = arg.deployment, from = arg.from, to = arg.state,
             message = arg.message }
  end
  return { plan = arg.plan, deployment = arg.deployment, previous = arg.previous,
           new = arg.new, old = arg.old }
end

local function logged(event)
  return function(arg, ctx)
    ctx.log.info(event, summary(event, arg))
  end
end

return {
  name = "log",
  description = "Logs every hook event with a compact summary.",
  fail_open = true,
  on = {
    ["operation.before"] = logged("operation.before"),
    ["operation.after"] = logged("operation.after"),
    ["instance.state"] = logged("instance.state"),
    ["deployment.state"] = logged("deployment.state"),
    route = logged("route"),
  },
}
