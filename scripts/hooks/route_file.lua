-- Publishes each plan's traffic split where a load balancer (or a person) can read it:
-- <data_dir>/hooks/route-<plan>.json, replaced atomically on every route(...) a strategy
-- returns, e.g.
--   {"deployment":"v2","previous":"v1","new":10,"old":90}
-- `previous` is null on a plan's first deployment.

local function json_string(s)
  local escaped = s:gsub('[%c"\\]', function(c)
    if c == '"' then return '\\"' end
    if c == "\\" then return "\\\\" end
    return string.format("\\u%04x", c:byte())
  end)
  return '"' .. escaped .. '"'
end

local function json_value(v)
  if v == nil then return "null" end
  if type(v) == "number" then
    if v == math.floor(v) and math.abs(v) < 2^53 then return string.format("%d", v) end
    return string.format("%.17g", v)
  end
  return json_string(tostring(v))
end

return {
  name = "route-file",
  description = "Writes route-<plan>.json with the latest weights of each plan.",
  on = {
    route = function(w, ctx)
      local fields = {
        '"deployment":' .. json_value(w.deployment),
        '"previous":' .. json_value(w.previous),
        '"new":' .. json_value(w.new),
        '"old":' .. json_value(w.old),
      }
      ctx.emit_file("route-" .. w.plan .. ".json", "{" .. table.concat(fields, ",") .. "}\n")
    end,
  },
}
