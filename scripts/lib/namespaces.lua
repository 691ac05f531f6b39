-- Which namespaces are for development and which are production, decided in one place so
-- every policy draws the line the same way.
--
--   tide.lib.namespaces.is_dev("dev-web")    --> true   (dev, dev-*, test, test-*, *-dev, *-test)
--   tide.lib.namespaces.is_prod("prod-web")  --> true   (prod, prod-*, *-prod)

local dev_patterns = { "^dev$", "^dev%-", "^test$", "^test%-", "%-dev$", "%-test$" }
local prod_patterns = { "^prod$", "^prod%-", "%-prod$" }

local function matches_any(namespace, patterns)
  for _, pattern in ipairs(patterns) do
    if string.match(namespace or "", pattern) then
      return true
    end
  end
  return false
end

return {
  is_dev = function(namespace) return matches_any(namespace, dev_patterns) end,
  is_prod = function(namespace) return matches_any(namespace, prod_patterns) end,
}
